"""A vertical scrollbar that is drawn again only when its thumb moves on screen.

Textual repaints a scrollbar whenever the position or a size it follows changes: every
frame while the conversation follows a streaming answer, though the thumb moves by an
eighth of a cell now and then. Each repaint is ~1 ms (its whole column of styled cells):
about 0.5 s of the 6 CPU seconds of 21 s of paced streaming (`benchmarks/README.md`).
"""

from __future__ import annotations

from math import ceil

from textual.reactive import Reactive
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.widget import Widget

Thumb = tuple[int, ...]


class SteadyScrollBar(ScrollBar):
    """Repaints when the thumb's cells (to the eighth, as Textual draws them) change, or
    when hovered, grabbed or resized (Textual's own reasons, unchanged)."""

    window_virtual_size: Reactive[int] = Reactive(100, repaint=False)
    window_size: Reactive[int] = Reactive(0, repaint=False)
    position: Reactive[float] = Reactive(0, repaint=False)

    def __init__(self, vertical: bool = True, name: str | None = None, *, thickness: int = 1) -> None:
        super().__init__(vertical, name, thickness=thickness)
        self._thumb: Thumb = ()
        self._check_pending = False

    def watch_window_virtual_size(self) -> None:
        self._check_soon()

    def watch_window_size(self) -> None:
        self._check_soon()

    def watch_position(self) -> None:
        self._check_soon()

    def _check_soon(self) -> None:
        """Look once all of this change is in: the length grows before the position follows,
        and between the two the thumb's first eighth would step back and forth each frame."""
        if not self._check_pending:
            self._check_pending = True
            self.call_next(self._repaint_if_moved)

    def _repaint_if_moved(self) -> None:
        self._check_pending = False
        thumb = self.thumb()
        if thumb != self._thumb:
            self._thumb = thumb
            self.refresh()

    def thumb(self) -> Thumb:
        """The bar's length and its thumb's first and last eighth of a cell: the same
        arithmetic as `ScrollBarRender.render_bar`, which draws from these alone."""
        size = self.size.height if self.vertical else self.size.width
        window = ceil(self.window_size if self.window_size < self.window_virtual_size else 0)
        virtual = ceil(self.window_virtual_size)
        if not (window and size and virtual and size != virtual):
            return (size,)
        eighths = len(ScrollBarRender.VERTICAL_BARS if self.vertical else ScrollBarRender.HORIZONTAL_BARS)
        thumb_size = max(1, window / (virtual / size))
        start = int((size - thumb_size) * (self.position / (virtual - window)) * eighths)
        return (size, start, start + ceil(thumb_size * eighths))


def steady_vertical_scrollbar(widget: Widget) -> ScrollBar:
    """`widget.vertical_scrollbar` as Textual makes it (`Widget.vertical_scrollbar`), but a
    `SteadyScrollBar`. Uses two private names of Textual's (held by its version bound;
    `tests/test_tui_conversation.py` fails if they change)."""
    if widget._vertical_scrollbar is None:
        bar = SteadyScrollBar(vertical=True, name="vertical", thickness=widget.scrollbar_size_vertical)
        bar.display = False
        widget._vertical_scrollbar = bar
        widget.app._start_widget(widget, bar)
    return widget._vertical_scrollbar
