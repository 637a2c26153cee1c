"""`/rewind` (or escape twice on an empty prompt): which prompt to go back to, and what of it.

`PromptsScreen` lists the session's prompts since the latest compaction, newest first,
each with what came after it (tool calls, files changed, tasks touched); `enter` picks
one, and then `b`, `c` or `f` says what to take back to just before it: the conversation
and the files, the conversation only, or the files only. Dismisses with
`(checkpoint id, scope)`, or None. Which files (a conflict is not chosen unless the person
chooses it) is `RewindScreen`'s to ask, as for a task.
"""

from __future__ import annotations

import time
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from todo_agent.core.changes.prompt_rewind import PromptRow, Scope

from ..sanitize import sanitize

SCOPES: dict[str, tuple[Scope, str]] = {
    "b": ("both", "the conversation and the files"),
    "c": ("conversation", "the conversation only"),
    "f": ("files", "the files only"),
}


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def row_label(row: PromptRow, *, clock: bool = True) -> Content:
    """`14:02  "add a test"` and, dim, `3 tool calls · 2 files (a.py, b.py) · tasks #1 Add`."""
    text = " ".join(sanitize(row.text).split())
    text = text if len(text) <= 70 else text[:69] + "…"
    after = [_count(row.tool_calls, "tool call")]
    if row.files:
        shown = ", ".join(sanitize(p) for p in row.files[:3]) + (", …" if len(row.files) > 3 else "")
        after.append(f"{_count(len(row.files), 'file')} ({shown})")
    if row.tasks:
        after.append("tasks " + ", ".join(sanitize(t) for t in row.tasks[:3]) + (", …" if len(row.tasks) > 3 else ""))
    stamp = time.strftime("%H:%M  ", time.localtime(row.at)) if clock else ""
    return Content.assemble(stamp, (text, "bold"), "\n   ", (" · ".join(after), "$text-muted"))


class PromptsScreen(ModalScreen[tuple[str, Scope] | None]):
    CSS_PATH = "changes.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "scope('b')", "Both", tooltip="Conversation and files back to before the prompt", show=False),
        Binding("c", "scope('c')", "Conversation", tooltip="The conversation only", show=False),
        Binding("f", "scope('f')", "Files", tooltip="The files only", show=False),
        Binding("escape", "cancel", "Cancel", tooltip="Change nothing", priority=True),
    ]

    def __init__(self, rows: list[PromptRow], *, clock: bool = True) -> None:
        super().__init__()
        self.rows = rows
        self.clock = clock
        self.chosen: PromptRow | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="rewind-dialog") as dialog:
            dialog.border_title = "Rewind to before which prompt?"
            dialog.border_subtitle = "enter choose · esc cancel"
            intro = "Your prompts since the last compaction, newest first, each with what came after it."
            yield Static(Content(intro), id="rewind-intro", markup=False)
            yield OptionList(*(Option(row_label(r, clock=self.clock), id=r.id) for r in self.rows), id="rewind-prompts")
            yield Static("", id="rewind-scope", markup=False)

    def on_mount(self) -> None:
        self.query_one("#rewind-scope").display = False
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected, "#rewind-prompts")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.chosen = next(r for r in self.rows if r.id == event.option.id)
        lines = [f"Back to just before {sanitize(self.chosen.text[:60])!r}:"]
        lines += [f"  {key}  {label}" for key, (_, label) in SCOPES.items()]
        scope = self.query_one("#rewind-scope", Static)
        scope.update(Content("\n".join(lines)))
        scope.display = True
        self.query_one(Vertical).border_subtitle = "b both · c conversation only · f files only · esc cancel"

    def action_scope(self, key: str) -> None:
        if self.chosen is None:
            self.notify("Choose a prompt first (enter).", severity="warning", markup=False)
            return
        self.dismiss((self.chosen.id, SCOPES[key][0]))

    def action_cancel(self) -> None:
        self.dismiss(None)
