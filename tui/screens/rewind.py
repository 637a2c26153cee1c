"""Rewinding a task (`r` in the panel): which files go back, chosen by the person.

Lists each file the task changed with what a rewind would do. Files nobody changed since
the task are chosen at first; a file changed later (by a later task, or by the person)
is a conflict: it says by whom, shows what changed since, and is put back only if the
person chooses it (`space`). `y` rewinds the chosen files, `escape`/`n` changes nothing.
Dismisses with the chosen paths, or None.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import SelectionList, Static
from textual.widgets.selection_list import Selection

from todo_agent.core.changes.rewind import FilePlan, RewindPlan

from ..sanitize import sanitize
from ..widgets.preview import render_preview

ACTIONS = {"restore": "restore", "delete": "delete (the task created it)"}


def file_label(item: FilePlan) -> Content:
    path = sanitize(item.path)
    if item.action in ACTIONS:
        parts: list[str | tuple[str, str]] = [(path, "bold"), f" — {ACTIONS[item.action]}"]
        if item.conflict:
            parts.append((f"  ⚠ {item.conflict}", "$text-warning"))
        return Content.assemble(*parts)
    return Content.assemble((path, "bold"), (f" — {item.note}", "$text-muted"))


class RewindScreen(ModalScreen[list[str] | None]):
    CSS_PATH = "changes.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Rewind chosen", tooltip="Put the chosen files back", priority=True),
        Binding("escape,n", "cancel", "Cancel", tooltip="Change nothing", priority=True),
    ]

    def __init__(self, plan: RewindPlan, *, title: str = "", intro: str = "", allow_none: bool = False) -> None:
        """`title` and `intro` for another rewind than a task's (`/rewind` to a prompt);
        `allow_none`: `y` with no file chosen goes on (the rewind does more than files)."""
        super().__init__()
        self.allow_none = allow_none
        self.plan = plan
        self.title_text = title
        self.intro_text = intro

    def compose(self) -> ComposeResult:
        plan = self.plan
        conflicts = sum(1 for f in plan.files if f.conflict)
        with Vertical(id="rewind-dialog") as dialog:
            dialog.border_title = self.title_text or f"Rewind #{plan.task_id} {sanitize(plan.subject)}?"
            dialog.border_subtitle = "space choose · y rewind the chosen files · esc cancel"
            intro = self.intro_text or (
                "Put these files back as they were before the task. The task goes back to pending."
            )
            if conflicts:
                intro += f" {conflicts} changed since: not chosen unless you choose them."
            yield Static(Content(intro), id="rewind-intro", markup=False)
            yield SelectionList[str](
                *(Selection(file_label(f), f.path, f.suggested, disabled=f.action not in ACTIONS) for f in plan.files),
                id="rewind-files",
            )
            yield Static("", id="rewind-diff-title", markup=False)
            with VerticalScroll(id="rewind-diff"):
                yield Static("", id="rewind-diff-text", markup=False)

    def on_mount(self) -> None:
        files = self.query_one(SelectionList)
        files.focus()
        self._show(0)

    @on(SelectionList.SelectionHighlighted)
    def _highlighted(self, event: SelectionList.SelectionHighlighted[str]) -> None:
        self._show(event.selection_index)

    def _show(self, index: int) -> None:
        if not self.plan.files:
            return
        item = self.plan.files[min(index, len(self.plan.files) - 1)]
        if item.conflict and item.diff:
            title = f"{sanitize(item.path)}: {item.conflict}; what changed since:"
        elif item.conflict:  # nothing to diff: a FIFO or a socket took the file's place
            title = f"{sanitize(item.path)}: {item.conflict}"
        elif item.diff:
            title = f"{sanitize(item.path)}: what the rewind undoes:"
        else:
            title = f"{sanitize(item.path)}: {item.note}"
        self.query_one("#rewind-diff-title", Static).update(Content(title))
        self.query_one("#rewind-diff-text", Static).update(render_preview(item.diff, "diff") if item.diff else "")
        self.query_one("#rewind-diff").display = bool(item.diff)

    def action_confirm(self) -> None:
        chosen = list(self.query_one(SelectionList).selected)
        if not chosen and not self.allow_none:
            self.notify("No file chosen: space chooses one, esc cancels.", severity="warning", markup=False)
            return
        self.dismiss(chosen)

    def action_cancel(self) -> None:
        self.dismiss(None)
