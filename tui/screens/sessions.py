"""The session picker (`/resume`): earlier sessions of this directory, newest first."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from todo_agent.core.session.directory import SessionInfo
from todo_agent.core.tools.base import short

from ..sanitize import sanitize


def session_label(info: SessionInfo) -> Content:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
    return Content.assemble(
        (short(sanitize(info.title) or "(untitled)", 70), "bold"),
        "\n",
        (f"{when} · {format_size(info.size)} · {info.id}", "$text-muted"),
    )


def format_size(size: int) -> str:
    """`812 B`, `14 KB`, `2.3 MB`: how long a session is, read from its file size (the
    picker reads no transcripts, so it cannot count messages)."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


class SessionsScreen(ModalScreen[str | None]):
    """Dismisses with the chosen session id, or None."""

    CSS_PATH = "sessions.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", tooltip="Close without switching sessions"),
    ]

    def __init__(self, sessions: Sequence[SessionInfo]) -> None:
        super().__init__()
        self.sessions = sorted(sessions, key=lambda s: s.updated, reverse=True)

    def compose(self) -> ComposeResult:
        with Vertical(id="sessions-dialog") as dialog:
            dialog.border_title = "Resume a session"
            dialog.border_subtitle = "enter resume · esc cancel"
            if self.sessions:
                yield OptionList(
                    *(Option(session_label(s), id=s.id) for s in self.sessions),
                    id="sessions-list",
                )
            else:
                yield Static("No earlier sessions in this directory.", id="sessions-empty", markup=False)

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(OptionList.OptionSelected, "#sessions-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)
