"""`/shells`: the session's background commands, `x` to stop one, `enter` to see its output.

Each line: id, how it stands (`running · 2 min 3 s`, `ended after 3.1 s: Exit code 0`,
`killed after 40 s`), the task in progress when it started, the command, and its last
line. The list redraws every second while open (the commands go on by themselves). All
text a command printed is sanitized: never markup, never a terminal escape.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from todo_agent.core.tools.base import short
from todo_agent.core.tools.shells import Shell, Shells

from ..sanitize import sanitize

OUTPUT_SHOWN = 64 * 1024
"""Bytes of a command's output `enter` shows (its end)."""


def shell_label(shell: Shell) -> Content:
    task = f" · #{shell.task_id}" if shell.task_id else ""
    state_style = "$text-success" if shell.running else "$text-muted"
    last = shell.last_line()
    return Content.assemble(
        (shell.id, "bold"),
        "  ",
        (shell.state(), state_style),
        (task, "$text-muted"),
        "  ",
        short(sanitize(shell.command), 70),
        *(("\n", ("    " + short(sanitize(last), 90), "$text-muted")) if last else ()),
    )


class ShellsScreen(ModalScreen[None]):
    CSS_PATH = "shells.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", tooltip="Back to the conversation"),
        Binding("x", "stop", "Stop", tooltip="Stop the chosen command and everything it started"),
    ]

    def __init__(self, shells: Shells) -> None:
        super().__init__()
        self.shells = shells
        self.shown: str | None = None
        """The shell whose output is open below the list."""

    def compose(self) -> ComposeResult:
        with Vertical(id="shells-dialog") as dialog:
            dialog.border_title = "Background commands"
            dialog.border_subtitle = "enter output · x stop · esc close"
            yield OptionList(id="shells-list")
            yield Static("No background commands in this session.", id="shells-empty", markup=False)
            yield Static("", id="shells-output", markup=False)

    def on_mount(self) -> None:
        self.refresh_list()
        self.set_interval(1, self.refresh_list)

    def refresh_list(self) -> None:
        listing = self.query_one("#shells-list", OptionList)
        shells = sorted(self.shells.shells.values(), key=lambda s: (not s.running, -s.started))
        current = self._chosen()
        chosen = current.id if current is not None else None
        listing.clear_options()
        listing.add_options([Option(shell_label(s), id=s.id) for s in shells])
        ids = [s.id for s in shells]
        if ids:
            listing.highlighted = ids.index(chosen) if chosen in ids else 0
        listing.display = bool(ids)
        self.query_one("#shells-empty").display = not ids
        if self.shown is not None:
            self._show_output(self.shown)

    def _chosen(self) -> Shell | None:
        listing = self.query_one("#shells-list", OptionList)
        if listing.highlighted is None or not listing.option_count:
            return None
        return self.shells.shells.get(str(listing.get_option_at_index(listing.highlighted).id))

    def _show_output(self, shell_id: str) -> None:
        shell = self.shells.shells.get(shell_id)
        pane = self.query_one("#shells-output", Static)
        if shell is None:
            pane.update("")
            return
        data = shell.since(max(0, shell.total - OUTPUT_SHOWN)).decode("utf-8", errors="replace")
        lines = data.splitlines()[-200:]
        pane.update(Content.assemble((f"{shell.id}: {shell.state()}\n", "bold"), sanitize("\n".join(lines))))

    @on(OptionList.OptionSelected, "#shells-list")
    def _open(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.shown = str(event.option.id)
        self._show_output(self.shown)

    async def action_stop(self) -> None:
        shell = self._chosen()
        if shell is not None and shell.running:
            self.notify(await self.shells.kill(shell), title="Background commands", markup=False)
            self.refresh_list()

    def action_close(self) -> None:
        self.dismiss(None)
