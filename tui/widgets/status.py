"""The status line: activity on the left, then a running goal (`goal 3/5 verified · 12 min ·
210k tok`); model, permission mode, MCP servers (`mcp 2/3`, when any is configured) and
context use on the right.

When the full line does not fit it drops its key hints (`(shift+tab)`, `esc to
interrupt`) and shortens the approval wait; then a long model name is cut with an
ellipsis. Words are never cut in half: the activity, mode and context stay whole.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from todo_agent.core.events import Usage
from todo_agent.core.sandbox import MARK as SANDBOX_MARK

from ..sanitize import sanitize
from .spinner import Spinner

MODE_LABELS = {
    "default": "default",
    "acceptEdits": "acceptEdits",
    "plan": "plan",
    "bypassPermissions": "bypassPermissions",
}
"""What the UI calls each permission mode: the names `--permission-mode`, `/mode` and the
README use, so what the status line shows is what a person types."""


def format_seconds(value: float) -> str:
    """`45s`, `1m15s`, `1h01m`: a turn's clock, a task's time in progress."""
    seconds = round(value)
    if value < 1:
        return "<1s"
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


def format_tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    return f"{round(count / 1000)}k"


def usage_detail(usage: Usage) -> str:
    """`last response: 12,345 prompt tokens (8,192 cached) · 420 completion (300 reasoning)`."""
    if usage.estimated:
        return f"last response: about {usage.prompt_tokens:,} prompt tokens (estimated: the server sent no usage)"
    cached = f" ({usage.cached_tokens:,} cached)" if usage.cached_tokens else ""
    reasoning = f" ({usage.reasoning_tokens:,} reasoning)" if usage.reasoning_tokens else ""
    return (
        f"last response: {usage.prompt_tokens:,} prompt tokens{cached} · "
        f"{usage.completion_tokens:,} completion{reasoning}"
    )


def context_label(used: int, window: int | None) -> str:
    """`ctx 12k/128k (9%)`, or `12k tokens` when the window is unknown."""
    if window:
        return f"ctx {format_tokens(used)}/{format_tokens(window)} ({100 * used // window}%)"
    return f"{format_tokens(used)} tokens"


MIN_MODEL_CELLS = 8
"""A model name is never cut shorter than this (with its ellipsis)."""
SPINNER_REST = 0.5
"""Seconds the spinner keeps still after the last piece of an answer's text arrived."""


@dataclass(frozen=True)
class _Wording:
    """One way to word the left part and the mode; the line uses the first that fits."""

    activity: str
    mode: str


class StatusLine(Horizontal):
    """One line. The spinner and timer run only while a turn does."""

    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text-muted;
        & > Spinner { margin-right: 1; }
        & > Static { text-wrap: nowrap; text-overflow: ellipsis; }
        & > #status-activity { width: 1fr; }
        & > #status-goal { width: auto; margin-left: 2; color: $text-accent; display: none; }
        & > #status-model { width: auto; margin-left: 2; color: $text; }
        & > #status-mode { width: auto; margin-left: 2; }
        & > #status-mode.-acceptEdits { color: $text-warning; }
        & > #status-mode.-plan { color: $text-accent; text-style: bold; }
        & > #status-mode.-bypassPermissions { color: $text-error; text-style: bold; }
        & > #status-context { width: auto; margin-left: 2; }
        & > #status-mcp { width: auto; margin-left: 2; display: none; }
        & > #status-mcp.-failing { color: $text-warning; }
        & > #status-shells { width: auto; margin-left: 2; display: none; color: $text-accent; }
    }
    """

    mode: reactive[str] = reactive("default")
    busy: reactive[bool] = reactive(False)
    clock = staticmethod(time.monotonic)
    """Where the turn's and the approval's elapsed time come from (tests set their own)."""

    def __init__(self, *, id: str | None = None, activity: str = "ready", mode: str | None = None) -> None:
        """`activity` and `mode`: what the first frame shows, before the line is sized."""
        super().__init__(id=id)
        self._first_mode = mode or "default"
        if mode is not None:
            self.set_reactive(StatusLine.mode, mode)
        self._started = 0.0
        self._activity_since: float | None = None
        self._timer: Timer | None = None
        self._activity = activity
        self._countdown: tuple[Callable[[float], str], float] | None = None
        """While a failed request waits to be retried: what to say with the seconds left, and when the wait ends."""
        self._countdown_timer: Timer | None = None
        self._waiting: str | None = None
        self._waiting_since = 0.0
        self._model_name = ""
        self._context_text = ""
        self._mcp_text = ""
        self._shells_text = ""
        self._goal_text = ""
        self._sandboxed = False

    def compose(self) -> ComposeResult:
        # The fullest idle wording until `_fit` knows the width: the first frame is drawn
        # before that. (Not `_wordings()`: reading a reactive here would run its watchers.)
        mode = self._first_mode
        yield Spinner(spinning=False)
        yield Static(self._activity, id="status-activity", markup=False)
        yield Static("", id="status-goal", markup=False)
        yield Static("", id="status-model", markup=False)
        yield Static(f"{MODE_LABELS.get(mode, mode)} (shift+tab)", id="status-mode", classes=f"-{mode}", markup=False)
        yield Static("", id="status-mcp", markup=False)
        yield Static("", id="status-shells", markup=False)
        yield Static("", id="status-context", markup=False)

    def set_model(self, name: str) -> None:
        self._model_name = sanitize(name)
        self.query_one("#status-model", Static).update(self._model_name)
        self._fit()

    def set_context(self, used: int, window: int | None) -> None:
        self._context_text = context_label(used, window)
        self.query_one("#status-context", Static).update(self._context_text)
        self._fit()

    def set_goal(self, text: str) -> None:
        """`goal 3/5 verified · 12 min · 210k tok` while a goal runs; empty: none."""
        self._goal_text = text
        label = self.query_one("#status-goal", Static)
        label.update(text)
        label.display = bool(text)
        self._fit()

    def set_sandbox(self, on: bool) -> None:
        """`⛶` after the mode while the model's commands run in the sandbox."""
        self._sandboxed = on
        self._fit()

    def set_usage_detail(self, text: str) -> None:
        """What the last response cost, as the context gauge's tooltip."""
        self.query_one("#status-context", Static).tooltip = text or None

    def set_mcp(self, connected: int, total: int, failing: bool = False) -> None:
        """`mcp 2/3`: servers connected of those enabled (nothing when none is configured);
        `failing` colours it when one has failed."""
        self._mcp_text = f"mcp {connected}/{total}" if total else ""
        label = self.query_one("#status-mcp", Static)
        label.update(self._mcp_text)
        label.display = bool(total)
        label.set_class(failing, "-failing")
        self._fit()

    def set_shells(self, running: int) -> None:
        """`⚙ 2 shells`: background commands running (nothing when none is)."""
        self._shells_text = f"⚙ {running} shell{'' if running == 1 else 's'}" if running else ""
        label = self.query_one("#status-shells", Static)
        label.update(self._shells_text)
        label.display = bool(running)
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def watch_mode(self, old: str, new: str) -> None:
        label = self.query_one("#status-mode", Static)
        label.remove_class(f"-{old}")
        label.add_class(f"-{new}")
        self._fit()

    def watch_busy(self, busy: bool) -> None:
        self.set_class(busy, "-busy")
        self.query_one(Spinner).spinning = busy
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if busy:
            self._started = self.clock()
            if self.app.animation_level != "none":
                self._timer = self.set_interval(1, self._fit)
        self._fit()

    def set_activity(self, text: str, *, timed: bool = False) -> None:
        """`timed`: the clock counts from now (a tool call's own time) instead of from the
        start of the turn, until the next activity."""
        self._stop_countdown()
        self._activity = text
        self._activity_since = self.clock() if timed else None
        self._fit()

    def text_arriving(self) -> None:
        """An answer's text is streaming in: the spinner rests while it does (the text
        shows the work), and moves again half a second after the last of it."""
        self.query_one(Spinner).rest(SPINNER_REST)

    def count_down(self, say: Callable[[float], str], seconds: float) -> None:
        """Show `say(seconds left)` as the activity, updated every second (animations off
        too: it is information, not decoration) until the next `set_activity`."""
        self._stop_countdown()
        self._countdown = (say, self.clock() + seconds)
        self._countdown_timer = self.set_interval(1, self._fit)
        self._fit()

    def _stop_countdown(self) -> None:
        self._countdown = None
        if self._countdown_timer is not None:
            self._countdown_timer.stop()
            self._countdown_timer = None

    def _current_activity(self) -> str:
        if self._countdown is None:
            return self._activity
        say, until = self._countdown
        return say(until - self.clock())

    def set_waiting(self, tool: str | None) -> None:
        """While an approval is open, say so: it wins over whatever the turn reports, and
        its clock counts from when the question appeared."""
        self._waiting = tool
        self._waiting_since = self.clock()
        if self.is_attached:
            self._fit()

    def _wordings(self) -> list[_Wording]:
        """From the fullest wording to the shortest: hints go first, then the clock."""
        mode = MODE_LABELS.get(self.mode, self.mode) + (f" {SANDBOX_MARK}" if self._sandboxed else "")
        what = f"approval · {self._waiting}" if self._waiting else self._current_activity()
        if not self.busy:
            return [_Wording(what, f"{mode} (shift+tab)"), _Wording(what, mode)]
        since = self._waiting_since if self._waiting else (self._activity_since or self._started)
        elapsed = format_seconds(self.clock() - since) if self._timer is not None else "0s"
        # While the modal is open, esc answers it ("no") rather than interrupting.
        if self._waiting:
            full = f"waiting for your approval · {self._waiting} · {elapsed} · esc = no"
            short = f"{what} · {elapsed} · esc = no"
        else:
            full, short = f"{what} · {elapsed} · esc to interrupt", f"{what} · {elapsed}"
        return [_Wording(full, f"{mode} (shift+tab)"), _Wording(short, mode), _Wording(what, mode)]

    def _fit(self) -> None:
        """Use the fullest wording that fits beside the context and the model name; cut a
        long model name, or leave it out, before cutting any other word."""
        if not self.size.width:
            return
        room = self.size.width - (2 if self.busy else 0)  # the spinner and its margin
        room -= cell_len(self._context_text) + 2  # 2: the margin before it (and below)
        room -= cell_len(self._mcp_text) + 2 if self._mcp_text else 0
        room -= cell_len(self._shells_text) + 2 if self._shells_text else 0
        room -= cell_len(self._goal_text) + 2 if self._goal_text else 0
        wordings = self._wordings()

        def needs(w: _Wording) -> int:
            return cell_len(w.activity) + cell_len(w.mode) + 2

        model = cell_len(self._model_name) + 2
        least = min(model, MIN_MODEL_CELLS + 2)
        tries = [(w, model) for w in wordings[:2]] + [(w, least) for w in wordings[1:]]
        chosen = next((w for w, name in tries if needs(w) + name <= room), wordings[-1])
        # The activity takes the room left (`1fr`): new words never change its size, so a
        # repaint will do. A layout would arrange the whole screen again, every second
        # of a turn as the clock ticks.
        _show(self.query_one("#status-activity", Static), chosen.activity, layout=False)
        _show(self.query_one("#status-mode", Static), chosen.mode)
        spare = room - needs(chosen) - 2
        label = self.query_one("#status-model", Static)
        label.display = spare >= MIN_MODEL_CELLS
        limit = spare if spare < model - 2 else None
        current = label.styles.max_width
        if (current.cells if current is not None else None) != limit:  # a change re-lays the line out
            label.styles.max_width = limit


def _show(label: Static, text: str, *, layout: bool = True) -> None:
    if str(label.content) != text:  # an update re-lays the line out, even to the same text
        label.update(text, layout=layout)
