"""Asking once whether the project's hooks may run (a `TrustScreen`, see `trust.py`).

Hooks in `.todo-agent/settings.toml` came with the repository, and each is a shell
command that would run on agent events without asking. This lists every command with its
event and matcher, and the workspace code it runs (a change to that asks again).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content

from todo_agent.core.hooks.spec import HookSpec
from todo_agent.core.terminal import reveal_line

from .trust import TrustScreen, hides, revealed


def hook_line(spec: HookSpec, code: Sequence[str] = ()) -> Content:
    """The event, its matcher and the whole command; then what it runs of the workspace."""
    line = revealed(spec.event + (f" [{reveal_line(spec.matcher)}]" if spec.matcher else ""), spec.command)
    return Content("\n").join([line, *(Content("  " + reveal_line(text)) for text in code)])


class HookTrustScreen(TrustScreen):
    """The project's hook commands, and the person's yes or no."""

    QUESTION = "Run this project's hooks?"
    YES = "run them"
    HIDDEN_WARNING = "⚠ A command or matcher holds control or invisible characters, shown as ␛, ␍, <U+…>."
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Run them", tooltip="Run these hooks; remember this for this project"),
        Binding("n", "answer(False)", "Not now", tooltip="Do not run them this session; ask again next time"),
        Binding("escape", "answer(False)", "Not now", tooltip="Do not run them this session", show=False),
    ]

    def __init__(
        self,
        hooks: Sequence[HookSpec],
        settings_path: Path,
        code: Callable[[HookSpec], Sequence[str]] = lambda spec: (),
    ) -> None:
        """`code`: what each hook runs of the workspace, in lines (`core/hooks/code.py`)."""
        self.hooks = list(hooks)
        super().__init__(
            f"{settings_path} asks to run these shell commands on agent events, without asking each time. "
            "Run them only if you trust this repository.",
            [hook_line(spec, code(spec)) for spec in self.hooks],
            hidden=any(hides(spec.command, spec.matcher) for spec in self.hooks),
        )
