"""The approval broker: one question at a time, answered through a Future."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.tui.approvals import NO_UI, ApprovalBroker, Resolve


def request(command: str) -> ApprovalRequest:
    return ApprovalRequest("Bash", {"command": command}, command, command, "command", False, "Bash(x:*)", "asks")


class FakePresenter:
    """Shows requests by remembering them; the test answers through `resolvers`."""

    def __init__(self) -> None:
        self.shown: list[tuple[str, int]] = []
        self.resolvers: list[Resolve] = []
        self.closed: list[str] = []

    def __call__(self, req: ApprovalRequest, resolve: Resolve, queued: int) -> Callable[[], None]:
        self.shown.append((req.summary, queued))
        self.resolvers.append(resolve)
        return lambda: self.closed.append(req.summary)


async def test_requests_are_asked_one_at_a_time_in_order() -> None:
    broker, presenter = ApprovalBroker(), FakePresenter()
    broker.attach(presenter)
    first = asyncio.create_task(broker.approve(request("one")))
    second = asyncio.create_task(broker.approve(request("two")))
    await asyncio.sleep(0)
    assert presenter.shown == [("one", 0)]  # the second waits its turn
    presenter.resolvers[0](ApprovalAnswer("yes"))
    presenter.resolvers[0](ApprovalAnswer("no"))  # a late second answer is ignored
    assert await first == ApprovalAnswer("yes")
    await asyncio.sleep(0)
    assert presenter.shown == [("one", 0), ("two", 0)]
    presenter.resolvers[1](ApprovalAnswer("feedback", "use ls"))
    assert await second == ApprovalAnswer("feedback", "use ls")
    assert broker.waiting == 0 and presenter.closed == []


async def test_a_dismissed_modal_without_an_answer_means_no() -> None:
    broker, presenter = ApprovalBroker(), FakePresenter()
    broker.attach(presenter)
    pending = asyncio.create_task(broker.approve(request("one")))
    await asyncio.sleep(0)
    presenter.resolvers[0](None)
    assert await pending == NO_UI


async def test_a_cancelled_turn_closes_its_modal() -> None:
    broker, presenter = ApprovalBroker(), FakePresenter()
    broker.attach(presenter)
    pending = asyncio.create_task(broker.approve(request("one")))
    await asyncio.sleep(0)
    pending.cancel()
    await asyncio.gather(pending, return_exceptions=True)
    assert presenter.closed == ["one"] and broker.waiting == 0


async def test_without_a_screen_the_answer_is_no() -> None:
    assert await ApprovalBroker().approve(request("one")) == NO_UI
