"""The status line: activity on the left; model, permission mode and context use on the right."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from ..sanitize import sanitize
from .spinner import Spinner
from .task_panel import format_seconds

MODE_LABELS = {
    "default": "default",
    "acceptEdits": "acceptEdits",
    "plan": "plan",
    "bypassPermissions": "bypassPermissions",
}
"""What the UI calls each permission mode: the names `--permission-mode`, `/mode` and the
README use, so what the status line shows is what a person types."""


def format_tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    return f"{round(count / 1000)}k"


def context_label(used: int, window: int | None) -> str:
    """`ctx 12k/128k (9%)`, or `12k tokens` when the window is unknown."""
    if window:
        return f"ctx {format_tokens(used)}/{format_tokens(window)} ({100 * used // window}%)"
    return f"{format_tokens(used)} tokens"


class StatusLine(Horizontal):
    """One line. The spinner and timer run only while a turn does."""

    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text-muted;
        & > Spinner { margin-right: 1; }
        & > #status-activity { width: 1fr; }
        & > #status-model { width: auto; margin-left: 2; color: $text; }
        & > #status-mode { width: auto; margin-left: 2; }
        & > #status-mode.-acceptEdits { color: $text-warning; }
        & > #status-mode.-plan { color: $text-accent; text-style: bold; }
        & > #status-mode.-bypassPermissions { color: $text-error; text-style: bold; }
        & > #status-context { width: auto; margin-left: 2; }
    }
    """

    mode: reactive[str] = reactive("default")
    busy: reactive[bool] = reactive(False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._started = 0.0
        self._timer: Timer | None = None
        self._activity = "ready"
        self._waiting: str | None = None

    def compose(self) -> ComposeResult:
        yield Spinner(spinning=False)
        yield Static(self._activity, id="status-activity", markup=False)
        yield Static("", id="status-model", markup=False)
        yield Static("", id="status-mode", markup=False)
        yield Static("", id="status-context", markup=False)

    def set_model(self, name: str) -> None:
        self.query_one("#status-model", Static).update(sanitize(name))

    def set_context(self, used: int, window: int | None) -> None:
        self.query_one("#status-context", Static).update(context_label(used, window))

    def watch_mode(self, old: str, new: str) -> None:
        label = self.query_one("#status-mode", Static)
        label.remove_class(f"-{old}")
        label.add_class(f"-{new}")
        label.update(f"{MODE_LABELS.get(new, new)} (shift+tab)")

    def watch_busy(self, busy: bool) -> None:
        self.set_class(busy, "-busy")
        self.query_one(Spinner).spinning = busy
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if busy:
            self._started = time.monotonic()
            if self.app.animation_level != "none":
                self._timer = self.set_interval(1, self._show_activity)
        self._show_activity()

    def set_activity(self, text: str) -> None:
        self._activity = text
        self._show_activity()

    def set_waiting(self, tool: str | None) -> None:
        """While an approval is open, say so: it wins over whatever the turn reports."""
        self._waiting = f"waiting for your approval · {tool}" if tool else None
        if self.is_attached:
            self._show_activity()

    def _show_activity(self) -> None:
        text = self._waiting or self._activity
        if self.busy:
            elapsed = format_seconds(time.monotonic() - self._started) if self._timer is not None else "0s"
            # While the modal is open, esc answers it ("no") rather than interrupting.
            text = f"{text} · {elapsed} · {'esc = no' if self._waiting else 'esc to interrupt'}"
        self.query_one("#status-activity", Static).update(text)
