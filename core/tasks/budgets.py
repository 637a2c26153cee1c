"""Budgets per task: how much model work a task may take before the work on it stops.

A budget (`Budget`) bounds what the task's worker spends while it is in progress: model
requests, their tokens (prompt plus completion, summed per request as billed: each request
sends the whole context again) and minutes in progress. The worker of an unclaimed task is
the main agent; of a claimed one, the sub-agent that claimed it. The engine counts each
request to its worker's task in progress while that task has a budget (`rules.record_request`;
a task without one is not written to per request): the spend counts from when it was set.

Who may change one: the model sets a budget or lowers one (`lowered`); only the person
raises or removes one (the panel's `b`, `parse`), as a budget is there to stop the model.

What running out does (`core/engine/loop.py`): a sub-agent is stopped before its next
request and settled `partial` (the attempt says why); the main agent is told in the next
tool result, and if its next response still works on the task, the turn stops after that
batch (`TurnEnd("budget")`). Setting the task aside (pending) or completing it ends that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from .model import Budget, StoreError, Task, time_in_progress

UNITS = ("requests", "tokens", "minutes")


def _spent(task: Task, now: float) -> dict[str, float]:
    return {"requests": task.requests, "tokens": task.tokens, "minutes": time_in_progress(task, now=now) / 60}


def _used(spent: float, bound: float, unit: str, label: str) -> str:
    """`12/20 requests`; minutes spent shown whole (`0/30 min`, not `0.0/30`)."""
    shown = int(spent) if unit == "minutes" else spent
    return f"{_amount(shown, unit)}/{_amount(bound, unit)} {label}"


def used_up(task: Task, now: float) -> str | None:
    """Which bound of `task`'s budget its spend has reached (`3/3 requests`), or None."""
    budget = task.budget
    if budget is None:
        return None
    spent = _spent(task, now)
    for unit in UNITS:
        bound = getattr(budget, unit)
        if bound and spent[unit] >= bound:
            return _used(spent[unit], bound, unit, unit)
    return None


def from_numbers(values: Mapping[str, float]) -> Budget:
    """A budget from positive numbers by unit: requests and tokens whole (at least 1)."""
    whole = {unit: max(1, round(values[unit])) for unit in ("requests", "tokens") if unit in values}
    return Budget(whole.get("requests", 0), whole.get("tokens", 0), float(values.get("minutes", 0.0)))


def lowered(old: Budget | None, new: Budget, where: str = "") -> Budget:
    """The budget after the model's change `new` (its zero bounds keep the old ones): any
    bound may be set or lowered, none raised or removed."""
    if min(new.requests, new.tokens, new.minutes) < 0:
        raise StoreError(f"{where}a budget's bounds are positive numbers")
    if old is None:
        return new
    merged = Budget(new.requests or old.requests, new.tokens or old.tokens, new.minutes or old.minutes)
    for unit in UNITS:
        before, after = getattr(old, unit), getattr(merged, unit)
        if before and after > before:
            raise StoreError(
                f"{where}its budget allows {_amount(before, unit)} {unit}: you may lower a budget, not raise it "
                "(only the person can, in the task panel)"
            )
    return merged


def with_budget(task: Task, budget: Budget | None) -> Task:
    return replace(task, budget=None if budget is None or budget.empty else budget)


_VALUE = r"[\d.]+(?:\s*[km](?![a-z]))?"
_PART = re.compile(rf"(?P<unit1>[a-z]+)\s*[=:]\s*(?P<value1>{_VALUE})|(?P<value2>{_VALUE})\s*(?P<unit2>[a-z]+)")


def parse(text: str) -> Budget | None:
    """The person's budget as typed in the panel: `20 requests, 200k tokens, 30 min` or
    `requests=20 tokens=200k minutes=30` (any of the three, each unit by any prefix);
    empty: none (the budget is removed). StoreError names what it cannot read."""
    text = text.strip().lower()
    if not text:
        return None
    values: dict[str, float] = {}
    rest = text
    for match in _PART.finditer(text):
        unit_text = match["unit1"] or match["unit2"]
        value_text = (match["value1"] or match["value2"]).replace(" ", "")
        unit = next((u for u in UNITS if u.startswith(unit_text.removesuffix("s") or "?")), None)
        scale = {"k": 1_000, "m": 1_000_000}.get(value_text[-1], 1)
        try:
            value = float(value_text.rstrip("km")) * scale
        except ValueError:
            unit = None
        if unit is None or value <= 0:
            raise StoreError(f"cannot read {match[0]!r} as a budget (e.g. '20 requests, 200k tokens, 30 min')")
        values[unit] = value
        rest = rest.replace(match[0], " ", 1)
    if not values or re.sub(r"[\s,;·]+", "", rest):
        raise StoreError(f"cannot read {text!r} as a budget (e.g. '20 requests, 200k tokens, 30 min')")
    return from_numbers(values)


def describe(budget: Budget | None) -> str:
    """`20 requests, 200k tokens, 30 min` (what `parse` reads back); "" for none."""
    if budget is None:
        return ""
    return ", ".join(
        f"{_amount(getattr(budget, unit), unit)} {_label(unit)}" for unit in UNITS if getattr(budget, unit)
    )


def spend_line(task: Task, now: float) -> str:
    """What the panel shows under a task with a budget: `budget 12/20 requests · 80k/200k
    tokens · 4/30 min`, led by `⏹` once it is used up; "" without one."""
    budget = task.budget
    if budget is None:
        return ""
    spent = _spent(task, now)
    parts = [_used(spent[unit], getattr(budget, unit), unit, _label(unit)) for unit in UNITS if getattr(budget, unit)]
    lead = "⏹ budget used up" if used_up(task, now) else "budget"
    return f"{lead} {' · '.join(parts)}"


def _label(unit: str) -> str:
    return "min" if unit == "minutes" else unit


def _amount(value: float, unit: str) -> str:
    if unit == "tokens":
        return (
            f"{value / 1_000_000:.1f}M".replace(".0M", "M")
            if value >= 1_000_000
            else (f"{value / 1000:.0f}k" if value >= 10_000 else f"{value:,.0f}")
        )
    if unit == "minutes":
        return f"{value:.0f}" if value >= 10 or float(value).is_integer() else f"{value:.1f}"
    return f"{value:.0f}"


TOLD = (
    "Task #{id}'s budget is used up ({spent}). Set it aside (TaskUpdate status pending) or complete it; the "
    "person can raise the budget in the task panel. If you go on working on it, the turn stops after your "
    "next tool calls."
)
"""Added to the main agent's next tool result when its task's budget runs out."""

STOPPED = "stopped: task #{id}'s budget is used up ({spent})"
"""Why the turn (or the sub-agent) stopped: a warning notice, and the attempt's reason."""
