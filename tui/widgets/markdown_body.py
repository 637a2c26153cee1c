"""A message's Markdown drawn block by block, only the blocks that come into view.

An answer is a sequence of top-level blocks (`markdown_blocks.split_blocks`). Each is
rendered on its own with Rich, with one blank line between blocks and the `● ` gutter on
the message's first line; a block not drawn yet counts with an estimated height. So a
2 MB answer streams and scrolls at the cost of what is on screen, and the same lines
serve the live message and the finished one.
"""

from __future__ import annotations

from bisect import bisect_right

from rich.segment import Segment
from textual.strip import Strip

from .markdown_blocks import rich_markdown
from .painter import Painter, spacing

GUTTER = 2
"""Columns of `● ` before the text of a message."""


def block_lines(block: str, width: int, painter: Painter) -> list[Strip]:
    """One Markdown block, without the blank lines Rich puts around some blocks."""
    lines = painter.rich(rich_markdown(block), width, painter.style())
    start, end = 0, len(lines)
    while start < end and _is_blank(lines[start]):
        start += 1
    while end > start and _is_blank(lines[end - 1]):
        end -= 1
    return lines[start:end]


def _is_blank(strip: Strip) -> bool:
    """No text and no background: spacing, not part of the block (a code block's padding has a background)."""
    return all(not text.strip() and not (style and style.bgcolor) for text, style, _ in strip)


def estimate_lines(block: str, width: int) -> int:
    """About how many lines `block` takes at `width`, without rendering it."""
    # A code fence's two rule lines become the padding lines of its box: the same count.
    lines = block.rstrip("\n").split("\n")
    return sum(max(1, -(-len(line) // max(1, width))) for line in lines)


def decorate(lines: list[Strip], painter: Painter, *, first: bool) -> list[Strip]:
    """A block's lines as the message shows them: after a blank line (unless it is the
    first block), with `● ` before the message's first line and two spaces before others."""
    if not lines:
        return []
    style = painter.style()
    bullet, indent = Strip([Segment("● ", style.rich_style)], GUTTER), spacing(GUTTER, style)
    decorated = [Strip.join([bullet if first and n == 0 else indent, line]) for n, line in enumerate(lines)]
    return decorated if first else [painter.blank(GUTTER + lines[0].cell_length), *decorated]


class MarkdownBody:
    """The finished blocks of a message at one width, each drawn when first in view."""

    def __init__(self, width: int) -> None:
        self.width = width
        """The width of the text, without the gutter."""
        self._sources: list[str] = []
        self._lines: list[list[Strip] | None] = []
        """Each block's lines as shown (blank line and gutter included), None until drawn."""
        self._heights: list[int] = []
        self._tops: list[int] = [0]
        """Where each block starts, and (last) the height of the whole; valid up to `_valid`."""
        self._valid = 0

    def __len__(self) -> int:
        return len(self._sources)

    @property
    def sources(self) -> list[str]:
        return list(self._sources)

    @property
    def drawn(self) -> bool:
        """Whether any block is drawn."""
        return any(lines is not None for lines in self._lines)

    def add(self, source: str, painter: Painter, lines: list[Strip] | None = None) -> None:
        """Append a finished block; `lines`: already rendered (by `block_lines`) at this width."""
        first = not self._sources
        self._sources.append(source)
        shown = None if lines is None else decorate(lines, painter, first=first)
        self._lines.append(shown)
        self._heights.append(len(shown) if shown is not None else estimate_lines(source, self.width) + (not first))

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
        lines = decorate(block_lines(self._sources[index], self.width, painter), painter, first=index == 0)
        self._lines[index] = lines
        if len(lines) != self._heights[index]:
            self._heights[index] = len(lines)
            self._valid = min(self._valid, index)

    def draw(self, start: int, end: int, painter: Painter) -> bool:
        """Draw the blocks that lines `start` to `end` fall in; whether any was drawn."""
        tops = self._placed()
        first = max(0, bisect_right(tops, start) - 1)
        last = min(len(self._sources), bisect_right(tops, max(start, end - 1)))
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
        for index, lines in enumerate(self._lines):
            if lines is None:
                self._draw_block(index, painter)
        return [line for lines in self._lines for line in lines or []]
