"""Extension points the agent loop calls: small providers, not flags in the loop.

- `before_request`: run before every model request; each returns messages to append
  to history (reminders). Appended, never inserted, so earlier messages never change
  and the prompt prefix stays cacheable. Compaction, which replaces history instead of
  appending to it, runs in the loop just before these providers (`core/window/compaction.py`).
- `before_compact`: awaited just before a compaction's summary request, with what
  triggered it (`auto`, `manual`, `overflow`) and the person's focus text. This is where
  the `PreCompact` hook plugs in; an observer returns the events (notices) for the
  person, which the loop yields. It cannot veto the compaction: a history that no longer fits must shrink.
- `turn_end`: run when the model ends its turn without tool calls; the first that
  returns text gets it appended as a user message and the turn continues.
- `tool_start`: awaited right before a tool call runs (after its approval), with the
  same record (elapsed 0): what a file looked like before a change is taken here.
- `tool_done`: awaited after every tool call that ran (for per-task attribution); an
  observer may return an event, which is queued with the batch's other tool events.

- `prepare_prompt`: after the `before_prompt` gates let a prompt through, turns what the
  person typed into what the model gets (a custom command expanded, `@` files attached,
  a model and allow rules for this turn), yielding events for the person on the way
  and one `PreparedPrompt` last (`core/input/prepare.py`).

Gates, awaited, each answering with a `Verdict` (block with a reason, context for the
model, events for the person); several gates of one seam run in order and the first
block wins. The shell hooks from settings plug in here (`core/hooks/wiring.py`):
- `before_prompt`: before the person's prompt enters history; a block means the prompt
  is not sent (and not kept); context is appended after it.
- `before_tool`: before a tool call, ahead of the permission check; a block answers the
  call with the reason as its error, and it never runs.
- `after_tool`: after a call that ran; block reason and context are added to its result.
- `stop`: when the model ends its turn and the `turn_end` checks let it; a block
  continues the turn with the reason as a user message.
- `task_change`: before the model's task tools create or complete a task; a block
  refuses the whole tool call and leaves the list as it was.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .model.base import Message

if TYPE_CHECKING:
    from .events import Event
    from .model.base import ChatModel
    from .tasks.model import Task

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolRecord:
    """One tool call that ran, for observers."""

    name: str
    kind: str
    elapsed: float
    is_error: bool
    call_id: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    writes: tuple[str, ...] = ()
    """The paths the call writes, as its tool declared them (for the change record)."""
    changed: list[str] = field(default_factory=list)
    """The files the change records found the call changed (workspace-relative, `/`), filled
    by their `tool_done` observer before the ones after it (the reminders' work rules) run."""
    notes: list[str] = field(default_factory=list)
    """Lines a `tool_done` observer adds to the call's result, for the model (a held file
    put back); the record itself is frozen, this list is the one thing observers fill."""


@dataclass(frozen=True)
class TurnState:
    """What a turn-end check may look at."""

    history: Sequence[Message]
    continuations: int
    """How many times turn-end checks already continued this user turn."""


@dataclass(frozen=True)
class CompactInfo:
    """What a `before_compact` observer is told."""

    trigger: Literal["auto", "manual", "overflow"]
    focus: str
    """What the person asked the summary to focus on (`/compact FOCUS`); empty otherwise."""
    tokens: int
    """Estimated prompt size before compacting."""


@dataclass(frozen=True)
class Verdict:
    """What a gate decided about the action it guards."""

    block: str = ""
    """Non-empty: the action does not happen, and this says why (worded for whoever
    the seam tells: the model, or for `before_prompt` the person)."""
    context: str = ""
    """Text for the model, ready to append (worded and wrapped by the gate)."""
    events: tuple[Event, ...] = ()
    """For the person (hook results, notices)."""


@dataclass(frozen=True)
class ToolUse:
    """A tool call a gate looks at."""

    call_id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class ToolOutput:
    """A tool call that ran, and what it returned."""

    use: ToolUse
    output: str
    is_error: bool


@dataclass(frozen=True)
class StopState:
    """The model wants to end its turn."""

    final_text: str
    continuations: int
    """How many times `stop` gates already continued this user turn."""


@dataclass(frozen=True)
class TaskChange:
    """A task the model's tool call would create or complete."""

    event: Literal["TaskCreated", "TaskCompleted"]
    task: Task
    """The task as the call would leave it."""
    before: Task | None = None
    """The task as it was (None: the call creates it). A matcher is tested against both
    subjects: renaming a task in the call that completes it must not skip its hook."""


@dataclass(frozen=True)
class PreparedPrompt:
    """What a prompt becomes before it enters the history."""

    content: str
    """The user message."""
    follow: tuple[str | list[dict[str, Any]], ...] = ()
    """User messages' contents right after it (the `@` attachments: a content list when
    they hold an image)."""
    model: ChatModel | None = None
    """The model for this turn only (a custom command's `model`); None: the session's."""
    allow: tuple[str, ...] = ()
    """Permission rules allowed for this turn only (a custom command's `allowed-tools`)."""
    refusal: str = ""
    """Non-empty: the prompt is not sent, and this says why (to the person)."""


Gate = Callable[[T], Awaitable[Verdict]]
PromptPreparer = Callable[[str], AsyncIterator["Event | PreparedPrompt"]]
BeforeRequest = Callable[[Sequence[Message]], list[Message]]
BeforeCompact = Callable[[CompactInfo], Awaitable["Sequence[Event]"]]
TurnEndCheck = Callable[[TurnState], str | None]
ToolObserver = Callable[[ToolRecord], Awaitable["Event | None"]]
ToolStartObserver = Callable[[ToolRecord], Awaitable[None]]


@dataclass
class Lifecycle:
    before_request: list[BeforeRequest] = field(default_factory=list)
    turn_end: list[TurnEndCheck] = field(default_factory=list)
    tool_done: list[ToolObserver] = field(default_factory=list)
    before_compact: list[BeforeCompact] = field(default_factory=list)
    before_prompt: list[Gate[str]] = field(default_factory=list)
    before_tool: list[Gate[ToolUse]] = field(default_factory=list)
    after_tool: list[Gate[ToolOutput]] = field(default_factory=list)
    stop: list[Gate[StopState]] = field(default_factory=list)
    task_change: list[Gate[TaskChange]] = field(default_factory=list)
    tool_start: list[ToolStartObserver] = field(default_factory=list)
    prepare_prompt: PromptPreparer | None = None

    def collect_before_request(self, history: Sequence[Message]) -> list[Message]:
        added: list[Message] = []
        for provider in self.before_request:
            added.extend(provider([*history, *added]))
        return added

    def check_turn_end(self, state: TurnState) -> str | None:
        for check in self.turn_end:
            text = check(state)
            if text:
                return text
        return None

    async def notify_tool_start(self, record: ToolRecord) -> list[Event]:
        """Tell the observers a call is about to run; an observer that fails is a warning
        (what it failed at is a record, never the call or the turn)."""
        events: list[Event] = []
        for observer in self.tool_start:
            try:
                await observer(record)
            except Exception as exc:
                events.append(_observer_failed(record, exc))
        return events

    async def notify_tool_done(self, record: ToolRecord) -> list[Event]:
        events: list[Event] = []
        for observer in self.tool_done:
            try:
                event = await observer(record)
            except Exception as exc:
                event = _observer_failed(record, exc)
            if event is not None:
                events.append(event)
        return events

    async def notify_before_compact(self, info: CompactInfo) -> list[Event]:
        return [event for observer in self.before_compact for event in await observer(info)]


def _observer_failed(record: ToolRecord, exc: Exception) -> Event:
    from .events import Notice

    log.error("a tool observer failed on %s", record.name, exc_info=exc)
    return Notice(
        f"could not note this {record.name} call ({type(exc).__name__}: {exc}); it ran all the same", "warning"
    )


async def run_gates(gates: Sequence[Gate[T]], subject: T) -> Verdict:
    """Ask each gate in order; the first block ends it. Context and events add up."""
    context: list[str] = []
    events: list[Event] = []
    for gate in gates:
        verdict = await gate(subject)
        events.extend(verdict.events)
        if verdict.context:
            context.append(verdict.context)
        if verdict.block:
            return Verdict(verdict.block, "\n\n".join(context), tuple(events))
    return Verdict("", "\n\n".join(context), tuple(events))
