"""The work area of the main screen: the task panel beside the conversation, and what the
person does to the plan there (add, edit, set a check, move, delete, undo; review and rewind a task).

The panel only posts messages (`TaskPanel.Add`, `.Rewind`, …); they bubble here, where
they become task store edits (`user_*`) or `Runtime` calls, and the panel is redrawn from
the store. What needs the running turn (refusing a rewind while one runs) is asked of the
screen through `refuse_while_busy`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual import on
from textual.containers import Vertical

from todo_agent.core.changes.rewind import RewindPlan
from todo_agent.core.runtime import Runtime
from todo_agent.core.tasks.budgets import parse as parse_budget
from todo_agent.core.tasks.model import StoreError
from todo_agent.core.tasks.persistence import PersistenceError

from ..transcript import NoticeEntry
from ..widgets.conversation import Conversation
from ..widgets.task_panel import TaskPanel
from .changes import ChangesScreen
from .rewind import RewindScreen


class WorkArea(Vertical):
    """Holds `TaskPanel` and `Conversation` (composed by the screen) and carries out the panel's edits."""

    def __init__(self, runtime: Runtime, refuse_while_busy: Callable[[str], bool], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.runtime = runtime
        self._refuse_while_busy = refuse_while_busy

    async def redraw_plan(self, highlight: str | None = None) -> None:
        """Draw the task list as it is now, with each task's changed files."""
        await self.query_one(TaskPanel).show(
            self.runtime.plan.tasks(), highlight=highlight, changes=self.runtime.plan.change_lines()
        )

    @on(TaskPanel.Add)
    async def _task_add(self, event: TaskPanel.Add) -> None:
        try:
            task = await self.runtime.plan.add(event.subject)
        except StoreError as exc:
            self.notify(str(exc), severity="error", title="Task list", markup=False)
            task = None
        # The highlight follows the new task, so space or d act on what was just typed.
        await self.redraw_plan(highlight=task.id if task else None)

    @on(TaskPanel.StatusChange)
    async def _task_status(self, event: TaskPanel.StatusChange) -> None:
        await self._edit_tasks(self.runtime.plan.set_status(event.task_id, event.status))

    @on(TaskPanel.Delete)
    async def _task_delete(self, event: TaskPanel.Delete) -> None:
        await self._edit_tasks(self.runtime.plan.delete(event.task_id))

    @on(TaskPanel.Move)
    async def _task_move(self, event: TaskPanel.Move) -> None:
        await self._edit_tasks(self.runtime.plan.move(event.task_id, event.delta))

    @on(TaskPanel.Rename)
    async def _task_rename(self, event: TaskPanel.Rename) -> None:
        await self._edit_tasks(self.runtime.plan.rename(event.task_id, event.subject))

    @on(TaskPanel.SetCheck)
    async def _task_check(self, event: TaskPanel.SetCheck) -> None:
        await self._edit_tasks(self.runtime.plan.set_check(event.task_id, event.command))

    @on(TaskPanel.SetBudget)
    async def _task_budget(self, event: TaskPanel.SetBudget) -> None:
        try:
            budget = parse_budget(event.text)
        except StoreError as exc:
            self.notify(str(exc), severity="error", title="Task budget", markup=False)
            return
        await self._edit_tasks(self.runtime.plan.set_budget(event.task_id, budget))

    async def _edit_tasks(self, edit: Awaitable[object]) -> None:
        try:
            await edit
        except StoreError as exc:
            self.notify(str(exc), severity="error", title="Task list", markup=False)
        await self.redraw_plan()

    @on(TaskPanel.Undo)
    async def _task_undo(self) -> None:
        try:
            undone = await self.runtime.plan.undo()
        except StoreError as exc:
            self.notify(str(exc), severity="warning", title="Undo", markup=False)
            return
        self.notify(f"Undid: {undone}", title="Undo", markup=False)
        await self.redraw_plan()

    @on(TaskPanel.ShowChanges)
    def _task_changes(self, event: TaskPanel.ShowChanges) -> None:
        task = self.runtime.plan.get(event.task_id)
        summary, diff = self.runtime.plan.task_changes(event.task_id)
        self.app.push_screen(ChangesScreen(event.task_id, task.subject if task else "", summary, diff))

    @on(TaskPanel.Rewind)
    async def _task_rewind(self, event: TaskPanel.Rewind) -> None:
        if self._refuse_while_busy("rewind a task"):
            return
        try:
            plan = await self.runtime.plan.plan_rewind(event.task_id)
        except OSError as exc:  # each file's trouble is in the plan; this is the session's own files failing
            self.notify(f"Cannot plan the rewind: {exc}", severity="error", title="Rewind", markup=False)
            return
        if not plan.files:
            self.notify(f"Task #{event.task_id} changed no files.", title="Rewind", markup=False)
            return
        if not plan.actionable:
            self.notify(f"Nothing of task #{event.task_id} can be put back.", title="Rewind", markup=False)
            return

        async def chosen(paths: list[str] | None) -> None:
            if paths:
                await self._rewind(plan, paths)

        self.app.push_screen(RewindScreen(plan), callback=chosen)

    async def _rewind(self, plan: RewindPlan, paths: list[str]) -> None:
        conversation = self.query_one(Conversation)
        try:
            text = await self.runtime.plan.rewind(plan, paths)
        except (RuntimeError, OSError, StoreError, PersistenceError) as exc:
            await conversation.add(NoticeEntry(f"The rewind failed: {exc}", "error"))
        else:
            await conversation.add(NoticeEntry(text[:1].upper() + text[1:]))
        await self.redraw_plan()
