"""`runtime.plan`: the task list as the front ends read it and as the person edits it.

The person's edits (the panel's keys, an ACP client's `_todo_agent/task_update`) are the
store's `user_*` edits: under its lock, recorded in the plan's history, and told to the
model once, with its next request. What each task changed (its files, the diff, the task
rewind) and the plan's share of the session's tokens live here too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ..changes import rewind as rewinds
from ..tasks import history
from ..tasks.model import Budget, Task
from ..window.breakdown import Spend

if TYPE_CHECKING:
    from ..runtime import Runtime


class Plan:
    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    # --- reading ---------------------------------------------------------------------

    def tasks(self) -> tuple[Task, ...]:
        """The task list as it is now (the person may have edited it since the last event)."""
        return self._rt.store.snapshot()

    def get(self, task_id: str) -> Task | None:
        return self._rt.store.get(task_id)

    @property
    def shared(self) -> str:
        """The shared list's name (`--task-list NAME`), or "" for the session's own list."""
        return self._rt.config.task_list or ""

    def versions(self) -> tuple[history.Version, ...]:
        """The plan's history, oldest first (`/todos history`)."""
        return self._rt.store.versions()

    @property
    def history_skipped(self) -> int:
        """Lines of the plan's history that could not be read."""
        return self._rt.store.history_skipped

    async def refresh(self) -> bool:
        """Take in what another process saved to a shared list; whether the list changed."""
        store = self._rt.store
        saved = await asyncio.to_thread(store.peek)
        return saved is not None and store.adopt(saved)

    def spend(self) -> Spend:
        """The prompt tokens this session's requests took, and the plan's part of them."""
        return self._rt.agent.spend

    # --- the person's edits (the store's `user_*`) ---------------------------------------

    async def add(self, subject: str) -> Task:
        return await self._rt.store.user_add(subject)

    async def set_status(self, task_id: str, status: str) -> Task:
        return await self._rt.store.user_set_status(task_id, status)

    async def delete(self, task_id: str) -> Task:
        return await self._rt.store.user_delete(task_id)

    async def move(self, task_id: str, delta: int) -> int:
        return await self._rt.store.user_move(task_id, delta)

    async def rename(self, task_id: str, subject: str) -> Task:
        return await self._rt.store.user_rename(task_id, subject)

    async def set_check(self, task_id: str, command: str) -> Task:
        return await self._rt.store.user_set_check(task_id, command)

    async def set_budget(self, task_id: str, budget: Budget | None) -> Task:
        return await self._rt.store.user_set_budget(task_id, budget)

    async def undo(self) -> str:
        return await self._rt.store.user_undo()

    # --- what each task changed ----------------------------------------------------------

    def task_files(self) -> dict[str, list[str]]:
        """Per task, a line per file it changed (`app.py  +3 −1`), for `/todos`."""
        return {
            task: [
                f"{c.path}  +{c.added} −{c.removed}" + ("" if c.kind == "modified" else f" ({c.kind})") for c in files
            ]
            for task, files in self._rt.changes.records.items()
            if files
        }

    def change_lines(self) -> dict[str, str]:
        """Per task that changed files, its panel line (`2 files · +5 −1`)."""
        return {task: summary.line() for task, summary in self._rt.changes.summaries().items()}

    def task_changes(self, task_id: str) -> tuple[str, str]:
        """What a task changed: its summary line ("" when nothing) and the unified diff."""
        changes = self._rt.changes
        summary = changes.summaries().get(task_id)
        return (summary.line() if summary else ""), changes.diff(task_id)

    def files_changed(self, task_id: str) -> list[dict[str, Any]]:
        """The files a task changed, for JSON output (path, kind, lines added and removed)."""
        return self._rt.changes.as_json(task_id)

    async def plan_rewind(self, task_id: str) -> rewinds.RewindPlan:
        rt = self._rt
        return await asyncio.to_thread(rewinds.plan, rt.changes, rt.store, task_id)

    async def rewind(self, plan: rewinds.RewindPlan, chosen: Collection[str]) -> str:
        """Put back the chosen files of `plan`; refused while a turn runs."""
        rt = self._rt
        if rt.agent.busy:
            raise RuntimeError("cannot rewind while a turn is running")
        return await rewinds.apply(rt.changes, rt.store, plan, chosen)
