"""A message's Markdown drawn piece by piece, only the pieces that come into view.

An answer is a sequence of pieces (`markdown_blocks`): whole top-level blocks, and slices
of a long fence or paragraph. Each is rendered on its own with Rich, with one blank line
before each block (none between the slices of one) and the `● ` gutter on the message's
first line; a piece not drawn yet counts with an estimated height. So a 2 MB answer
streams and scrolls at the cost of what is on screen, and the same lines serve the live
message and the finished one.
"""

from __future__ import annotations

from bisect import bisect_right

from rich.segment import Segment
from textual.strip import Strip

from .markdown_blocks import Piece, renderable
from .painter import Painter, spacing

GUTTER = 2
"""Columns of `● ` before the text of a message."""


def block_lines(piece: Piece, width: int, painter: Painter) -> list[Strip]:
    """One piece's lines, without the blank lines Rich puts around some blocks (a code
    slice keeps only the edges of its box that are its own)."""
    lines = painter.rich(renderable(piece), width, painter.style())
    if piece.kind == "code":  # Syntax's padding rows: the box's top and bottom edges
        if not (piece.source.rstrip() if piece.closes else piece.source):
            return [line for line, own in ((lines[0], piece.opens), (lines[-1], piece.closes)) if own]
        return lines[0 if piece.opens else 1 : len(lines) if piece.closes else -1]
    start, end = 0, len(lines)
    while start < end and _is_blank(lines[start]):
        start += 1
    while end > start and _is_blank(lines[end - 1]):
        end -= 1
    return lines[start:end]


def _is_blank(strip: Strip) -> bool:
    """No text and no background: spacing, not part of the block (a code block's padding has a background)."""
    return all(not text.strip() and not (style and style.bgcolor) for text, style, _ in strip)


def estimate_lines(piece: Piece, width: int) -> int:
    """About how many lines `piece` takes at `width`, without rendering it."""
    # A whole fence's two rule lines become the padding lines of its box: the same count.
    lines = piece.source.rstrip("\n").split("\n")
    wrapped = sum(max(1, -(-len(line) // max(1, width))) for line in lines)
    if piece.kind == "code":
        wrapped += piece.opens + piece.closes - (not piece.source.strip())
    return wrapped


def decorate(lines: list[Strip], painter: Painter, *, first: bool, opens: bool = True) -> list[Strip]:
    """A piece's lines as the message shows them: after a blank line (unless it is the
    message's first piece or does not open a block), with `● ` before the message's first
    line and two spaces before others."""
    if not lines:
        return []
    style = painter.style()
    bullet, indent = Strip([Segment("● ", style.rich_style)], GUTTER), spacing(GUTTER, style)
    decorated = [Strip.join([bullet if first and n == 0 else indent, line]) for n, line in enumerate(lines)]
    return decorated if first or not opens else [painter.blank(GUTTER + lines[0].cell_length), *decorated]


KEPT_LINES = 1_000
"""Lines of one message kept drawn (the pieces most recently drawn; at least ten screens);
older pieces keep their height and are drawn again if they come back into view. A 2 MB
answer drawn as it streamed would otherwise keep every line it showed, and every full
collection of the garbage collector would walk them all (100 ms and more, keys waiting)."""


class MarkdownBody:
    """The final pieces of a message at one width, each drawn when first in view."""

    def __init__(self, width: int) -> None:
        self.width = width
        """The width of the text, without the gutter."""
        self._pieces: list[Piece] = []
        self._lines: list[list[Strip] | None] = []
        """Each piece's lines as shown (blank line and gutter included), None until drawn."""
        self._heights: list[int] = []
        self._tops: list[int] = [0]
        """Where each piece starts, and (last) the height of the whole; valid up to `_valid`."""
        self._valid = 0
        self._drawn: dict[int, None] = {}
        """The pieces whose lines are kept, least recently drawn first."""
        self._kept = 0
        """Lines kept, all pieces together."""

    def __len__(self) -> int:
        return len(self._pieces)

    @property
    def pieces(self) -> list[Piece]:
        return list(self._pieces)

    @property
    def drawn(self) -> bool:
        """Whether any piece is drawn."""
        return bool(self._drawn)

    @property
    def kept(self) -> int:
        """Lines kept drawn (at most about `KEPT_LINES`)."""
        return self._kept

    def add(self, piece: Piece, painter: Painter, lines: list[Strip] | None = None) -> None:
        """Append a final piece; `lines`: already rendered (by `block_lines`) at this width."""
        first = not self._pieces
        self._pieces.append(piece)
        self._lines.append(None)
        shown = None if lines is None else decorate(lines, painter, first=first, opens=piece.opens)
        if shown is not None:
            self._keep(len(self._pieces) - 1, shown)
        estimate = estimate_lines(piece, self.width) + (piece.opens and not first)
        self._heights.append(len(shown) if shown is not None else estimate)

    def drop_last(self, count: int) -> None:
        """Forget the last `count` pieces (a paragraph that turned out to be something else)."""
        if count:
            keep = len(self._pieces) - count
            del self._pieces[keep:], self._lines[keep:], self._heights[keep:]
            self._valid = min(self._valid, keep)
            for index in [i for i in self._drawn if i >= keep]:
                del self._drawn[index]
            self._kept = sum(len(self._lines[i] or []) for i in self._drawn)

    @property
    def height(self) -> int:
        return self._placed()[-1]

    def _placed(self) -> list[int]:
        heights, tops = self._heights, self._tops
        if self._valid < len(heights):
            del tops[self._valid + 1 :]
            for height in heights[self._valid :]:
                tops.append(tops[-1] + height)
            self._valid = len(heights)
        return tops

    def _draw_block(self, index: int, painter: Painter) -> None:
        piece = self._pieces[index]
        lines = decorate(block_lines(piece, self.width, painter), painter, first=index == 0, opens=piece.opens)
        self._keep(index, lines)
        if len(lines) != self._heights[index]:
            self._heights[index] = len(lines)
            self._valid = min(self._valid, index)

    def _keep(self, index: int, lines: list[Strip]) -> None:
        old = self._lines[index]
        self._kept += len(lines) - (len(old) if old is not None else 0)
        self._lines[index] = lines
        self._drawn.pop(index, None)
        self._drawn[index] = None
        while self._kept > KEPT_LINES and len(self._drawn) > 1:
            oldest = next(iter(self._drawn))
            del self._drawn[oldest]
            self._kept -= len(self._lines[oldest] or [])
            self._lines[oldest] = None

    def draw(self, start: int, end: int, painter: Painter) -> bool:
        """Draw the blocks that lines `start` to `end` fall in; whether any was drawn."""
        tops = self._placed()
        first = max(0, bisect_right(tops, start) - 1)
        last = min(len(self._pieces), bisect_right(tops, max(start, end - 1)))
        todo = [i for i in range(first, last) if self._lines[i] is None]
        for index in todo:
            self._draw_block(index, painter)
        return bool(todo)

    def line(self, y: int, painter: Painter) -> Strip:
        tops = self._placed()
        index = bisect_right(tops, y) - 1
        if self._lines[index] is None:  # not prepared before painting: draw it now
            self._draw_block(index, painter)
            tops = self._placed()
        lines = self._lines[index]
        assert lines is not None
        local = y - tops[index]
        return lines[local] if 0 <= local < len(lines) else painter.blank(0)

    def all_lines(self, painter: Painter) -> list[Strip]:
        every: list[Strip] = []
        for index in range(len(self._pieces)):
            if self._lines[index] is None:
                self._draw_block(index, painter)
            every.extend(self._lines[index] or [])
        return every
