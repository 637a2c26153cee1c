"""The one place core events become UI changes.

`EventHandler` knows the events; `ConversationUI` is the small set of operations it asks
the screen for. The main screen implements the protocol with real widgets; tests use a
recording fake, so every mapping here is checked without running an app.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from todo_agent.core.events import (
    AgentEvent,
    AgentFinished,
    AgentStarted,
    AssistantMessage,
    Attached,
    CommandExpanded,
    Compacted,
    Compacting,
    Error,
    Event,
    GoalProgress,
    HookResult,
    Notice,
    ReasoningDelta,
    Reminded,
    ResponseDiscarded,
    Retrying,
    Steered,
    TasksUpdated,
    TextDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEnd,
    Usage,
)
from todo_agent.core.tasks.model import Task

from .transcript import (
    Entry,
    FoldEntry,
    NoticeEntry,
    ReminderEntry,
    ToolEntry,
    ToolStatus,
    UserEntry,
    attachment_entry,
)

TURN_END_NOTICES: dict[str, NoticeEntry] = {
    # "interrupted", "max_turns", "length" and "loop" come with a notice from the core already.
    "rejected": NoticeEntry("Stopped: you declined the tool call. Tell todo-agent what to do instead.", "warning"),
}

_STREAM_EVENTS = (TextDelta, ReasoningDelta, Usage, AssistantMessage, ResponseDiscarded, GoalProgress)
"""Events that belong to a message being streamed (or, as a goal's standing after its
`Usage`, may come in the middle of one); anything else ends it first."""


LIVE_TAIL = 4096
"""Characters of a running command's output kept to find its latest line."""


def last_line(output: str, width: int = 200) -> str:
    """The latest line a command printed that has something on it, at most `width` characters."""
    line = next((line for line in reversed(output.replace("\r", "\n").split("\n")) if line.strip()), "")
    return line.strip()[:width]


class ConversationUI(Protocol):
    """What the handler may do to the screen."""

    async def stream_text(self, text: str) -> None:
        """Append to the live assistant message, starting one if needed."""

    async def finish_message(self, text: str | None) -> None:
        """Collapse the live message into a finished one holding `text` (None: what streamed)."""

    async def discard_message(self) -> None:
        """Drop the live message (and its thought): its response failed and will be retried."""

    async def stream_reasoning(self, text: str) -> None:
        """Append to the thought streaming now (open), starting one if needed."""

    async def finish_reasoning(self, seconds: float) -> None:
        """The answer or a call has begun: fold the thought, which took `seconds`."""

    async def add_entry(self, entry: Entry) -> None:
        """Append a block to the conversation."""

    async def finish_tool(self, call_id: str, name: str, output: str, status: ToolStatus, elapsed: float) -> None:
        """Show the result of a tool call added earlier."""

    def tool_progress(self, call_id: str, text: str) -> None:
        """What a running call shows under its line (a command's latest line of output)."""

    async def show_tasks(self, tasks: Sequence[Task]) -> None:
        """Redraw the task panel with a new state of the list."""

    def show_usage(self, usage: Usage) -> None:
        """Token use of the last response (the status line shows context use)."""

    def set_activity(self, text: str, *, timed: bool = False) -> None:
        """What the running turn is doing, for the status line."""

    def count_down(self, say: Callable[[float], str], seconds: float) -> None:
        """The turn waits `seconds`: the status line says `say(seconds left)`, counting down."""

    def turn_ended(self, reason: str) -> None:
        """The turn is over: stop spinners, give the prompt back."""

    def show_goal(self, progress: GoalProgress) -> None:
        """Where the running goal stands (the status line: `goal 3/5 verified · 12 min · 210k tok`)."""

    async def agent_update(self, event: AgentStarted | AgentEvent | AgentFinished) -> None:
        """A sub-agent started, did something in its own turn, or ended."""


def notice_entry(event: Notice | HookResult | Reminded) -> Entry | None:
    """A notice, a reminder the model got, or a hook that blocked or failed (a hook that
    ran fine says nothing)."""
    if isinstance(event, Reminded):
        return ReminderEntry.of(event.text)
    if isinstance(event, Notice):
        return NoticeEntry(event.text, event.level)
    return NoticeEntry(event.describe(), "warning") if event.noteworthy else None


STEERED_NOTE = "sent mid-turn, with the turn's next request"


def prompt_parts(event: Attached | CommandExpanded | Steered) -> list[Entry]:
    """What went with the prompt (a file attached with `@`, or why not; a command's prompt),
    or a message sent mid-turn, marked as such."""
    if isinstance(event, Steered):
        return [UserEntry(event.text), NoticeEntry(STEERED_NOTE, "dim")]
    return [prompt_part(event)]


def prompt_part(event: Attached | CommandExpanded) -> Entry:
    """What went with the prompt: a file attached with `@` (or why not), a command's prompt."""
    if isinstance(event, CommandExpanded):
        return FoldEntry(event.name, event.source, event.text)
    return attachment_entry(event)


class EventHandler:
    """Maps each core `Event` to calls on a `ConversationUI`."""

    def __init__(self, ui: ConversationUI) -> None:
        self.ui = ui
        self._streaming = False
        self._reasoning: float | None = None
        """When the reasoning streaming now began (the status line counts its time), or None."""
        self._printed: dict[str, str] = {}
        """A running command's output so far (its tail), for the line under its call."""
        self._started: set[str] = set()
        """Calls whose start was shown; any other call that finishes is shown whole then."""

    async def handle(self, event: Event) -> None:
        if self._reasoning is not None and not isinstance(
            event, ReasoningDelta | Usage | ResponseDiscarded | GoalProgress
        ):
            seconds, self._reasoning = time.monotonic() - self._reasoning, None  # the answer (or a call) has begun
            await self.ui.finish_reasoning(seconds)
            self.ui.set_activity("thinking")
        if self._streaming and not isinstance(event, _STREAM_EVENTS):
            await self._end_stream()  # a turn that stops mid-message keeps what had streamed
        if isinstance(event, Compacting | Compacted):
            await self._compaction(event)
        elif isinstance(event, Attached | CommandExpanded | Steered):
            for entry in prompt_parts(event):
                await self.ui.add_entry(entry)
        elif isinstance(event, AgentStarted | AgentEvent | AgentFinished):
            await self.ui.agent_update(event)
        elif isinstance(event, ResponseDiscarded | Retrying):
            await self._retry(event)
        elif isinstance(event, ToolOutput):
            self._printed[event.call_id] = (self._printed.get(event.call_id, "") + event.text)[-LIVE_TAIL:]
            if line := last_line(self._printed[event.call_id]):
                self.ui.tool_progress(event.call_id, line)
        elif isinstance(event, ReasoningDelta):
            if self._reasoning is None:
                self._reasoning = time.monotonic()
                self.ui.set_activity("reasoning", timed=True)
            await self.ui.stream_reasoning(event.text)
        else:
            await self._dispatch(event)

    async def _retry(self, event: ResponseDiscarded | Retrying) -> None:
        if isinstance(event, ResponseDiscarded):  # the `Retrying` that follows says why and when
            self._streaming, self._reasoning = False, None
            await self.ui.discard_message()
            return
        await self.ui.add_entry(NoticeEntry(event.describe(), "warning"))
        self.ui.count_down(lambda left: f"{event.reason} — {event.countdown(left)}", event.delay)

    async def _compaction(self, event: Compacting | Compacted) -> None:
        if isinstance(event, Compacting):
            self.ui.set_activity("compacting the conversation")
            return
        await self.ui.add_entry(NoticeEntry(compaction_notice(event)))
        self.ui.show_usage(Usage(event.tokens_after, 0, estimated=True))
        self.ui.set_activity("thinking")

    async def _dispatch(self, event: Event) -> None:
        match event:
            case TextDelta(text=text):
                self._streaming = True
                await self.ui.stream_text(text)
            case AssistantMessage(content=content):
                self._streaming = False
                await self.ui.finish_message(content)
            case ToolStarted(call_id=call_id, name=name, summary=summary):
                self._started.add(call_id)
                await self.ui.add_entry(ToolEntry(call_id, name, summary))
            case ToolFinished():
                await self._tool_finished(event)
            case TasksUpdated(tasks=tasks):
                await self.ui.show_tasks(tasks)
            case Notice() | HookResult() | Reminded():
                await self._notice(event)
            case Usage():
                self.ui.show_usage(event)
            case GoalProgress():
                self.ui.show_goal(event)
            case Error(message=message):
                await self.ui.add_entry(NoticeEntry(message, "error"))
            case TurnEnd(reason=reason):
                notice = TURN_END_NOTICES.get(reason)
                if notice is not None:
                    await self.ui.add_entry(NoticeEntry(notice.text, notice.level))
                self.ui.turn_ended(reason)

    async def _tool_finished(self, event: ToolFinished) -> None:
        self._printed.pop(event.call_id, None)
        if event.call_id not in self._started:  # cancelled by an earlier "no": it never started
            self._started.add(event.call_id)
            await self.ui.add_entry(ToolEntry(event.call_id, event.name, event.summary))
        await self.ui.finish_tool(event.call_id, event.name, event.output, event.status, event.elapsed)

    async def _notice(self, event: Notice | HookResult | Reminded) -> None:
        entry = notice_entry(event)
        if entry is not None:
            await self.ui.add_entry(entry)

    async def _end_stream(self) -> None:
        self._streaming = False
        await self.ui.finish_message(None)


_TRIGGERS = {"auto": "it passed the threshold", "manual": "/compact", "overflow": "the server refused it as too long"}


def compaction_notice(event: Compacted) -> str:
    """`compacted the conversation (/compact): 6,712 → 2,104 tokens; 24 messages summarised, 6 kept`."""
    return (
        f"compacted the conversation ({_TRIGGERS.get(event.trigger, event.trigger)}): "
        f"{event.tokens_before:,} → {event.tokens_after:,} tokens; "
        f"{event.summarised} messages summarised, {event.kept} kept"
    )
