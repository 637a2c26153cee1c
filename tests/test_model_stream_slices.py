"""A burst of streamed chunks is handed on in slices, with the event loop served between.

A fast local server writes a whole answer before the client reads it; the client then
parses chunk after chunk without ever waiting on the socket, and nothing else (keys,
the screen) runs until the burst is parsed. The clock is faked: parsing each chunk here
"takes" a millisecond.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from todo_agent.core import runtime
from todo_agent.core.model.base import Message, ModelResponse, StreamItem
from todo_agent.core.runtime import LazyModel
from todo_agent.core.settings import Config


class BurstModel:
    """Streams `chunks` chunks without waiting between them, as a client draining its buffer."""

    name = "burst"

    def __init__(self, chunks: int, clock: list[float]) -> None:
        self.chunks, self.clock = chunks, clock

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        for _ in range(self.chunks):
            self.clock[0] += 0.001  # parsing a chunk
            yield "x"
        yield ModelResponse(content="x" * self.chunks)


async def test_a_burst_of_chunks_lets_the_event_loop_run_every_few_milliseconds(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [0.0]
    monkeypatch.setattr(runtime, "time", SimpleNamespace(monotonic=lambda: clock[0]), raising=False)
    model = LazyModel(Config(workspace=workspace, model="burst"), BurstModel(2_000, clock))
    ticks: list[float] = []

    async def ticker() -> None:  # a key, a frame: anything else the loop should run
        while True:
            ticks.append(clock[0])
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    try:
        await asyncio.sleep(0)
        async for _ in model.stream([], []):
            pass
    finally:
        task.cancel()
    gaps = [later - earlier for earlier, later in itertools.pairwise(ticks)]
    assert clock[0] > 1.99 and len(ticks) > 100
    assert max(gaps) <= 0.010  # never more than a slice of parsing between two turns of the loop


async def test_between_slices_the_process_rests_when_nothing_else_waits(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each turn the loop gets is a short rest, not `sleep(0)`: with nothing else ready the
    loop waits in `select`, and the interpreter lock is free for the terminal's input and
    output threads (typed keys during a 1 MB burst waited up to 130 ms for it)."""
    clock = [0.0]
    monkeypatch.setattr(runtime, "time", SimpleNamespace(monotonic=lambda: clock[0]), raising=False)
    rests: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        rests.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(runtime.asyncio, "sleep", sleep)
    model = LazyModel(Config(workspace=workspace, model="burst"), BurstModel(100, clock))
    async for _ in model.stream([], []):
        pass
    assert len(rests) >= 10 and all(rest == runtime.STREAM_REST > 0 for rest in rests)
