"""Shared harness for the sub-agent tests: a runtime on a scripted model, its events, gates."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from todo_agent.core.events import AgentEvent, AgentFinished, Event, ToolFinished
from todo_agent.core.model.base import ChatModel, Message, StreamItem
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def agent(description: str, prompt: str, **more: Any) -> dict[str, Any]:
    return call("Agent", description=description, prompt=prompt, **more)


def runtime_for(workspace: Path, script: dict[str, Any], **config: Any) -> tuple[Runtime, ScriptedModel]:
    model = ScriptedModel.from_data(script)
    settings = Config(workspace=workspace, model="script:test", **config)
    return Runtime.create(settings, model=model), model


async def run(runtime: Runtime, prompt: str, seen: Callable[[Event], None] | None = None) -> list[Event]:
    """Every event of one turn (`seen` is told each as it comes)."""
    events: list[Event] = []
    async with aclosing(runtime.turn.run(prompt)) as stream:
        async for event in stream:
            events.append(event)
            if seen is not None:
                seen(event)
    return events


def inner(events: Sequence[Event], agent_id: str) -> list[Event]:
    return [e.event for e in events if isinstance(e, AgentEvent) and e.agent_id == agent_id]


def finished(events: Sequence[Event]) -> dict[str, AgentFinished]:
    return {e.agent_id: e for e in events if isinstance(e, AgentFinished)}


def results(events: Sequence[Event], tool: str = "Agent") -> list[ToolFinished]:
    return [e for e in events if isinstance(e, ToolFinished) and e.name == tool]


@dataclass
class Gated:
    """A model that waits on `gates[n]` before answering its request n (0-based)."""

    model: ChatModel | None
    """The wrapped model (set when the sub-agent is made)."""
    gates: dict[int, asyncio.Event] = field(default_factory=dict)
    asked: int = 0
    waiting: asyncio.Event = field(default_factory=asyncio.Event)
    """Set while it waits at a gate."""

    @property
    def name(self) -> str:
        return self.model.name if self.model is not None else "gated"

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        assert self.model is not None
        gate = self.gates.get(self.asked)
        self.asked += 1
        if gate is not None:
            self.waiting.set()
            await gate.wait()
            self.waiting.clear()
        async for item in self.model.stream(messages, tools, max_tokens=max_tokens):
            yield item


def gate_children(runtime: Runtime, gates: dict[str, dict[int, asyncio.Event]]) -> dict[str, Gated]:
    """Wrap the scripted model of each sub-agent whose description or brief contains a key of
    `gates` (ready before the sub-agent starts, so a test can wait on it)."""
    made = {key: Gated(None, steps) for key, steps in gates.items()}
    original = runtime.team_runner.parent.model_for

    def model_for(kind: Any, about: str) -> ChatModel:
        model = original(kind, about)
        for key, gated in made.items():
            if key in about and gated.model is None:
                gated.model = model
                return gated
        return model

    runtime.team_runner.parent.model_for = model_for
    return made
