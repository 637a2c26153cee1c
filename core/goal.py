"""Goal mode (`/goal [TEXT]` in the app, `--goal` with `-p`): the agent works until the
plan is proven, not until the model says it is done.

A goal is reached when the task list is not empty, every task on it is completed, and
every task that has a check completed through a passing run of it (verified, ☑). Tasks
without a check count as completed, not verified: `3/5 verified · 2 without a check`.

When the model ends a turn short of that, the harness starts a new turn with one message
that names what is left (open tasks, checks not passed with their last output), again and
again — not once, as the stop check does — until the goal holds or a budget ends it:

- `goal_max_turns`: model requests across the whole goal, sub-agents' included (each
  turn is also bounded by `max_turns`, and a turn that reaches it is one that ended short);
- `goal_max_tokens`: prompt and completion tokens summed over those requests (0: none);
- `goal_max_minutes`: wall-clock minutes (0: none).

Tokens and minutes are checked before every model request, so a running command or
sub-agent batch finishes first. A budget that runs out ends the goal with
`TurnEnd("goal")`; any other end of a turn (an error, `esc`, a declined call, an answer
cut at the output limit, the repeated-call guard) ends the goal as it would end a turn.
`GoalProgress` events say where it stands as its numbers change (the status line).
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Literal

from .engine.loop import Agent, TurnLimit
from .events import AgentEvent, EndReason, Event, GoalProgress, Notice, TurnEnd, Usage
from .tasks.model import Task
from .tasks.render import check_line
from .tasks.store import TaskStore

TERMS = (
    "Goal mode: the harness sends you back until every task on the task list is completed and every "
    "task's check passes, so do not stop to report progress. Plan first if the list does not cover the "
    "goal: one task per step, each with a `verify` command that proves it where one can (tests, a linter, "
    "a script). Then work through the tasks; a task with a check is completed only when its check passes."
)
"""Sent after the goal's prompt, so the model knows how its turn will be judged."""

TAIL_LINES = 12
"""Lines of a failing check's output the continuation message repeats."""


@dataclass(frozen=True)
class GoalLimits:
    turns: int = 200
    tokens: int = 0
    """0: no limit."""
    minutes: float = 0.0
    """0: no limit."""


@dataclass(frozen=True)
class Standing:
    """Where the plan stands against a goal."""

    total: int
    completed: int
    verified: int
    unchecked: int
    """Completed tasks that have no check."""
    open: tuple[Task, ...]
    """Tasks not completed."""
    unproven: tuple[Task, ...]
    """Completed tasks whose check has not passed (ticked by the person, or the check changed since)."""

    @property
    def reached(self) -> bool:
        return self.total > 0 and not self.open and not self.unproven

    def line(self) -> str:
        """`3/5 verified · 2 without a check`."""
        unchecked = f" · {self.unchecked} without a check" if self.unchecked else ""
        return f"{self.verified}/{self.total} verified{unchecked}"


def standing(tasks: Sequence[Task]) -> Standing:
    completed = [t for t in tasks if t.status == "completed"]
    return Standing(
        total=len(tasks),
        completed=len(completed),
        verified=sum(1 for t in completed if t.verified),
        unchecked=sum(1 for t in completed if not t.verify),
        open=tuple(t for t in tasks if t.status != "completed"),
        unproven=tuple(t for t in completed if t.verify and not t.verified),
    )


def what_is_left(now: Standing) -> str:
    """The message that sends the model back: what stands between the plan and the goal."""
    if now.total == 0:
        return (
            "The goal is not reached: the task list is empty. Plan the goal first (TaskCreate, one task per "
            "step, each with a `verify` check where a command can prove it), then work through the tasks."
        )
    lines = [f"The goal is not reached yet ({now.line()}). Keep working; what is left:"]
    for task in now.open:
        lines.append(f"- #{task.id} {task.subject} ({task.status})")
        lines.extend(_check_lines(task))
    for task in now.unproven:
        lines.append(
            f"- #{task.id} {task.subject}: completed, but its check has not passed; complete it again to run it"
        )
        lines.extend(_check_lines(task))
    return "\n".join(lines)


def _check_lines(task: Task) -> list[str]:
    if not task.verify:
        return []
    lines = [f"  check: {check_line(task)}"]
    last = task.last_check
    if last is not None and not last.passed and last.tail.strip():
        tail = last.tail.strip().splitlines()[-TAIL_LINES:]
        lines += ["  its last output:", *(f"    {line}" for line in tail)]
    return lines


GoalState = Literal["running", "reached", "stopped"]


@dataclass
class GoalRun:
    """One goal: its turns, one after another, on `agent`, judged by `store`'s list."""

    agent: Agent
    store: TaskStore
    goal: str
    """The person's words; empty: the current list is the goal."""
    limits: GoalLimits = field(default_factory=GoalLimits)
    clock: Callable[[], float] = time.monotonic
    requests: int = 0
    """Model requests of the finished turns (sub-agents' included)."""
    tokens: int = 0
    continuations: int = 0
    stopping: bool = False
    """`esc` between two turns: the goal ends before the next."""
    over: bool = False
    """Whether the goal has ended (reached or not)."""
    _started: float = field(default=0.0, repr=False)
    _shown: tuple[int, ...] = field(default=(), repr=False)

    def stop(self) -> None:
        """End the goal (the running turn is interrupted by whoever calls this)."""
        self.stopping = True

    def _stopped(self) -> bool:
        """Read afresh after a yield: `stop()` may have come while the front end drew it."""
        return self.stopping

    @property
    def seconds(self) -> float:
        return self.clock() - self._started

    def progress(self, state: GoalState = "running") -> GoalProgress:
        now = standing(self.store.snapshot())
        used = self.requests + self._turn_requests()
        return GoalProgress(
            self.goal, now.total, now.completed, now.verified, now.unchecked, used, self.tokens, self.seconds, state
        )

    async def run(self) -> AsyncGenerator[Event, None]:
        try:
            async for event in self._run():
                yield event
        finally:
            self.over = True

    async def _run(self) -> AsyncIterator[Event]:
        self._started = self.clock()
        yield self._progress()
        now = standing(self.store.snapshot())
        if self.goal:
            turn = self.agent.run_turn(self.goal, note=TERMS, limit=self._limit())
        else:  # the list as it is is the goal
            turn = self.agent.continue_turn(f"{TERMS}\n\n{what_is_left(now)}", self._limit())
        while True:
            end = None
            before = self.agent.requests
            async with aclosing(turn) as events:
                async for event in events:
                    self._count(event)
                    if isinstance(event, TurnEnd):
                        end = event
                        continue
                    yield event
                    if (shown := self._progress_if_changed()) is not None:
                        yield shown
            if self.agent.requests is not before and self.agent.requests is not None:
                self.requests += self.agent.requests.used
            now = standing(self.store.snapshot())
            if self.stopping or end is None or end.reason not in ("done", "max_turns"):
                reason: EndReason = "interrupted" if self.stopping else end.reason if end else "error"
                yield self._progress("stopped")
                yield TurnEnd(reason, end.final_text if end else "")
                return
            if now.reached:
                yield Notice(f"goal reached: {now.line()}")
                yield self._progress("reached")
                yield TurnEnd("done", end.final_text)
                return
            spent = self._spent() or (self._exhausted() if self.requests >= self.limits.turns else None)
            if spent is not None:
                yield Notice(f"{spent}; the goal is not reached ({now.line()})", "warning")
                yield self._progress("stopped")
                yield TurnEnd("goal", end.final_text)
                return
            self.continuations += 1
            yield Notice(f"goal not reached ({now.line()}): the model is sent back to work ({self.continuations})")
            if self._stopped():  # esc while that notice was shown
                yield self._progress("stopped")
                yield TurnEnd("interrupted", end.final_text)
                return
            turn = self.agent.continue_turn(what_is_left(now), self._limit())

    # --- budgets ---------------------------------------------------------------------

    def _limit(self) -> TurnLimit:
        return TurnLimit(max(self.limits.turns - self.requests, 0), self._spent, self._exhausted)

    def _turn_requests(self) -> int:
        budget = self.agent.requests
        return budget.used if budget is not None and self.agent.busy else 0

    def _spent(self) -> str | None:
        """Why the goal stops now, by tokens or minutes; None while both last."""
        if self.limits.tokens and self.tokens >= self.limits.tokens:
            return f"stopped: the goal spent {self.tokens:,} tokens (goal_max_tokens {self.limits.tokens:,})"
        if self.limits.minutes and self.seconds >= self.limits.minutes * 60:
            return f"stopped: the goal ran {self.seconds / 60:.0f} minutes (goal_max_minutes {self.limits.minutes:g})"
        return None

    def _exhausted(self) -> str:
        return f"stopped after {self.limits.turns} model requests across the goal (goal_max_turns)"

    def _count(self, event: Event) -> None:
        usage = event.event if isinstance(event, AgentEvent) else event
        if isinstance(usage, Usage):
            self.tokens += usage.prompt_tokens + usage.completion_tokens

    # --- progress ----------------------------------------------------------------------

    def _progress(self, state: GoalState = "running") -> GoalProgress:
        shown = self.progress(state)
        self._shown = _numbers(shown)
        return shown

    def _progress_if_changed(self) -> GoalProgress | None:
        shown = self.progress()
        if _numbers(shown) == self._shown:
            return None
        self._shown = _numbers(shown)
        return shown


def _numbers(progress: GoalProgress) -> tuple[int, ...]:
    """What the status line shows of a goal: a change of any is worth an event."""
    thousands = progress.tokens // 1000
    return (
        progress.total,
        progress.completed,
        progress.verified,
        progress.unchecked,
        thousands,
        int(progress.seconds // 60),
    )
