"""Run an agent turn in its own task and hand its events over a queue (the TUI, the ACP agent).

`Agent.interrupt()` cancels the task that iterates the turn. Iterating in a task of our
own means that cancellation lands in the agent's awaits (where the agent turns it into
`TurnEnd("interrupted")`), never in the middle of a UI update in the worker.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass

from todo_agent.core.events import Event


@dataclass(frozen=True)
class _End:
    error: BaseException | None = None


async def turn_events(start: Callable[[], AsyncIterator[Event]]) -> AsyncIterator[Event]:
    """Yield the events of `start()` (e.g. `lambda: agent.run_turn(prompt)`), pumped in a task."""
    queue: asyncio.Queue[Event | _End] = asyncio.Queue()

    async def pump() -> None:
        end = _End()
        try:
            events = start()
            try:
                async for event in events:
                    queue.put_nowait(event)
            finally:
                if isinstance(events, AsyncGenerator):  # close it here, in the task that ran it
                    await events.aclose()
        except BaseException as exc:  # handed to the consumer, which raises it again
            end = _End(exc)
            raise
        finally:
            queue.put_nowait(end)

    task = asyncio.create_task(pump())
    try:
        while not isinstance(item := await queue.get(), _End):
            yield item
        if item.error is not None:
            raise item.error
    finally:
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
