"""Sub-agents on screen: each one's own transcript, recorded as it happens, and the live
line under its `Agent` call.

A sub-agent's events arrive wrapped (`AgentEvent`) in the main turn's stream. Each is fed
to that sub-agent's own `EventHandler`, whose UI is an `AgentTranscript`: it keeps the
entries (and the text streaming now) and, while the person looks at that sub-agent (`o` in
the task panel), draws them into the conversation view it is attached to, live. A task's
changes inside a sub-agent's turn still redraw the one task panel. Nothing here imports
the agent core: the lines come from the rows the runtime gives (`core/agents/state.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from todo_agent.core.agents.state import AgentRow
from todo_agent.core.events import (
    AgentEvent,
    AgentFinished,
    AgentStarted,
    GoalProgress,
    ReasoningDelta,
    TasksUpdated,
    TextDelta,
    Usage,
)
from todo_agent.core.tasks.model import Task

from .handler import EventHandler
from .transcript import AssistantEntry, Entry, NoticeEntry, ThoughtEntry, ToolEntry, ToolStatus, UserEntry
from .widgets.conversation import Conversation
from .widgets.status import format_seconds


def agent_line(row: AgentRow) -> str:
    """`general-1 · Edit posts.py · 12s · 3.4k tok`: the live line of a running sub-agent."""
    if row.phase == "waiting":
        return f"{row.agent_id} · waiting for a free slot"
    parts = [row.agent_id, row.activity]
    if row.started:
        parts.append(format_seconds(row.elapsed))
    if row.tokens:
        parts.append(f"{tokens(row.tokens)} tok")
    return " · ".join(p for p in parts if p)


def tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


class AgentTranscript:
    """One sub-agent's conversation: a `ConversationUI` that records, and draws while attached."""

    def __init__(self, agent_id: str, prompt: str = "") -> None:
        self.agent_id = agent_id
        self.entries: list[Entry] = [UserEntry(prompt)] if prompt else []
        self.streaming: list[str] = []
        self.thought: ThoughtEntry | None = None
        """Its reasoning streaming now (in `entries` too)."""
        self.view: Conversation | None = None
        self.handler = EventHandler(self)

    async def attach(self, view: Conversation) -> None:
        """Show it in `view` from now on: everything so far, then each event as it comes."""
        self.view = view
        await view.load([e for e in self.entries if e is not self.thought])
        if self.thought is not None:
            await view.write_thought(self.thought.text)
        if self.streaming:
            await view.write_live("".join(self.streaming))

    def detach(self) -> None:
        self.view = None

    # --- ConversationUI ---------------------------------------------------------------

    async def stream_text(self, text: str) -> None:
        self.streaming.append(text)
        if self.view is not None:
            await self.view.write_live(text)

    async def finish_message(self, text: str | None) -> None:
        final = "".join(self.streaming) if text is None else text
        self.streaming = []
        if final.strip():
            self.entries.append(AssistantEntry(final))
        if self.view is not None:
            await self.view.finish_live(final)

    async def discard_message(self) -> None:
        self.streaming = []
        if self.thought is not None:
            self.entries.remove(self.thought)
            self.thought = None
        if self.view is not None:
            await self.view.drop_thought()
            await self.view.stop_live()

    async def stream_reasoning(self, text: str) -> None:
        if self.thought is None:
            self.thought = ThoughtEntry("", streaming=True)
            self.entries.append(self.thought)
        self.thought.text += text
        if self.view is not None:
            await self.view.write_thought(text)

    async def finish_reasoning(self, seconds: float) -> None:
        thought, self.thought = self.thought, None
        if thought is not None:
            thought.streaming, thought.seconds = False, seconds
            if not thought.text.strip():
                self.entries.remove(thought)
        if self.view is not None:
            await self.view.finish_thought(seconds)

    async def add_entry(self, entry: Entry) -> None:
        self.entries.append(entry)
        if self.view is not None:
            await self.view.add(entry)

    async def finish_tool(self, call_id: str, name: str, output: str, status: ToolStatus, elapsed: float) -> None:
        found = next((e for e in self.entries if isinstance(e, ToolEntry) and e.call_id == call_id), None)
        if found is None:
            await self.add_entry(ToolEntry(call_id, name, "", status, output, elapsed))
            return
        found.status, found.output, found.elapsed = status, output, elapsed
        if self.view is not None:
            await self.view.finish_tool(call_id, name, output, status, elapsed)

    def tool_progress(self, call_id: str, text: str) -> None:
        found = next((e for e in self.entries if isinstance(e, ToolEntry) and e.call_id == call_id), None)
        if found is not None and found.status == "running":
            found.progress = text
            if self.view is not None:
                self.view.set_progress(call_id, text)

    async def show_tasks(self, tasks: Sequence[Task]) -> None:
        pass  # the one task panel draws the plan (`AgentViews.record`)

    def show_usage(self, usage: Usage) -> None:
        pass  # its tokens are on its line and its task's row, not the main context gauge

    def set_activity(self, text: str, *, timed: bool = False) -> None:
        pass

    def turn_ended(self, reason: str) -> None:
        pass

    def show_goal(self, progress: GoalProgress) -> None:
        pass  # a goal is the main agent's

    def count_down(self, say: Callable[[float], str], seconds: float) -> None:
        pass  # its retry is a notice in its transcript; the status line counts the main agent's waits

    async def agent_update(self, event: AgentStarted | AgentEvent | AgentFinished) -> None:
        pass  # a sub-agent starts none


class Plan(Protocol):
    """What the views need of the screen: the plan redrawn when a sub-agent changed it."""

    async def show_tasks(self, tasks: Sequence[Task]) -> None: ...


class AgentViews:
    """Every sub-agent's transcript of this session (of this run), by name."""

    def __init__(self) -> None:
        self.transcripts: dict[str, AgentTranscript] = {}
        self.calls: dict[str, str] = {}
        """Agent name → the `Agent` call whose line it fills."""

    async def record(self, event: AgentStarted | AgentEvent | AgentFinished, plan: Plan) -> bool:
        """Take one event in; whether the lines and rows may have changed (not per token)."""
        if isinstance(event, AgentStarted):
            transcript = self.transcripts.setdefault(event.agent_id, AgentTranscript(event.agent_id))
            if event.prompt and not transcript.entries:
                await transcript.add_entry(UserEntry(event.prompt))
            self.calls[event.agent_id] = event.call_id
            return True
        if isinstance(event, AgentFinished):
            ended = self.transcripts.get(event.agent_id)
            if ended is not None:
                note = f"{event.agent_id} ended: {event.status} ({event.reason})"
                await ended.add_entry(NoticeEntry(note, "info" if event.status == "completed" else "warning"))
            return True
        inner = event.event
        transcript = self.transcripts.setdefault(event.agent_id, AgentTranscript(event.agent_id))
        await transcript.handler.handle(inner)
        if isinstance(inner, TasksUpdated):
            await plan.show_tasks(inner.tasks)
        return not isinstance(inner, TextDelta | ReasoningDelta)  # a line per piece would be a redraw per piece

    def lines(self, rows: Sequence[AgentRow]) -> dict[str, str]:
        """Call id → the live line under it, for every sub-agent still at work."""
        return {
            self.calls[row.agent_id]: agent_line(row)
            for row in rows
            if row.phase != "done" and row.agent_id in self.calls
        }

    def forget(self) -> None:
        """A new session: none of these are its sub-agents."""
        for transcript in self.transcripts.values():
            transcript.detach()
        self.transcripts.clear()
        self.calls.clear()
