"""Lifecycle observers that record what each task did and changed (see `changes`).

Before an Edit, Write or Bash call runs while a task is in progress, the file it names
(or, for Bash, a scan of the workspace) is taken; after it ran, whatever changed is
recorded against that task and saved. Tools outside the workspace are not recorded.
Every other call counts to the task in progress too: its tool count and time in the panel.
Each agent has its own observers: a sub-agent's work goes to the task it claimed (or, with
none, to a record of its own, `@<agent>`), the main agent's to its own task in progress.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..events import TasksUpdated
from .scan import Scan

if TYPE_CHECKING:
    from ..lifecycle import ToolObserver, ToolRecord, ToolStartObserver
    from ..tasks.model import AgentRef
    from ..tasks.store import TaskStore
    from .log import ChangeLog, Content

Target = Callable[[], "str | None"]
"""Which record a change goes to now: a task id, or None for none."""


def change_observers(
    changes: ChangeLog, store: TaskStore, target: Target | None = None
) -> tuple[ToolStartObserver, ToolObserver]:
    """(`tool_start`, `tool_done`) observers that feed `changes`; `target` says which
    record (default: the main agent's task in progress)."""
    pending: dict[str, tuple[str, Scan | tuple[str, Content]]] = {}

    def main_task() -> str | None:
        task = store.current()
        return task.id if task is not None else None

    recording = target or main_task

    async def start(record: ToolRecord) -> None:
        key = recording()
        if key is None or record.kind not in ("edit", "execute"):
            return
        if record.kind == "execute":
            pending[record.call_id] = (key, await asyncio.to_thread(changes.scan))
            return
        raw = record.arguments.get("file_path")
        if not isinstance(raw, str) or not raw:
            return
        taken = await asyncio.to_thread(take, raw)
        if taken is not None:
            pending[record.call_id] = (key, taken)

    def take(raw: str) -> tuple[str, Content] | None:
        path = changes.workspace / os.path.expanduser(raw)  # an absolute path replaces the workspace
        relative = changes.relative(path)
        return None if relative is None else (relative, changes.capture(path))

    def finish(task_id: str, before: Scan | tuple[str, Content]) -> None:
        if isinstance(before, Scan):
            changes.record_scan(task_id, before)
        else:
            relative, old = before
            changes.record(task_id, relative, old, changes.capture(changes.workspace / relative))
        changes.save()

    async def done(record: ToolRecord) -> TasksUpdated | None:
        item = pending.pop(record.call_id, None)
        if item is None:
            return None
        await asyncio.to_thread(finish, *item)
        return TasksUpdated(store.snapshot())  # the panel's `N files · +A −R` lines

    return start, done


def attribution_observer(store: TaskStore, by: AgentRef | None = None) -> ToolObserver:
    """A `tool_done` observer counting every non-task tool call to `by`'s task in progress
    (None: the main agent's)."""

    async def observe(record: ToolRecord) -> TasksUpdated | None:
        if record.kind == "task" or await store.record_tool_call(record.elapsed, by) is None:
            return None
        return TasksUpdated(store.snapshot())  # the panel's per-task counts; coalesced per batch

    return observe
