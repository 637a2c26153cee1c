"""One sub-agent: its own agent loop, what it is doing, and how its run ended.

The loop is the engine's `Agent` with a history of its own (its own compaction) written to
its own transcript beside the session's; it works under the same permission policy and asks
the same approver as the main agent, its requests labelled with its name and task.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from ..engine.loop import Agent
from ..events import (
    AgentEvent,
    AgentFinished,
    AssistantMessage,
    Error,
    Event,
    Notice,
    ReasoningDelta,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnEnd,
    Usage,
)
from ..session.transcript import Session
from ..tasks.model import AgentRef
from .definitions import AgentType
from .state import AgentRow, Phase

TASK_TOOL_NAMES = frozenset({"TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TodoWrite"})

log = logging.getLogger(__name__)

Show = Callable[[Event], None]


@dataclass
class Child:
    id: str
    ref: AgentRef
    kind: AgentType
    description: str
    brief: str
    call_id: str
    task_id: str | None
    transcript: Session
    agent: Agent | None = None
    phase: Phase = "waiting"
    activity: str = "waiting for a free slot"
    started: float = 0.0
    """Wall-clock start (the panel's clock); 0 until it runs."""
    elapsed: float = 0.0
    tokens: int = 0
    turns: int = 0
    tools: int = 0
    work_tools: int = 0
    """Its tool calls other than the task tools: the evidence that it did something."""
    last_text: str = ""
    error: str = ""
    stop_note: str = ""
    """What its loop said when it stopped it (which request budget ran out, the guard)."""
    end: TurnEnd | None = None
    stopped: str = ""
    """Why it was stopped (the person's `x`, an interrupt); empty when it was not."""
    status: str = ""
    result: AgentFinished | None = None
    """How it ended, once it has."""
    runner: asyncio.Future[Any] | None = field(default=None, repr=False)
    """The task that runs its whole life (waiting, hooks, turn, settling)."""
    _clock: float = field(default=0.0, repr=False)

    @property
    def label(self) -> str:
        """How approvals and the conversation name it: `explore-2 · #3 Write the tests`."""
        return f"{self.id} · " + (f"#{self.task_id} {self.description}" if self.task_id else self.description)

    def row(self, now: float) -> AgentRow:
        elapsed = self.elapsed if self.phase == "done" else (now - self.started if self.started else 0.0)
        return AgentRow(
            self.id, self.task_id, self.phase, self.activity, self.started, elapsed, self.tokens, self.status
        )

    def stop(self, why: str) -> None:
        """Stop it however far it got: waiting for a slot, starting, or running (its
        command is killed, its history stays valid)."""
        if self.stopped or self.phase == "done":
            return
        self.stopped = why
        if self.agent is not None and self.agent.busy:
            self.agent.interrupt()
        elif self.runner is not None and self.phase == "waiting":
            self.runner.cancel()

    def begin(self, agent: Agent) -> None:
        self.agent = agent
        self.phase, self.activity = "running", "starting"
        self.started, self._clock = time.time(), time.monotonic()

    async def run(self, show: Show) -> None:
        """Its turn, to its end; every event is shown (wrapped with its name) as it comes."""
        agent = self.agent
        assert agent is not None
        if self.stopped:
            return
        try:
            async with aclosing(agent.run_turn(self.brief)) as events:
                async for event in events:
                    self.observe(event)
                    show(AgentEvent(self.id, self.call_id, event))
        except Exception as exc:  # an engine bug must end this sub-agent, not the main agent's turn
            log.exception("sub-agent %s crashed", self.id)
            self.error = f"it crashed ({type(exc).__name__}: {exc})"

    def observe(self, event: Event) -> None:
        match event:
            case TextDelta():
                self.activity = "writing"
            case ReasoningDelta():
                self.activity = "reasoning"
            case ToolStarted(name=name, summary=summary):
                self.activity = f"{name} {summary}".strip()
            case ToolFinished(name=name):
                self.tools += 1
                self.work_tools += name not in TASK_TOOL_NAMES
                self.activity = "thinking"
            case Usage(prompt_tokens=prompt, completion_tokens=completion):
                self.tokens += prompt + completion
                self.turns += 1
            case AssistantMessage(content=content) if content.strip():
                self.last_text = content
            case Error(message=message):
                self.error = message
            case Notice(text=text, level="warning") if text.startswith("stopped"):
                self.stop_note = text
            case TurnEnd():
                self.end = event

    def requests_made(self) -> int:
        """Model requests it made, answered or not (its loop's budget counts every one)."""
        spent = self.agent.requests if self.agent is not None else None
        return spent.used if spent is not None else self.turns

    def finish(self, status: str) -> float:
        """It ended as `status`; returns the seconds it ran."""
        self.phase, self.status, self.activity = "done", status, status
        self.elapsed = time.monotonic() - self._clock if self._clock else 0.0
        return self.elapsed
