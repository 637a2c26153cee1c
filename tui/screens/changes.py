"""What one task changed: its combined diff, scrollable and coloured like an approval's.

Opened with `enter` on a task in the panel. The diff comes from the record of changes
(each file from before the task first touched it to what the task left), so task #2's
diff is its own even when task #3 edited the same file later. File contents are drawn
through `render_preview`: never read as markup, control characters made visible.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from ..sanitize import sanitize
from ..widgets.preview import render_preview

MAX_LINES = 5000
"""A task's diff longer than this is cut with a note saying how much more there is."""


class ChangesScreen(ModalScreen[None]):
    """Shows a task's diff; escape (or q, enter) closes it."""

    CSS_PATH = "changes.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "close", "Close", tooltip="Back to the task panel"),
        Binding("pagedown,space", "scroll(1)", "Page down", tooltip="Scroll the diff down a page", show=False),
        Binding("pageup", "scroll(-1)", "Page up", tooltip="Scroll the diff up a page", show=False),
        Binding("down,j", "line(1)", "Down", tooltip="Scroll the diff down a line", show=False),
        Binding("up,k", "line(-1)", "Up", tooltip="Scroll the diff up a line", show=False),
    ]

    def __init__(self, task_id: str, subject: str, summary: str, diff: str) -> None:
        super().__init__()
        self.task_id = task_id
        self.subject = subject
        self.summary = summary
        self.diff = diff

    def compose(self) -> ComposeResult:
        with Vertical(id="changes-dialog") as dialog:
            dialog.border_title = f"#{self.task_id} {sanitize(self.subject)}"
            dialog.border_subtitle = "esc close · pgup/pgdn scroll"
            yield Static(Content(self.summary or "This task changed no files."), id="changes-summary", markup=False)
            if self.diff:
                with VerticalScroll(id="changes-diff"):
                    yield Static(render_preview(self.diff, "diff", limit=MAX_LINES), markup=False)

    def on_mount(self) -> None:
        if self.diff:
            self.query_one("#changes-diff").focus()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_scroll(self, direction: int) -> None:
        view = self.query_one("#changes-diff", VerticalScroll) if self.diff else None
        if view is not None:
            (view.scroll_page_down if direction > 0 else view.scroll_page_up)(animate=False)

    def action_line(self, direction: int) -> None:
        if self.diff:
            self.query_one("#changes-diff", VerticalScroll).scroll_relative(y=direction, animate=False)
