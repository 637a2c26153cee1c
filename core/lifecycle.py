"""Extension points the agent loop calls: small providers, not flags in the loop.

- `before_request`: run before every model request; each returns messages to append
  to history (reminders). Appended, never inserted, so earlier messages never change
  and the prompt prefix stays cacheable. Compaction, which replaces history instead of
  appending to it, runs in the loop just before these providers (`core/compaction.py`).
- `before_compact`: awaited just before a compaction's summary request, with what
  triggered it (`auto`, `manual`, `overflow`) and the person's focus text. This is where
  the `PreCompact` hook plugs in; an observer may return an event (a notice), which the
  loop yields. It cannot veto the compaction: a history that no longer fits must shrink.
- `turn_end`: run when the model ends its turn without tool calls; the first that
  returns text gets it appended as a user message and the turn continues.
- `tool_done`: awaited after every tool call that ran (for per-task attribution); an
  observer may return an event, which is queued with the batch's other tool events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .model import Message

if TYPE_CHECKING:
    from .events import Event


@dataclass(frozen=True)
class ToolRecord:
    """One tool call that ran, for observers."""

    name: str
    kind: str
    elapsed: float
    is_error: bool


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


BeforeRequest = Callable[[Sequence[Message]], list[Message]]
BeforeCompact = Callable[[CompactInfo], Awaitable["Event | None"]]
TurnEndCheck = Callable[[TurnState], str | None]
ToolObserver = Callable[[ToolRecord], Awaitable["Event | None"]]


@dataclass
class Lifecycle:
    before_request: list[BeforeRequest] = field(default_factory=list)
    turn_end: list[TurnEndCheck] = field(default_factory=list)
    tool_done: list[ToolObserver] = field(default_factory=list)
    before_compact: list[BeforeCompact] = field(default_factory=list)

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

    async def notify_tool_done(self, record: ToolRecord) -> list[Event]:
        events = [await observer(record) for observer in self.tool_done]
        return [e for e in events if e is not None]

    async def notify_before_compact(self, info: CompactInfo) -> list[Event]:
        events = [await observer(info) for observer in self.before_compact]
        return [e for e in events if e is not None]
