"""A one-cell spinner: the only thing that redraws while the agent works."""

from __future__ import annotations

from textual.timer import Timer
from textual.widgets import Static

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Spinner(Static):
    """Cycles through braille frames while mounted, unless the app turns animation off.

    Tests and screenshots set `App.animation_level = "none"`, which freezes every spinner
    on its first frame so output is deterministic.
    """

    DEFAULT_CSS = """
    Spinner {
        width: 1;
        height: 1;
        color: $accent;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(FRAMES[0], id=id, classes=classes, markup=False)
        self._frame = 0
        self._timer: Timer | None = None

    def on_mount(self) -> None:
        if self.app.animation_level != "none":
            self._timer = self.set_interval(1 / 10, self._tick)

    def _tick(self) -> None:
        self._frame = (self._frame + 1) % len(FRAMES)
        # One cell whatever the frame: repaint it, never lay out the screen (10 times a second).
        self.update(FRAMES[self._frame], layout=False)
