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

from todo_agent.core.session import SessionInfo
from todo_agent.core.tools.base import short

from ..sanitize import sanitize


def session_label(info: SessionInfo) -> Content:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
    noun = "message" if info.message_count == 1 else "messages"
    return Content.assemble(
        (short(sanitize(info.title) or "(untitled)", 70), "bold"),
        "\n",
        (f"{when} · {info.message_count} {noun} · {info.id}", "$text-muted"),
    )


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
