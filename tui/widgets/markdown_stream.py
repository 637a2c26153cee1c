"""The text of an answer as it streams, cut into the pieces the finished answer will have.

`GrowingMarkdown` keeps what arrived in two parts: pieces that are final, each handed out
once (to be drawn once, when in view), and the tail still growing (drawn again each
frame). Usually the tail is the last top-level block, parsed again as it grows. A long
code fence or paragraph is taken in slices instead (`markdown_blocks`): the tail is then
only what arrived after the last whole slice, so each frame costs what arrived since
the slice began, never the whole block:

- in a fence, a complete line is code until a closing fence line; nothing else is looked at;
- in a paragraph, the new complete lines are parsed after the last line already taken,
  which tells whether they go on with the paragraph or start a block of their own.

Should a paragraph turn out to be something else after all (a `===` or `---` line under
it makes it a heading, a line under it makes its last line a table's header), its slices
are taken back (`Settled.taken_back`) and the block is parsed whole from then on, as any
other block is.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from . import markdown_blocks
from .markdown_blocks import (
    Piece,
    block_pieces,
    context_of,
    is_closing_fence,
    lines_of,
    recent,
    slice_cuts,
    spans,
    units_of,
)


@dataclass
class Settled:
    """What `settle` changed: the last `taken_back` pieces handed out are void, then
    `pieces` are final."""

    taken_back: int = 0
    pieces: list[Piece] = field(default_factory=list)


@dataclass
class _OpenBlock:
    """A long fence or paragraph being taken in slices."""

    fence: str
    """The fence's marker; empty for a paragraph."""
    info: str = ""
    taken: list[str] = field(default_factory=list)
    """The block's text taken so far (for a fence, its first line and its whole slices)."""
    slices: int = 0
    fresh: int = 0
    """Slices taken by the `settle` running now (not handed out yet)."""
    recent: list[str] = field(default_factory=list)
    """A fence's last lines of code taken (`recent`: where the next slice's context comes from)."""
    code_lines: int = 0
    """Units of code taken (lines, and the parts of long ones)."""
    last_line: str = ""
    """A paragraph's last whole line taken: the new lines are parsed after it."""
    line_start: str = ""
    """The parts taken of a paragraph's long line still being taken (its `_head`)."""


class GrowingMarkdown:
    """The text of an answer as it streams: final pieces and the tail after them."""

    def __init__(self) -> None:
        self._done: list[str] = []
        """Text of the final part: the finished blocks and the blank lines between them."""
        self._pending: list[str] = []
        self._tail = ""
        self._open: _OpenBlock | None = None
        self._whole = False
        """The tail's block was taken back: it is parsed whole until another block starts."""

    @property
    def text(self) -> str:
        """Everything appended so far."""
        taken = self._open.taken if self._open is not None else []
        return "".join((*self._done, *taken, self._tail, *self._pending))

    def append(self, text: str) -> None:
        self._pending.append(text)

    @property
    def behind(self) -> bool:
        """Whether text was appended that `settle` has not taken in yet."""
        return bool(self._pending)

    def tail(self) -> Piece | None:
        """The piece still growing (after `settle`), if it shows anything."""
        block = self._open
        if block is None:
            return Piece(self._tail) if self._tail.strip() else None
        if block.fence:
            code = self._tail
            last = code[code.rfind("\n") + 1 :]
            if last and is_closing_fence(last, block.fence):  # the fence closes as the text ends
                code = code[: len(code) - len(last)]
            return Piece(
                code, "code", False, True, block.info, context_of(block.recent, lines_of(code), block.code_lines)
            )
        return Piece(self._tail, "paragraph", opens=False) if self._tail.strip() else None

    def settle(self, limit: int | None = None) -> Settled:
        """Take in what was appended (at most `limit` characters of it)."""
        if self._pending:
            pending = "".join(self._pending)
            self._pending.clear()
            if limit is not None and len(pending) > limit:
                pending, rest = pending[:limit], pending[limit:]
                self._pending.append(rest)
            self._tail += pending
        settled = Settled()
        self._settle(settled, ended=False)
        return settled

    def finish(self) -> Settled:
        """Take in everything: the text has ended, so the tail is final too."""
        settled = self.settle()
        self._settle(settled, ended=True)
        if self._tail.strip():
            lines = lines_of(self._tail)
            for span in spans(self._tail):
                settled.pieces.extend(block_pieces(lines[span.start : span.end], span))
        self._done.append(self._tail)
        self._tail = ""
        return settled

    # --- taking text in --------------------------------------------------------------

    def _settle(self, settled: Settled, *, ended: bool) -> None:
        if self._open is not None:
            self._open.fresh = 0
        if self._open is not None and not self._settle_open(settled, ended=ended):
            return  # the block goes on
        if not ended:
            self._settle_blocks(settled)

    def _settle_blocks(self, settled: Settled) -> None:
        """The tail as whole blocks: those another block follows are final."""
        found = spans(self._tail)
        lines = lines_of(self._tail)
        if len(found) >= 2:
            for span in found[:-1]:
                settled.pieces.extend(block_pieces(lines[span.start : span.end], span))
            self._whole = False
        if not found:
            return
        last = found[-1]
        cut = sum(map(len, lines[: last.start]))
        self._done.append(self._tail[:cut])
        self._tail, lines = self._tail[cut:], lines[last.start :]
        if self._whole or not (last.kind == "paragraph_open" or last.fence):
            return
        if last.fence:  # cut once a slice's worth of code has arrived
            if not lines[0].endswith("\n") or not slice_cuts(units_of(_code_lines(lines[1:], last.fence)), code=True):
                return
            self._open = _OpenBlock(last.fence, last.info, taken=[lines[0]])
            self._tail = self._tail[len(lines[0]) :]
        else:
            if not slice_cuts(units_of(lines[: last.end - last.start])):
                return
            self._open = _OpenBlock("")
        self._settle_open(settled, ended=False, opening=True)

    def _settle_open(self, settled: Settled, *, ended: bool, opening: bool = False) -> bool:
        """Take whole slices of the open block; whether it ended (the tail then holds what follows it)."""
        block = self._open
        assert block is not None
        lines = lines_of(self._tail)
        growing = not ended and not self._tail.endswith("\n")
        complete = lines[:-1] if growing else lines
        if block.fence:
            code = _code_lines(complete, block.fence)
            closed = len(code) < len(complete)
            ends = ended or closed
            body = code if closed else code + lines[len(complete) :]  # with the line still arriving
            after = len(code) + closed  # the closing line is the block's too
        else:
            # A line long enough to cut is taken while it arrives: how it starts is known.
            probed = complete + [line for line in lines[len(complete) :] if len(line) > markdown_blocks.SLICE_CHARS]
            if not probed:
                return ended
            # After a line of plain text and the last whole line taken, the current line
            # (its parts taken, and the rest) and those after it: the new lines are read
            # as they are in the paragraph (a table's header is the line above its rule),
            # while the last line taken cannot be read as a block of its own (`2. x` is a
            # list only where no paragraph runs).
            context = [] if opening else ["x\n", *([_head(block.last_line)] if block.last_line else [])]
            found = spans("".join((*context, _head(block.line_start), *probed)))
            required = len(context) + bool(block.line_start)
            if not found or found[0].start != 0 or found[0].kind != "paragraph_open" or found[0].end < required:
                self._take_back(settled)
                return True
            body = probed[: found[0].end - len(context)]
            ends = ended or len(body) < len(probed)
            after = len(body)
        units = units_of(body)
        bounds = [0, *slice_cuts(units, code=bool(block.fence))]
        for start, end in itertools.pairwise(bounds):
            self._take_slice(settled, units[start:end], closes=False)
        start = bounds[-1]
        if ends:
            if units[start:] or block.fence:
                self._take_slice(settled, units[start:], closes=True)
            self._done.extend((*block.taken, *complete[len(body) : after]))
            self._tail = self._tail[sum(map(len, lines[:after])) :]
            self._open = None
            return True
        self._tail = self._tail[sum(map(len, units[:start])) :]
        return False

    def _take_slice(self, settled: Settled, units: list[str], *, closes: bool) -> None:
        block = self._open
        assert block is not None
        text = "".join(units)
        if block.fence:
            opens = block.slices == 0
            context = context_of(block.recent, units, block.code_lines)
            settled.pieces.append(Piece(text, "code", opens, closes, block.info, context))
            block.recent = recent(block.recent + units)
            block.code_lines += len(units)
        else:
            settled.pieces.append(Piece(text, "paragraph", opens=block.slices == 0))
            for unit in units:  # only the heads of lines are kept: `_head` reads no more
                if unit.endswith("\n"):
                    block.last_line, block.line_start = _head(block.line_start + unit), ""
                elif len(block.line_start) < HEAD:
                    block.line_start = _head(block.line_start + unit)
        block.taken.append(text)
        block.slices += 1
        block.fresh += 1

    def _take_back(self, settled: Settled) -> None:
        """The open paragraph is not one after all: its slices are void, its text the tail again."""
        block = self._open
        assert block is not None
        settled.taken_back += block.slices - block.fresh
        del settled.pieces[len(settled.pieces) - block.fresh :]  # not handed out yet
        self._tail = "".join(block.taken) + self._tail
        self._open = None
        self._whole = True


def _code_lines(lines: list[str], fence: str) -> list[str]:
    """The lines of code at the start of `lines`: up to the closing fence, if there is one."""
    close = next((n for n, line in enumerate(lines) if is_closing_fence(line, fence)), len(lines))
    return lines[:close]


HEAD = 200
"""Characters of a line that tell what it starts (a list item, a fence, a heading…)."""


def _head(line: str) -> str:
    """`line`, or its start when it is long: what the parser needs to read the lines after
    it, at a cost that does not grow with a long line (taken part by part)."""
    return line if len(line) <= HEAD else line[:HEAD] + ("\n" if line.endswith("\n") else "")
