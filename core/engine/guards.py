"""What keeps one turn from running away: the repeated-call guard and cut tool calls.

- A response cut at the output limit (`finish_reason == "length"`) may end in a tool
  call whose arguments stop mid-way. Such a call (the last one, and any whose arguments
  are not valid JSON) is never run: the model is told it was truncated and to send
  smaller pieces. Complete calls before it run as usual.
- The same tool call(s) with identical arguments in N responses in a row (default 5,
  `max_repeated_calls`; 0 turns the guard off) is a loop: the Nth time the calls are not
  run and the model is told so, once per turn; the next repetition stops the turn.
- A turn makes at most `max_turns` model requests (`RequestBudget`), its sub-agents'
  requests included: a model that fans out without end runs out of the same budget.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..model.base import ToolCall
from ..model.history import strict_json

DEFAULT_REPEAT_LIMIT = 5

CUT_CALL = (
    "Error: this tool call was cut off at the output limit ({limit} tokens) before its arguments were "
    "complete, so it was not run. Send it again with less in one call: split a large file into several "
    "smaller Write or Edit calls."
)
REPEATED_CALL = (
    "Error: not run: {name} was called {count} times in a row with the same arguments, and the result "
    "would not change. Do something different, or end your turn and tell the user what is blocking you."
)
STOPPED_CALL = "cancelled: the turn was stopped because this call repeated the previous ones exactly"
CUT_ANSWER = "the answer was cut at the output limit ({limit} tokens); ask to continue, or raise max_output_tokens"

Verdict = Literal["ok", "warn", "stop"]


def _normalised(arguments: str) -> str:
    try:
        return json.dumps(strict_json(arguments or "{}"), sort_keys=True)
    except ValueError:
        return arguments


def signature(calls: Sequence[ToolCall]) -> tuple[tuple[str, str], ...]:
    """What makes two responses the same: tool names and arguments, key order ignored."""
    return tuple((c.name, _normalised(c.arguments)) for c in calls)


@dataclass
class RepeatGuard:
    """Counts responses that repeat the previous one's tool calls exactly (one per turn)."""

    limit: int = DEFAULT_REPEAT_LIMIT
    count: int = 0
    _last: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    _warned: bool = field(default=False, repr=False)

    def check(self, calls: Sequence[ToolCall]) -> Verdict:
        current = signature(calls)
        self.count = self.count + 1 if current == self._last else 1
        self._last = current
        if self.limit <= 0 or self.count < self.limit:
            return "ok"
        if self._warned:
            return "stop"
        self._warned = True
        return "warn"


def refusals(calls: Sequence[ToolCall], *, cut: bool, verdict: Verdict, count: int, limit: int) -> dict[str, str]:
    """Calls of one response not to run, each with the result the model gets instead."""
    if verdict == "warn":
        return {c.id: REPEATED_CALL.format(count=count, name=c.name) for c in calls}
    if not cut or not calls:
        return {}
    refused = {c.id for c in calls if not _complete(c.arguments)} | {calls[-1].id}
    return {c.id: CUT_CALL.format(limit=limit) for c in calls if c.id in refused}


def _complete(arguments: str) -> bool:
    try:
        strict_json(arguments)
    except ValueError:
        return False
    return True


def stop_notice(calls: Sequence[ToolCall], count: int) -> str:
    names = ", ".join(dict.fromkeys(c.name for c in calls))
    return (
        f"stopped: the model made the same {names} call {count} times in a row "
        "(the repeated-call guard; max_repeated_calls = 0 turns it off)"
    )


@dataclass
class RequestBudget:
    """Model requests one turn may make. A sub-agent has one of its own (its `max_turns`)
    and also spends from its parent's turn: every request counts to the session's limit."""

    limit: int
    used: int = 0
    by_agents: int = 0
    """Of `used`, the requests sub-agents made."""

    def spend(self, *, by_agent: bool = False) -> bool:
        """Take one request; False (and nothing taken) when none is left."""
        if self.used >= self.limit:
            return False
        self.used += 1
        self.by_agents += by_agent
        return True

    def exhausted(self, what: str) -> str:
        """Why a turn stopped at this budget, for the person."""
        theirs = f", {self.by_agents} of them by sub-agents" if self.by_agents else ""
        return f"stopped after {self.limit} model requests {what} (max_turns){theirs}"
