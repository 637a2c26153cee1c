"""A one-cell spinner: the only thing that redraws while the agent works."""

from __future__ import annotations

import time

from textual.timer import Timer
from textual.widgets import Static

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Spinner(Static):
    """Cycles through braille frames while it is `spinning` and shown.

    Tests and screenshots set `App.animation_level = "none"`, which freezes every spinner
    on its first frame so output is deterministic. A spinner that is not spinning is
    hidden and its timer stopped: nothing on screen moves while nothing is running.
    """

    DEFAULT_CSS = """
    Spinner {
        width: 1;
        height: 1;
        color: $accent;
        &.-stopped { display: none; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None, spinning: bool = True) -> None:
        super().__init__(FRAMES[0], id=id, classes=classes, markup=False)
        self._frame = 0
        self._timer: Timer | None = None
        self._spinning = spinning
        self._resting_until = 0.0
        self.set_class(not spinning, "-stopped")

    def rest(self, seconds: float) -> None:
        """Keep still for `seconds` (again from now at each call): something else on screen
        shows the work meanwhile, and each repaint of the spinner is a screen update of its
        own (the one cell, but the compositor's fixed cost), 10 a second."""
        self._resting_until = time.monotonic() + seconds

    @property
    def spinning(self) -> bool:
        return self._spinning

    @spinning.setter
    def spinning(self, value: bool) -> None:
        if value == self._spinning:
            return
        self._spinning = value
        self.set_class(not value, "-stopped")
        if self._timer is not None:
            if value:
                self._timer.resume()
            else:
                self._timer.pause()

    @property
    def ticking(self) -> bool:
        """Whether its timer is running (never with animations off, never when stopped)."""
        return self._timer is not None and self._spinning

    def on_mount(self) -> None:
        if self.app.animation_level != "none":
            self._timer = self.set_interval(1 / 10, self._tick, pause=not self._spinning)

    def _tick(self) -> None:
        if time.monotonic() < self._resting_until:
            return
        self._frame = (self._frame + 1) % len(FRAMES)
        # One cell whatever the frame: repaint it, never lay out the screen (10 times a second).
        self.update(FRAMES[self._frame], layout=False)
