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


@dataclass(frozen=True)
class ReplaceOutcome:
    tasks: tuple[Task, ...]
    dropped: tuple[Task, ...]
    """Unfinished tasks that the new list left out without completing them."""
    notes: tuple[str, ...] = ()
