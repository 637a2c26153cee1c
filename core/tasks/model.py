"""The values of the task system: `Task` and what the store's operations return.

A leaf module (no imports from the rest of the core) so that the rules, the store
and the events can all build on it. `core.tasks` re-exports everything here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TaskStatus = Literal["pending", "in_progress", "completed"]
STATUSES: tuple[TaskStatus, ...] = ("pending", "in_progress", "completed")


@dataclass(frozen=True)
class AgentRef:
    """A sub-agent as the plan knows it: its name and the session that runs it (two
    processes on one shared list may both have an `explore-1`)."""

    agent: str
    session: str


@dataclass(frozen=True)
class Claim:
    """The sub-agent working a task now. Taken and given back under the list's lock."""

    agent: str
    """Its name, e.g. `explore-2` (also the task's `owner` while the claim lasts)."""
    session: str
    """The session whose process runs it."""
    pid: int
    """That process: a claim whose process is gone is released (`rules.release_dead`)."""
    since: float
    done: bool = False
    """The agent marked the task completed; it becomes completed only if the run then
    ends cleanly (the harness settles the task, not the agent's word)."""

    def by(self, ref: AgentRef | None) -> bool:
        return ref is not None and (self.agent, self.session) == (ref.agent, ref.session)


@dataclass(frozen=True)
class Attempt:
    """One sub-agent's run at a task, recorded when the task was given back."""

    agent: str
    outcome: str
    """`completed`, `partial`, `failed`, `cancelled`, `lost` (its process died), or
    `unverified` (it claimed the task done having done nothing: no tool call besides the
    task tools, no file changed)."""
    summary: str = ""
    files: tuple[str, ...] = ()
    """What the run changed, as `path +A −R` lines measured from the task's change record."""
    at: float = 0.0
    session: str = ""


@dataclass(frozen=True)
class CheckRun:
    """One run of a task's check (`Task.verify`): when, how it ended, and its last lines."""

    at: float
    exit: int | None
    """The exit status; None when it did not finish (timed out, interrupted, or its
    process was killed with todo-agent's)."""
    seconds: float = 0.0
    tail: str = ""
    """The last lines of its output (bounded), what the model was shown."""
    command: str = ""

    @property
    def passed(self) -> bool:
        return self.exit == 0


@dataclass(frozen=True)
class CheckRunning:
    """A check running now, recorded so that a todo-agent killed meanwhile (kill -9) leaves
    a trace: the next open kills its process group if it still lives (`checks.py`)."""

    pgid: int
    owner: int
    """The todo-agent process that started it."""
    ticks: str = ""
    """When the check's shell (the group's leader) started, as /proc says (`pipes.start_ticks`):
    a leader of that pid that started otherwise is someone else's process."""


@dataclass(frozen=True)
class Budget:
    """How much model work a task may take (`core/tasks/budgets.py`); 0 in a bound: none."""

    requests: int = 0
    """Model requests made while it is in progress, by its worker."""
    tokens: int = 0
    """Prompt and completion tokens of those requests, summed as billed."""
    minutes: float = 0.0
    """Minutes in progress."""

    @property
    def empty(self) -> bool:
        return not (self.requests or self.tokens or self.minutes)


@dataclass(frozen=True)
class Task:
    """One task as the panel and the model see it. Frozen: the store replaces, never mutates."""

    id: str
    subject: str
    description: str = ""
    activeForm: str = ""  # model-facing name, kept camelCase
    status: TaskStatus = "pending"
    owner: str = ""
    blocks: tuple[str, ...] = ()
    blockedBy: tuple[str, ...] = ()  # model-facing name, kept camelCase
    created_at: float = 0.0
    started_at: float | None = None
    completed_at: float | None = None
    tool_calls: int = 0
    """Non-task tool calls that ran while this task was in progress."""
    tool_seconds: float = 0.0
    """Their summed elapsed time."""
    progress_seconds: float = 0.0
    """Time spent in progress in earlier stints (a task can be set back to pending)."""
    progress_since: float | None = None
    """When the current stint in progress began; None when not in progress."""
    claim: Claim | None = None
    """The sub-agent working it now; None for the main agent's (or nobody's) task."""
    attempts: tuple[Attempt, ...] = ()
    """Earlier sub-agent runs at it, oldest first."""
    created_by: str = ""
    """The sub-agent that created it (a subtask), by name; empty for the main agent or the person."""
    created_session: str = ""
    """The session whose sub-agent `created_by` is: names repeat across sessions sharing a
    list (each has its `general-1`). Empty in lists written before it was kept: such a
    subtask is the list's own session's (`rules.created_by`)."""
    metadata: tuple[tuple[str, str], ...] = ()
    """Free-form key → value (values as JSON text) set through TaskUpdate, sorted by key."""
    verify: str = ""
    """The task's check: a shell command whose exit 0 proves it. Completing a task with a
    check runs it first; only a pass completes it (`core/tasks/checks.py`)."""
    verified_at: float | None = None
    """When a passing check completed it; None for a task completed without one (or not
    completed). Cleared when it leaves completed or its check changes."""
    checks: tuple[CheckRun, ...] = ()
    """Its check's latest runs, oldest first."""
    check_running: CheckRunning | None = None
    budget: Budget | None = None
    """How much model work it may take; None: no bound."""
    requests: int = 0
    """Model requests made while it was in progress with a budget (its worker's: the main
    agent's for an unclaimed task, the sub-agent's that claimed it)."""
    tokens: int = 0
    """Their prompt and completion tokens, summed."""

    @property
    def verified(self) -> bool:
        return self.status == "completed" and self.verified_at is not None

    @property
    def last_check(self) -> CheckRun | None:
        return self.checks[-1] if self.checks else None


def time_in_progress(task: Task, *, now: float) -> float:
    """Seconds `task` has spent in progress: every stint, waits on approvals included,
    time set aside as pending not. A task saved before stints were kept counts from its
    first start to its completion (or `now`)."""
    if task.progress_seconds or task.progress_since is not None:
        current = now - task.progress_since if task.progress_since is not None else 0.0
        return task.progress_seconds + max(0.0, current)
    if task.started_at is None or task.status == "pending":
        return 0.0
    end = task.completed_at if task.status == "completed" and task.completed_at is not None else now
    return max(0.0, end - task.started_at)


class StoreError(Exception):
    """An invalid operation on the task list; the message is one clear line."""


@dataclass(frozen=True)
class UpdateOutcome:
    task: Task
    """The task after the update; when `deleted`, as it was just before removal."""
    notes: tuple[str, ...] = ()
    """Advice for the model, e.g. that another task is also in progress."""
    deleted: bool = False


@dataclass(frozen=True)
class TodoItem:
    """One entry of a whole-list (`TodoWrite`) update."""

    content: str
    status: str
    active_form: str = ""
    verify: str | None = None
    """The item's check; None keeps the check its task has (matched by content), "" removes it."""


@dataclass(frozen=True)
class ReplaceOutcome:
    tasks: tuple[Task, ...]
    dropped: tuple[Task, ...]
    """Unfinished tasks that the new list left out without completing them."""
    notes: tuple[str, ...] = ()
