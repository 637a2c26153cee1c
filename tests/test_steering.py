"""A word while it works (issue 32): a message sent mid-turn reaches the model with the
turn's next request, after the tool batch that was running, never between a call and its
result; a turn about to end goes on with it; hooks and `@` files apply; the app's
`alt+enter` sends it, `enter` still queues."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

from fake_openai import validate_request
from tui_helpers import main_screen, make_app, turn_done, wait_until

from todo_agent.core.events import Event, Steered, TurnEnd
from todo_agent.core.lifecycle import Verdict
from todo_agent.core.model.base import Message
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config
from todo_agent.tui.handler import STEERED_NOTE
from todo_agent.tui.transcript import NoticeEntry, UserEntry


class Steering:
    """The scripted model, with the person typing while request `at` is answered."""

    def __init__(self, steps: list[Any], say: Any, at: int = 1) -> None:
        self.inner = ScriptedModel.from_data(steps)
        self.name = self.inner.name
        self.say, self.at = say, at
        self.requests: list[list[Message]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def stream(self, messages: Sequence[Message], tools: Any, **kw: Any) -> AsyncIterator[Any]:
        self.requests.append([dict(m) for m in messages])
        if len(self.requests) == self.at:
            self.say()
        async for item in self.inner.stream(messages, tools, **kw):
            yield item


def runtime_for(workspace: Path, model: Any) -> Runtime:
    config = Config(workspace=workspace, model="script:t", permission_mode="bypassPermissions")
    return Runtime.create(config, model=model)


async def run(runtime: Runtime, prompt: str) -> list[Event]:
    async with aclosing(runtime.agent.run_turn(prompt)) as stream:
        return [e async for e in stream]


BASH_TWICE = {"tool_calls": [{"name": "Bash", "arguments": {"command": f"echo {x}"}} for x in "ab"]}


async def test_it_arrives_after_the_running_batch_and_the_history_stays_valid(workspace: Path) -> None:
    holder: dict[str, Runtime] = {}
    model = Steering([BASH_TWICE, "Checked the README too."], lambda: holder["r"].agent.steer("also check the README"))
    runtime = holder["r"] = runtime_for(workspace, model)

    events = await run(runtime, "run the checks")

    second = model.requests[1]
    assert [m["role"] for m in second[-4:]] == ["assistant", "tool", "tool", "user"]  # both results first
    assert second[-1]["content"] == "also check the README"
    assert validate_request({"model": "m", "messages": second}) == []
    steered = [e for e in events if isinstance(e, Steered)]
    assert steered == [Steered("also check the README")] and isinstance(events[-1], TurnEnd)
    assert runtime.turn.steering == []
    runtime.close()


async def test_a_turn_about_to_end_goes_on_with_it(workspace: Path) -> None:
    holder: dict[str, Runtime] = {}
    model = Steering(["All done.", "And the docs are fine."], lambda: holder["r"].agent.steer("what about the docs?"))
    runtime = holder["r"] = runtime_for(workspace, model)

    events = await run(runtime, "finish up")

    assert len(model.requests) == 2 and model.requests[1][-1] == {"role": "user", "content": "what about the docs?"}
    end = events[-1]
    assert isinstance(end, TurnEnd) and end.final_text == "And the docs are fine."
    runtime.close()


async def test_the_prompt_hook_may_block_it_and_at_files_are_attached(workspace: Path) -> None:
    (workspace / "notes.md").write_text("remember the changelog\n")
    holder: dict[str, Runtime] = {}

    def say() -> None:
        holder["r"].agent.steer("secret plan")
        holder["r"].agent.steer("read @notes.md")

    model = Steering([BASH_TWICE, "ok"], say)
    runtime = holder["r"] = runtime_for(workspace, model)

    async def gate(prompt: str) -> Verdict:
        return Verdict(block="no secrets") if "secret" in prompt else Verdict()

    runtime.agent.lifecycle.before_prompt.append(gate)
    events = await run(runtime, "go")

    contents = [str(m.get("content")) for m in model.requests[1] if m["role"] == "user"]
    assert not any("secret plan" in c for c in contents)
    assert "read @notes.md" in contents and any("remember the changelog" in c for c in contents)
    assert any(
        "message not sent: a UserPromptSubmit hook blocked it: no secrets" in getattr(e, "text", "") for e in events
    )
    runtime.close()


async def test_what_a_turn_ends_without_delivering_stays_for_the_next(workspace: Path) -> None:
    holder: dict[str, Runtime] = {}
    model = Steering([{"error": "server", "message": "bad request"}], lambda: holder["r"].agent.steer("later"))
    runtime = holder["r"] = runtime_for(workspace, model)
    await run(runtime, "go")
    assert runtime.turn.steering == ["later"]
    runtime.close()


async def test_alt_enter_sends_it_now_and_enter_queues(workspace: Path) -> None:
    """In the app: while a command runs, alt+enter's message reaches the model in that turn
    (marked as sent mid-turn); enter's waits for the turn to end."""
    (workspace / "go").write_text("")
    wait = {"tool_calls": [{"name": "Bash", "arguments": {"command": "while [ -e go ]; do sleep 0.05; done"}}]}
    app = make_app(workspace, [wait, "Saw both.", "Queued one answered."], permission_mode="bypassPermissions")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = main_screen(app)
        prompt = screen.query_one("#prompt")
        prompt.focus()
        prompt.text = "start"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.busy and screen.runtime.agent._batch is not None)
        prompt.text = "and this, now"  # type: ignore[attr-defined]
        await pilot.press("alt+enter")
        prompt.text = "and this after"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.runtime.turn.steering == ["and this, now"])
        (workspace / "go").unlink()
        await wait_until(
            pilot, lambda: any(getattr(e, "text", "") == "Queued one answered." for e in screen.conversation.entries)
        )
        await turn_done(pilot)
        entries = screen.conversation.entries
        now = next(i for i, e in enumerate(entries) if isinstance(e, UserEntry) and e.text == "and this, now")
        assert entries[now + 1] == NoticeEntry(STEERED_NOTE, "dim")
        texts = [getattr(e, "text", "") for e in entries]
        assert texts.index("Saw both.") < texts.index("and this after") < texts.index("Queued one answered.")
        history = screen.runtime.sessions.history
        assert [m["content"] for m in history if m["role"] == "user"][:3] == [
            "start",
            "and this, now",
            "and this after",
        ]


def test_esc_then_cr_is_alt_enter_where_the_terminal_has_no_kitty_protocol() -> None:
    """tmux and most xterms send alt+enter as ESC CR; Textual's own parser reads a plain
    enter there, which would send the message after the turn instead of now."""
    from todo_agent.tui.terminal_driver import _KeyParser

    def keys(data: str) -> list[str]:
        """What the parser makes of `data` once its wait for more of an escape sequence ends."""
        import time

        parser = _KeyParser()
        found = list(parser.feed(data))
        deadline = time.monotonic() + 5
        while not found and time.monotonic() < deadline:  # the driver's input thread ticks it the same way
            found = list(parser.tick())
        return [getattr(e, "key", "") for e in found]

    assert keys("\x1b\r") == ["alt+enter"]
    assert keys("\r") == ["enter"]
    assert keys("\x1bx") == ["alt+x"]  # other alt keys as Textual reads them
