"""Markdown as a sequence of pieces drawn on their own, so an answer costs what is on screen.

An answer is a sequence of top-level blocks (a paragraph, a list, a code fence…), and a
block is final once another has started after it: nothing appended later changes how it
parses. Each block is drawn on its own with Rich, one blank line between blocks.

One block can be the whole answer: a model writing a long file in one code fence, or
output without a blank line (one paragraph). Drawn whole, every frame of such a stream
would lay out everything that arrived so far (quadratic), and a finished one would be
laid out entirely to show a screenful. So a long fence or paragraph is cut into *slices*
of about `SLICE_LINES` lines or `SLICE_CHARS` characters, each drawn on its own and
joined to the next without a blank line: a fence's slices make one code box (its top
edge on the first, its bottom edge on the last); a paragraph's slices are paragraphs.
Where a slice ends depends only on the text before the cut (never on what comes later),
so the stream (`markdown_stream.py`) cuts the same slices as arrive as the finished
answer (`split_pieces`) does, and the swap from one to the other changes nothing.

A slice of code is highlighted after the code before it that starts where the
highlighter is surely at the top level: the nearest line at most `CONTEXT_LINES` back
that starts at column 0 right after a blank line (a `def`, a `class`, a function in most
languages), so a docstring or comment that runs across a cut keeps its colour.

What slicing costs, deliberately: a paragraph's text restarts on a new line at a cut
(Markdown would run it on), and inline markup open across a cut (`**` on one side, its
close on the other) shows as typed; in code with no such top-level line in reach (a
long string, dense code without blank lines), a slice is highlighted from its own first
line. A line longer than a slice (minified code, a blob) is cut too, at a space where
there is one: it shows on more rows than it would have. Fences and paragraphs shorter
than one slice, and every other kind of block, are drawn whole, exactly as before.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from rich.console import RenderableType
    from rich.markdown import Markdown

SLICE_LINES = 40
SLICE_CHARS = 3_000
"""A slice of a long fence or paragraph ends at the first line that brings it to this many
lines or characters (and, in a fence, is not blank); a longer line is cut in parts of at
most `SLICE_CHARS`. Small enough that the slice still growing is drawn again each frame
in a few milliseconds."""
CONTEXT_LINES = 80
"""How far back (in lines of code) the highlighter may start before a slice."""

PieceKind = Literal["block", "code", "paragraph"]


@dataclass(frozen=True)
class Piece:
    """What is drawn as one: a whole top-level block, or a slice of a long one."""

    source: str
    """The block's Markdown; for a slice, its lines (code: the code only, no fence lines)."""
    kind: PieceKind = "block"
    opens: bool = True
    """Starts its block: a blank line above it (and a code box's top edge)."""
    closes: bool = True
    """Ends its block (a code box's bottom edge). Only code slices need to know."""
    info: str = ""
    """A code slice's fence info (its language first)."""
    context: str = ""
    """A code slice's preceding lines in its fence, read by the highlighter only."""


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
    return _markdown(block, parser().parse(block))


def _markdown(source: str, tokens: list[Token]) -> Markdown:
    markdown = copy.copy(_template())
    markdown.markup = source
    markdown.parsed = tokens
    return markdown


@cache
def _template() -> Markdown:
    from rich.markdown import Markdown

    return Markdown("")


def renderable(piece: Piece) -> RenderableType:
    """What Rich draws for `piece`: a whole block as Rich's Markdown draws it, a code slice
    as Rich's Markdown draws a fence (both edges: the caller keeps the ones it needs), a
    paragraph slice as a paragraph."""
    if piece.kind == "code":
        from rich.syntax import Syntax

        code = piece.source.rstrip() if piece.closes else piece.source.removesuffix("\n")
        context = piece.context.count("\n")
        return Syntax(
            piece.context + code,
            piece.info.partition(" ")[0] or "text",
            theme=_template().code_theme,
            word_wrap=True,
            padding=1,
            line_range=(context + 1, None) if context else None,
        )
    if piece.kind == "paragraph":
        from markdown_it.token import Token

        inline = parser().parseInline(piece.source.strip())
        return _markdown(piece.source, [Token("paragraph_open", "p", 1), *inline, Token("paragraph_close", "p", -1)])
    return rich_markdown(piece.source)


WARM_LEXERS = ("python", "bash", "json", "typescript", "diff")
"""Languages whose highlighter is made ready before the first answer: a lexer compiles
its patterns the first time it is used (Python's ~20 ms, TypeScript's ~25 ms), which
would otherwise happen in the middle of drawing the first code block, and a burst's
first frame held a typed key that much longer."""


def preload() -> None:
    """Import what drawing Markdown needs, and ready the common languages' highlighters,
    off the event loop (the UI calls it from a thread)."""
    _template()
    parser()
    from rich.syntax import Syntax

    Syntax.get_theme(_template().code_theme)
    for name in WARM_LEXERS:
        lexer = Syntax("", name).lexer  # as drawing a block makes it; None when Pygments lacks it
        if lexer is not None:
            for _ in lexer.get_tokens("x = 1\n"):
                pass


# --- where blocks are, and where they are cut --------------------------------------------


@dataclass(frozen=True)
class Span:
    """A top-level block: its lines `start` to `end` of the source, and what it is."""

    start: int
    end: int
    kind: str
    """The opening token's type: `paragraph_open`, `fence`, `bullet_list_open`, …"""
    fence: str = ""
    """A fence's marker (three or more backticks or tildes), when it starts at column 0."""
    info: str = ""


def spans(source: str) -> list[Span]:
    """The top-level blocks of `source`."""
    # Block structure only: where blocks start and end does not depend on inline markup,
    # and skipping the inline pass halves the work.
    markdown = parser()
    tokens: list[Token] = []
    markdown.block.parse(source, markdown, {}, tokens)
    found: list[Span] = []
    lines: list[str] | None = None
    for token in tokens:
        if token.level != 0 or token.map is None or token.nesting < 0:
            continue
        start, end = token.map
        fence = ""
        if token.type == "fence":
            lines = lines if lines is not None else lines_of(source)
            fence = token.markup if lines[start].startswith(token.markup) else ""  # an indented fence stays whole
        found.append(Span(start, end, token.type, fence, token.info))
    return found


def split_pieces(source: str) -> list[Piece]:
    """The pieces of a finished answer, in order."""
    lines = lines_of(source)
    return [piece for span in spans(source) for piece in block_pieces(lines[span.start : span.end], span)]


def block_pieces(lines: list[str], span: Span) -> list[Piece]:
    """One finished block (its source lines) as it is drawn: whole, or in slices."""
    if span.kind == "paragraph_open" and (cuts := slice_cuts(units := units_of(lines))):
        bounds = [0, *cuts] if cuts[-1] == len(units) else [0, *cuts, len(units)]
        return [Piece("".join(units[a:b]), "paragraph", opens=a == 0) for a, b in itertools.pairwise(bounds)]
    if span.fence:
        code = lines[1:]
        if code and is_closing_fence(code[-1], span.fence):
            code = code[:-1]
        body = units_of(code)
        if cuts := slice_cuts(body, code=True):
            starts = [0, *cuts]  # the last slice, empty or not, draws the box's bottom edge
            ends = [*cuts, len(body)]
            return [
                Piece(
                    "".join(body[a:b]),
                    "code",
                    a == 0,
                    n == len(cuts),
                    span.info,
                    context_of(recent(body[:a]), body[a : a + 1], a),
                )
                for n, (a, b) in enumerate(zip(starts, ends, strict=True))
            ]
    return [Piece("".join(lines))]


def units_of(lines: list[str]) -> list[str]:
    """`lines` as the units slices are made of: lines, a line longer than `SLICE_CHARS` in
    parts (after the last space in its second half, else where it is full). A part depends
    only on the text since the part before it, so a line still arriving is cut where the
    whole line will be (its last part, still growing, is cut later or not at all)."""
    units: list[str] = []
    for line in lines:
        start, end = 0, len(line) - line.endswith("\n")
        while end - start > SLICE_CHARS:
            space = line.rfind(" ", start + SLICE_CHARS // 2, start + SLICE_CHARS)
            cut = space + 1 if space >= 0 else start + SLICE_CHARS
            units.append(line[start:cut])
            start = cut
        units.append(line[start:])
    return units


def slice_cuts(units: list[str], *, code: bool = False) -> list[int]:
    """Where slices of `units` end (indexes after their last unit): at the first complete
    unit (a whole line, or a part another part follows) that brings a slice to
    `SLICE_LINES` units or `SLICE_CHARS` characters and, in code, is not a blank line (a
    code box's slice never ends on blank lines, which Rich would drop)."""
    cuts: list[int] = []
    count = chars = 0
    for index, unit in enumerate(units):
        count, chars = count + 1, chars + len(unit)
        complete = unit.endswith("\n") or index + 1 < len(units)
        if (count >= SLICE_LINES or chars >= SLICE_CHARS) and complete and (not code or unit.strip()):
            cuts.append(index + 1)
            count = chars = 0
    return cuts


def recent(code: list[str]) -> list[str]:
    """The last lines of `code` that a later slice's context can come from."""
    return code[max(0, len(code) - CONTEXT_LINES) :]


def context_of(before: list[str], first: list[str], taken: int) -> str:
    """The code a slice is highlighted after: of `before` (the `recent` units of the
    `taken` units of code before it), those from the nearest line a top-level construct
    starts on; none when that is the slice's own `first` line, when none is in reach, or
    when the slice starts in the middle of a long line."""
    if before and not before[-1].endswith("\n"):
        return ""
    lines = [*before, *first[:1]]
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        after_blank = not lines[index - 1].strip() if index else taken <= CONTEXT_LINES  # the fence's first line
        if line.strip() and not line[0].isspace() and after_blank:
            return "".join(before[index:])
    return ""


def is_closing_fence(line: str, fence: str) -> bool:
    """Whether `line` closes a fence opened with `fence` (CommonMark: up to three spaces,
    at least as many of the same character, then only spaces)."""
    text = line.rstrip("\n")
    stripped = text.lstrip(" ")
    if len(text) - len(stripped) > 3:
        return False
    marker = stripped.rstrip(" \t")
    return len(marker) >= len(fence) and marker == fence[0] * len(marker)


def lines_of(text: str) -> list[str]:
    """`text`'s lines, each with its `\\n`: split where the Markdown parser splits them
    (`str.splitlines` also splits at U+2028 and others, which would shift every block)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]
