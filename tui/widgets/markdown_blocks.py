"""Markdown as a sequence of top-level blocks, so a growing answer costs only its tail.

A paragraph, a list or a code fence is final once another block has started after it:
nothing appended later can change how it parses. `GrowingMarkdown` keeps the text of an
answer being streamed in two parts, the finished blocks (each handed out once, to be
rendered once) and the unfinished tail (re-parsed and re-rendered as it grows).

A finished answer is drawn by rendering the same blocks the same way
(`split_blocks`, one Rich `Markdown` per block, one blank line between blocks), so the
streamed message and the finished one are identical line for line: the swap from one to
the other changes nothing on screen.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from rich.markdown import Markdown


@cache
def parser() -> MarkdownIt:
    """The parser Rich's `Markdown` uses, so blocks split where Rich would see them.

    Imported on first use (with Rich's Markdown, ~50 ms): a session without an answer on
    screen yet draws its first frame without it. `preload` brings both in from a thread.
    """
    from markdown_it import MarkdownIt

    return MarkdownIt().enable("strikethrough").enable("table")


def rich_markdown(block: str) -> Markdown:
    """Rich's `Markdown` for `block`, parsed with the shared parser.

    `Markdown(text)` builds a new parser for every document, compiling its regular
    expressions again (milliseconds each time): far more than drawing a paragraph. This
    copies a template made once and sets only the text and its tokens.
    """
    markdown = copy.copy(_template())
    markdown.markup = block
    markdown.parsed = parser().parse(block)
    return markdown


@cache
def _template() -> Markdown:
    from rich.markdown import Markdown

    return Markdown("")


def preload() -> None:
    """Import what drawing Markdown needs, off the event loop (the UI calls it from a thread)."""
    _template()
    parser()


def split_blocks(source: str) -> list[str]:
    """The top-level blocks of `source`, each as its own source text, in order."""
    lines = source.splitlines(keepends=True)
    return ["".join(lines[start:end]) for start, end in _block_lines(source)]


def _block_lines(source: str) -> list[tuple[int, int]]:
    # Block structure only: where blocks start and end does not depend on inline markup,
    # and skipping the inline pass halves the work.
    markdown = parser()
    tokens: list[Token] = []
    markdown.block.parse(source, markdown, {}, tokens)
    spans: list[tuple[int, int]] = []
    for token in tokens:
        if token.level == 0 and token.map is not None and token.nesting >= 0:
            start, end = token.map
            spans.append((start, end))
    return spans


class GrowingMarkdown:
    """The text of an answer as it streams: finished blocks and the tail after them."""

    def __init__(self) -> None:
        self._done: list[str] = []
        """Text of the finished part: the finished blocks and the blank lines between them."""
        self._pending: list[str] = []
        self._tail = ""

    @property
    def text(self) -> str:
        """Everything appended so far."""
        return "".join((*self._done, self._tail, *self._pending))

    @property
    def tail(self) -> str:
        """The last block, still growing (after `settle`)."""
        return self._tail

    def append(self, text: str) -> None:
        self._pending.append(text)

    @property
    def behind(self) -> bool:
        """Whether text was appended that `settle` has not taken in yet."""
        return bool(self._pending)

    def settle(self, limit: int | None = None) -> list[str]:
        """Take in what was appended (at most `limit` characters of it); returns the blocks
        that became final (maybe none)."""
        if self._pending:
            pending = "".join(self._pending)
            self._pending.clear()
            if limit is not None and len(pending) > limit:
                pending, rest = pending[:limit], pending[limit:]
                self._pending.append(rest)
            self._tail += pending
        spans = _block_lines(self._tail)
        if len(spans) < 2:
            return []
        lines = self._tail.splitlines(keepends=True)
        finished = ["".join(lines[start:end]) for start, end in spans[:-1]]
        cut = sum(len(line) for line in lines[: spans[-1][0]])
        self._done.append(self._tail[:cut])
        self._tail = self._tail[cut:]
        return finished
