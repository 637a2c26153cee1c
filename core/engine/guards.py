"""What keeps one turn from running away: the repeated-call guard and cut tool calls.

- A response cut at the output limit (`finish_reason == "length"`) may end in a tool
  call whose arguments stop mid-way. Such a call (the last one, and any whose arguments
  are not valid JSON) is never run: the model is told it was truncated and to send
  smaller pieces. Complete calls before it run as usual.
- The same tool call(s) with identical arguments *and identical results* in N responses
  in a row (default 5, `max_repeated_calls`; 0 turns the guard off) is a loop: the Nth
  time the calls are not run and the model is told so, once per turn; the next
  repetition stops the turn, naming the call. A call whose result changed (polling `git
  status` or `tail -5 build.log` while something runs, a health check, a Read of a file
  that changed in between) is not a repeat, however often it is made: the count starts
  again.
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
from ..tools.base import Tool, parse_arguments

DEFAULT_REPEAT_LIMIT = 5

CUT_CALL = (
    "Error: this tool call was cut off at the output limit ({limit} tokens) before its arguments were "
    "complete, so it was not run. Send it again with less in one call: split a large file into several "
    "smaller Write or Edit calls."
)
REPEATED_CALL = (
    "Error: not run: the last {ran} {name} calls had the same arguments and got the same result each time. "
    "If you are waiting for something to change, wait longer between checks (one command that sleeps, then "
    "checks); otherwise do something different, or end your turn and tell the user what is blocking you."
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
    """What makes two responses' calls the same: tool names and arguments, key order ignored."""
    return tuple((c.name, _normalised(c.arguments)) for c in calls)


@dataclass
class RepeatGuard:
    """Counts responses that repeat the previous one exactly: the same calls, with the same
    arguments, that got the same results (one guard per turn).

    `check` comes before a response's calls run, `observe` after, with their results.
    """

    limit: int = DEFAULT_REPEAT_LIMIT
    count: int = 0
    """Identical responses in a row, the one just checked included."""
    _calls: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    _results: tuple[str, ...] | None = field(default=None, repr=False)
    _streak: int = field(default=0, repr=False)
    """Responses in a row with `_calls` that got `_results` (a refused one counts too)."""
    _warned: bool = field(default=False, repr=False)

    def check(self, calls: Sequence[ToolCall]) -> Verdict:
        current = signature(calls)
        if current != self._calls:
            self._calls, self._results, self._streak = current, None, 0
        self.count = self._streak + 1
        if self.limit <= 0 or self.count < self.limit:
            return "ok"
        if self._warned:
            return "stop"
        self._warned = True
        self._streak += 1  # refused as a repeat: it counts as one, and its refusal is no result
        return "warn"

    def observe(self, results: Sequence[str]) -> None:
        """The results of the calls just checked (and run), in call order."""
        outcome = tuple(results)
        self._streak = self._streak + 1 if outcome == self._results else 1
        self._results = outcome


def refusals(calls: Sequence[ToolCall], *, cut: bool, verdict: Verdict, count: int, limit: int) -> dict[str, str]:
    """Calls of one response not to run, each with the result the model gets instead."""
    if verdict == "warn":
        return {c.id: REPEATED_CALL.format(ran=count - 1, name=c.name) for c in calls}
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


def stop_notice(calls: Sequence[ToolCall], count: int, tools: Sequence[Tool]) -> str:
    """`stopped: the model made the same call 6 times in a row, with the same result: Bash(git status) …`"""
    named = ", ".join(dict.fromkeys(_named(c, tools) for c in calls))
    return (
        f"stopped: the model made the same call {count} times in a row, with the same result: {named} "
        "(the repeated-call guard; max_repeated_calls = 0 turns it off)"
    )


_NAMED_WIDTH = 60


def _named(call: ToolCall, tools: Sequence[Tool]) -> str:
    """`Bash(git status)`: the call as the conversation shows it."""
    tool = next((t for t in tools if t.name == call.name), None)
    shown = ""
    if tool is not None:
        try:
            shown = tool.summarize(parse_arguments(call.arguments))
        except Exception:  # a summary is cosmetic: the name alone will do
            shown = ""
    shown = " ".join(shown.split())
    if len(shown) > _NAMED_WIDTH:
        shown = shown[: _NAMED_WIDTH - 1] + "…"
    return f"{call.name}({shown})"


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
