"""Lifecycle observers that record what each task did and changed (see `changes`).

Before an Edit, Write or Bash call runs while a task is in progress, the files it
declares it writes (or, for Bash and any tool that does not say, a scan of the
workspace) are taken; after it ran, whatever changed is
recorded against that task and saved. Tools outside the workspace are not recorded.
Every other call counts to the task in progress too: its tool count and time in the panel.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

from ..events import TasksUpdated
from .scan import Scan

if TYPE_CHECKING:
    from ..lifecycle import ToolObserver, ToolRecord, ToolStartObserver
    from ..tasks.store import TaskStore
    from .log import ChangeLog, Content


def change_observers(changes: ChangeLog, store: TaskStore) -> tuple[ToolStartObserver, ToolObserver]:
    """(`tool_start`, `tool_done`) observers that feed `changes`."""
    pending: dict[str, tuple[str, Scan | list[tuple[str, Content]]]] = {}

    async def start(record: ToolRecord) -> None:
        task = store.current()
        if task is None or record.kind not in ("edit", "execute"):
            return
        if record.kind == "edit" and record.writes:  # the files it declares it writes
            taken = await asyncio.to_thread(lambda: [t for raw in record.writes if (t := take(raw)) is not None])
            if taken:
                pending[record.call_id] = (task.id, taken)
            return
        # A command, or a tool that does not say what it writes: look at the whole workspace.
        pending[record.call_id] = (task.id, await asyncio.to_thread(changes.scan))

    def take(raw: str) -> tuple[str, Content] | None:
        path = changes.workspace / os.path.expanduser(raw)  # an absolute path replaces the workspace
        relative = changes.relative(path)
        return None if relative is None else (relative, changes.capture(path))

    def finish(task_id: str, before: Scan | list[tuple[str, Content]]) -> None:
        if isinstance(before, Scan):
            changes.record_scan(task_id, before)
        else:
            for relative, old in before:
                changes.record(task_id, relative, old, changes.capture(changes.workspace / relative))
        changes.save()

    async def done(record: ToolRecord) -> TasksUpdated | None:
        item = pending.pop(record.call_id, None)
        if item is None:
            return None
        await asyncio.to_thread(finish, *item)
        return TasksUpdated(store.snapshot())  # the panel's `N files · +A −R` lines

    return start, done


def attribution_observer(store: TaskStore) -> ToolObserver:
    """A `tool_done` observer counting every non-task tool call to the task in progress."""

    async def observe(record: ToolRecord) -> TasksUpdated | None:
        if record.kind == "task" or await store.record_tool_call(record.elapsed) is None:
            return None
        return TasksUpdated(store.snapshot())  # the panel's per-task counts; coalesced per batch

    return observe
