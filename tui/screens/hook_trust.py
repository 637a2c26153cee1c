"""Asking once whether the project's hooks may run.

Hooks in `.todo-agent/settings.toml` came with the repository, and each is a shell
command that would run without asking. At start-up, if the project has hooks the person
has not accepted (or they changed since), this modal lists every command and asks.
Dismisses with True (run them, and remember this set for this project) or False (not
this session; the question comes back next time). `escape` is no.

Every byte that would run is shown, as in the tool approval: control characters and
escape sequences as symbols (`␛]0;…␇` would otherwise set the window title and hide
what follows it), runs of blank lines folded into one counted line (a `touch x` sixty
blank lines below `echo one` stays in sight), and a warning when anything was hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from todo_agent.core.hooks.spec import HookSpec
from todo_agent.core.terminal import reveal, reveal_line

from ..widgets.preview import collapse_blank_runs, has_hidden_characters

HIDDEN_WARNING = "⚠ A command or matcher holds control or invisible characters, shown as ␛, ␍, <U+…>."


def hook_line(spec: HookSpec) -> Content:
    """The event, its matcher and the whole command: each line of it, below the first
    lined up under it, runs of blank lines as one `⋯ N blank lines`."""
    label = spec.event + (f" [{reveal_line(spec.matcher)}]" if spec.matcher else "")
    pieces: list[str | tuple[str, str]] = [(label, "bold"), "  "]
    indent = " " * (len(label) + 2)
    for index, (line, marker) in enumerate(collapse_blank_runs(reveal(spec.command).split("\n"))):
        if index:
            pieces += ["\n", indent]
        pieces.append((line, "dim italic") if marker else line)
    return Content.assemble(*pieces)


def has_hidden(spec: HookSpec) -> bool:
    return has_hidden_characters(spec.command, "command") or has_hidden_characters(spec.matcher, "command")


class HookTrustScreen(ModalScreen[bool]):
    """The project's hook commands, and the person's yes or no."""

    CSS_PATH = "hook_trust.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Run them", tooltip="Run these hooks; remember this for this project"),
        Binding("n", "answer(False)", "Not now", tooltip="Do not run them this session; ask again next time"),
        Binding("escape", "answer(False)", "Not now", tooltip="Do not run them this session", show=False),
    ]

    def __init__(self, hooks: Sequence[HookSpec], settings_path: Path) -> None:
        super().__init__()
        self.hooks = list(hooks)
        self.settings_path = settings_path

    def compose(self) -> ComposeResult:
        with Vertical(id="hook-trust-dialog") as dialog:
            dialog.border_title = "Run this project's hooks?"
            yield Static(
                Content(
                    f"{self.settings_path} asks to run these shell commands on agent events, without asking "
                    "each time. Run them only if you trust this repository."
                ),
                id="hook-trust-intro",
            )
            if any(has_hidden(spec) for spec in self.hooks):
                yield Static(Content(HIDDEN_WARNING), id="hook-trust-hidden")
            with VerticalScroll(id="hook-trust-list"):
                for spec in self.hooks:
                    yield Static(hook_line(spec), classes="hook-trust-command")
            yield Static(
                Content.assemble(
                    ("y", "bold"), " run them (remembered until they change)   ", ("n", "bold"), " not now"
                ),
                id="hook-trust-keys",
            )
        yield Footer()

    def action_answer(self, accepted: bool) -> None:
        self.dismiss(accepted)
