"""Conversation blocks: each entry drawn into lines (`Strip`s) at a given width.

The conversation pane is one line-based widget (`conversation.py`); a block is not a
widget but the lines of one entry, rendered when first needed and kept until the width
changes. What a block looks like is decided here, from the entry and a `Painter` that
lends the pane's theme.

Every string that came from the model, a file or a command goes through `sanitize` and
is drawn as `Content`/Rich text (never as markup), so `[/bold]` or an escape sequence in
output is drawn as what it is.
"""

from __future__ import annotations

import itertools
import re
import time

from textual.content import Content
from textual.strip import Strip

from todo_agent.core.export.blocks import output_summary
from todo_agent.core.window.breakdown import FREE_GLYPH, GLYPHS

from ..sanitize import StreamSanitizer, sanitize
from ..transcript import (
    TASK_TOOLS,
    AssistantEntry,
    Entry,
    FoldEntry,
    NoticeEntry,
    PlainEntry,
    ReminderEntry,
    ThoughtEntry,
    ToolEntry,
    UserEntry,
    thought_label,
)
from .markdown_blocks import Piece, split_pieces
from .markdown_body import GUTTER, MarkdownBody, block_lines, decorate
from .markdown_stream import GrowingMarkdown, Settled
from .painter import Painter, fit, spacing

MAX_OUTPUT_LINES = 2100
"""Lines of tool output kept when a call is expanded; the core caps output too. Room for a
whole Read window (2000 lines) and the note after it, so a Read's line 1 is never dropped."""

OUTPUT_INDENT = 5
"""Columns before the bar of an expanded tool output (under the `⎿`)."""

_STATUS_ICON = {"ok": "✔", "error": "✘", "denied": "✘", "cancelled": "✘", "running": "…"}
_NOTICE_STYLE = {"info": "$text-muted", "warning": "$text-warning", "error": "$text-error", "dim": "$text-muted 60%"}


# --- one renderer per kind of entry ---------------------------------------------------


def user_lines(entry: UserEntry, width: int, painter: Painter) -> list[Strip]:
    """`❯ prompt` on a lighter band, wrapped lines indented under the text."""
    band = painter.style("conversation--user")
    mark = painter.style("conversation--user", "conversation--user-gutter")
    text_width = max(1, width - 4)
    body = painter.content(Content(sanitize(entry.text)), text_width, band) or [Strip.blank(text_width)]
    gutter = painter.content(Content("❯"), 2, mark)[0].adjust_cell_length(2, mark.rich_style)
    pad, indent = spacing(1, band), spacing(2, band)
    return [
        Strip.join([pad, gutter if n == 0 else indent, fit(line, text_width, band), pad]) for n, line in enumerate(body)
    ]


def tool_line(entry: ToolEntry, waiting: bool, width: int = 120) -> Content:
    """`⏺ Name(args)` and, under it, what became of the call, fitted to `width` cells."""
    colour = {"ok": "$text-success", "running": "$accent"}.get(entry.status, "$text-error")
    head = Content.assemble(("⏺ ", colour), (sanitize(entry.name), "bold"), f"({sanitize(entry.summary)})")
    if entry.status == "running":
        state = "waiting for your approval…" if waiting else sanitize(entry.progress) or "running…"
        return Content.assemble(head, "\n", (f"  ⎿  {state}", "$text-muted"))
    if entry.status == "ok" and entry.name in TASK_TOOLS:
        return Content.assemble(head, (" ✔", colour))
    elapsed = f" · {entry.elapsed:.1f}s" if entry.elapsed >= 1 else ""  # sub-second timings are noise
    summary = output_summary(sanitize(entry.output), entry.status, limit=min(100, width - 7 - len(elapsed)))
    return Content.assemble(
        head,
        "\n",
        ("  ⎿  ", "$text-muted"),
        (f"{_STATUS_ICON[entry.status]} ", colour),
        summary,
        (elapsed, "$text-muted"),
    )


def tool_lines(entry: ToolEntry, *, waiting: bool, expanded: bool, width: int, painter: Painter) -> list[Strip]:
    base = painter.style()
    lines = [
        painter.content(line.truncate(width, ellipsis=True), width, base)[0]
        for line in tool_line(entry, waiting, width).split("\n")
    ]
    if expanded:
        lines.extend(output_box(entry.output, width, painter))
    return lines


def output_lines(output: str, limit: int = MAX_OUTPUT_LINES) -> list[str]:
    """The lines of `output` for the expanded view: all of them, or the last `limit` after a
    line that says how many earlier lines are not shown."""
    lines = sanitize(output).splitlines() or ["(no output)"]
    if len(lines) <= limit:
        return lines
    kept = lines[-limit:]
    dropped = len(lines) - limit
    noun = "line" if dropped == 1 else "lines"
    return [f"… {dropped} earlier {noun} not shown", *kept]


def output_box(output: str, width: int, painter: Painter) -> list[Strip]:
    """A call's whole output under its line, on a darker band with a bar on its left."""
    box = painter.style("conversation--output")
    inner = max(1, width - OUTPUT_INDENT - 1)
    margin, bar = painter.blank(OUTPUT_INDENT), painter.bar("conversation--output-bar")
    text = Content("\n".join(output_lines(output)))
    return [Strip.join([margin, bar, fit(line, inner, box)]) for line in painter.content(text, inner, box)]


def fold_lines(entry: FoldEntry, *, expanded: bool, width: int, painter: Painter) -> list[Strip]:
    """`  ⎿  @cli.py  242 lines`: one line; expanded, what the model got under it. A
    reminder's line is dim throughout: the harness speaking, not the conversation."""
    label = "$text-muted italic" if isinstance(entry, ReminderEntry) else "bold"
    line = Content.assemble(
        ("  ⎿  ", "$text-muted"), (sanitize(entry.label), label), ("  " + sanitize(entry.detail), "$text-muted")
    )
    lines = [painter.content(line.truncate(width, ellipsis=True), width, painter.style())[0]]
    if expanded:
        lines.extend(output_box(entry.content, width, painter))
    return lines


def notice_lines(entry: NoticeEntry, width: int, painter: Painter) -> list[Strip]:
    """`◇ text`: instructions loaded, retries, errors, reminders."""
    style = _NOTICE_STYLE[entry.level]
    marker = "✘ " if entry.level == "error" else "◇ "
    content = Content.assemble((marker, style), (sanitize(entry.text), style))
    return painter.content(content, width, painter.style())


def plain_lines(entry: PlainEntry, width: int, painter: Painter) -> list[Strip]:
    """Lines printed as they are: a task list (`/todos`) indented, help beside a bar."""
    content = Content(sanitize(entry.text))
    if entry.kind == "context":
        content = _coloured(content)
    if entry.kind in ("tasks", "context"):
        indent = painter.blank(2)
        return [Strip.join([indent, line]) for line in painter.content(content, width - 2, painter.style())]
    muted = painter.style("conversation--help")
    bar, pad = painter.bar("conversation--help-bar"), Strip.blank(1, muted.rich_style)
    inner = max(1, width - 3)
    return [Strip.join([bar, pad, fit(line, inner, muted), pad]) for line in painter.content(content, inner, muted)]


PART_STYLES = {
    GLYPHS["system"]: "$foreground 45%",
    GLYPHS["instructions"]: "$foreground 70%",
    GLYPHS["tools"]: "$primary",
    GLYPHS["mcp"]: "$accent",
    GLYPHS["plan"]: "$success",
    GLYPHS["attachments"]: "$error",
    GLYPHS["conversation"]: "$foreground 90%",
    FREE_GLYPH: "$foreground 35%",
}
"""`/context`'s part glyphs, each in its part's colour (the glyphs alone tell them apart
where there is no colour)."""
_PART_RUNS = re.compile("([" + "".join(PART_STYLES) + r"])\1*")


def _coloured(content: Content) -> Content:
    for run in _PART_RUNS.finditer(content.plain):
        content = content.stylize(PART_STYLES[run.group(1)], run.start(), run.end())
    return content


THOUGHT_INDENT = 4
"""Columns before an open thought's text (under the `∴`)."""
THOUGHT_STYLE = "$foreground 55% italic"
THOUGHT_HEAD_STYLE = "$foreground 70%"
"""Dim by a share of the foreground: `$text-muted` is `auto 60%`, which `Content` draws
at full strength."""


def thought_head(entry: ThoughtEntry, width: int, painter: Painter) -> Strip:
    """`  ∴ Thought for 12 s`: the one line a finished thought folds to."""
    label, detail = thought_label(entry)
    line = Content.assemble(("  " + label, THOUGHT_HEAD_STYLE), ("  " + detail if detail else "", THOUGHT_STYLE))
    return painter.content(line.truncate(width, ellipsis=True), width, painter.style())[0]


def thought_text_lines(text: str, width: int, painter: Painter) -> list[Strip]:
    """The thought itself, dim plain text (never markup), indented under its line."""
    indent = painter.blank(THOUGHT_INDENT)
    inner = max(1, width - THOUGHT_INDENT)
    content = Content.styled(sanitize(text), THOUGHT_STYLE)
    return [Strip.join([indent, line]) for line in painter.content(content, inner, painter.style())]


def estimate_height(entry: Entry, width: int) -> int:
    """About how many lines `entry` takes at `width`, without rendering it."""
    match entry:
        case ThoughtEntry(streaming=False):
            return 1
        case ThoughtEntry():
            text, width = entry.text, width - THOUGHT_INDENT
        case ToolEntry():
            return 1 if entry.status == "ok" and entry.name in TASK_TOOLS else 2
        case FoldEntry():
            return 1
        case AssistantEntry():
            text, width = entry.text, width - 2
        case UserEntry():
            text, width = entry.text, width - 4
        case _:
            text = entry.text
    width = max(1, width)
    return sum(max(1, -(-len(line) // width)) for line in text.splitlines()) or 1


# --- blocks ---------------------------------------------------------------------------


class Block:
    """One entry of the conversation and its lines at the pane's current width.

    The pane asks a block to `draw` the lines about to be shown, then reads them with
    `line`; until drawn, `height` is an estimate.
    """

    margin = 1
    """Blank lines wanted above and below (between two blocks, the larger of the two)."""

    def __init__(self, entry: Entry) -> None:
        self.entry = entry
        self._lines: list[Strip] | None = None
        self.height = 1

    @property
    def rendered(self) -> bool:
        """Whether any of it is drawn at the current width."""
        return self._lines is not None

    def reset(self, width: int) -> None:
        """Forget the lines (the width changed, or the entry) and guess the height until drawn."""
        self._lines = None
        self.height = estimate_height(self.entry, width)

    def draw(self, start: int, end: int, width: int, painter: Painter) -> bool:
        """Make lines `start` to `end` ready to show; whether anything was drawn."""
        if self._lines is not None:
            return False
        self._lines = self._render(width, painter)
        self.height = len(self._lines)
        return True

    def line(self, y: int, painter: Painter) -> Strip:
        assert self._lines is not None
        return self._lines[y]

    def all_lines(self, width: int, painter: Painter) -> list[Strip]:
        self.draw(0, self.height, width, painter)
        return list(self._lines or [])

    def _render(self, width: int, painter: Painter) -> list[Strip]:
        match self.entry:
            case UserEntry() as entry:
                return user_lines(entry, width, painter)
            case NoticeEntry() as entry:
                return notice_lines(entry, width, painter)
            case PlainEntry() as entry:
                return plain_lines(entry, width, painter)
        raise TypeError(f"no renderer for {self.entry!r}")


class FoldingBlock(Block):
    """A block whose whole text unfolds under it (a click, or `ctrl+o` for the last one)."""

    margin = 0

    def __init__(self, entry: Entry) -> None:
        super().__init__(entry)
        self.expanded = False

    @property
    def can_fold(self) -> bool:
        return True


class ToolBlock(FoldingBlock):
    """`⏺ Name(args)` and a `✔`/`✘` line; expanded, the call's whole output under it."""

    entry: ToolEntry

    def __init__(self, entry: ToolEntry) -> None:
        super().__init__(entry)
        self.waiting = False
        """Whether the call waits for the person's approval (not running yet)."""

    @property
    def can_fold(self) -> bool:
        return self.entry.status != "running"

    def _render(self, width: int, painter: Painter) -> list[Strip]:
        return tool_lines(self.entry, waiting=self.waiting, expanded=self.expanded, width=width, painter=painter)


class AssistantBlock(Block):
    """A finished answer: its Markdown pieces, each drawn when it comes into view."""

    entry: AssistantEntry

    def __init__(self, entry: AssistantEntry, body: MarkdownBody | None = None) -> None:
        super().__init__(entry)
        self._body = body
        """None until first drawn: a resumed session does not even split its answers."""
        self._pieces: list[Piece] | None = body.pieces if body is not None else None
        """The answer's pieces, kept across widths: splitting a long one is not free."""
        if body is not None:
            self.height = body.height

    @property
    def rendered(self) -> bool:
        return self._body is not None and self._body.drawn

    @property
    def body(self) -> MarkdownBody | None:
        """Its pieces at the current width (None until first drawn)."""
        return self._body

    def reset(self, width: int) -> None:
        self._body = None
        self.height = estimate_height(self.entry, width)

    def _prepared(self, width: int, painter: Painter) -> MarkdownBody:
        if self._body is None or self._body.width != width - GUTTER:
            if self._pieces is None:
                self._pieces = split_pieces(sanitize(self.entry.text))
            self._body = MarkdownBody(max(1, width - GUTTER))
            for piece in self._pieces:
                self._body.add(piece, painter)
        return self._body

    def draw(self, start: int, end: int, width: int, painter: Painter) -> bool:
        body = self._prepared(width, painter)
        drawn = body.draw(start, end, painter)
        changed = drawn or self.height != body.height
        self.height = body.height
        return changed

    def line(self, y: int, painter: Painter) -> Strip:
        assert self._body is not None
        return self._body.line(y, painter)

    def all_lines(self, width: int, painter: Painter) -> list[Strip]:
        lines = self._prepared(width, painter).all_lines(painter)
        self.height = len(lines)
        return lines


class FoldBlock(FoldingBlock):
    """An attachment or a command's prompt: one line, and what it holds unfolded."""

    entry: FoldEntry

    def _render(self, width: int, painter: Painter) -> list[Strip]:
        return fold_lines(self.entry, expanded=self.expanded, width=width, painter=painter)


class ThoughtBlock(FoldingBlock):
    """The model's reasoning: open while it streams, then folded to one line.

    A thought can be long and arrives a few characters at a time, so while it streams
    its finished lines (up to the last newline) are drawn once and kept; each redraw
    draws only the line still growing.
    """

    entry: ThoughtEntry

    def __init__(self, entry: ThoughtEntry) -> None:
        super().__init__(entry)
        self._kept: list[Strip] = []
        self._kept_upto = 0
        """`entry.text[:_kept_upto]` (whole lines) is drawn in `_kept`."""
        self._kept_width = 0

    @property
    def can_fold(self) -> bool:
        return not self.entry.streaming and bool(self.entry.text.strip())

    def _render(self, width: int, painter: Painter) -> list[Strip]:
        head = thought_head(self.entry, width, painter)
        if not (self.entry.streaming or self.expanded):
            return [head]
        text = self.entry.text.lstrip("\n")
        if self._kept_width != width or len(text) < self._kept_upto:
            self._kept, self._kept_upto, self._kept_width = [], 0, width
        whole = text.rfind("\n") + 1
        if whole > self._kept_upto:
            self._kept += thought_text_lines(text[self._kept_upto : whole - 1], width, painter)
            self._kept_upto = whole
        tail = text[self._kept_upto :]
        return [head, *self._kept, *(thought_text_lines(tail, width, painter) if tail else [])]


def block_for(entry: Entry) -> Block:
    match entry:
        case ThoughtEntry():
            return ThoughtBlock(entry)
        case ToolEntry():
            return ToolBlock(entry)
        case FoldEntry():
            return FoldBlock(entry)
        case AssistantEntry():
            return AssistantBlock(entry)
    return Block(entry)


class LiveBlock:
    """The message being streamed.

    Final Markdown pieces join a `MarkdownBody` (drawn once, when in view); only the
    tail, the piece still growing, is drawn again as text arrives. `update` takes in what
    arrived since the last frame; `finish` hands the body to the finished message.
    """

    margin = 1

    CHUNK = 4_000
    BUDGET = 0.008
    """An `update` takes text in `CHUNK` characters at a time for at most `BUDGET` seconds:
    a burst is drawn over several frames, with keys and the screen served between them,
    rather than in one long stall."""

    def __init__(self) -> None:
        self._sanitizer = StreamSanitizer()
        self._raw: list[str] = []
        """The text as it came, to tell cheaply whether the final message is what streamed."""
        self._markdown = GrowingMarkdown()
        self._final: list[Piece] = []
        """The pieces that are final, in order (the body holds them at one width)."""
        self._body: MarkdownBody | None = None
        self._tail: list[Strip] = []
        self._tail_drawn: tuple[Piece | None, list[Strip]] = (None, [])
        """The tail as last drawn and its lines (before the gutter), at the body's width."""
        self.height = 0
        self.dirty = False
        """Text arrived that is not drawn yet."""
        self.changed_from = 0
        """The first of its lines that the last `update` changed."""
        self._held: list[Settled] = []
        """What `take_in` settled, for the next `update` to draw."""

    rendered = True

    @property
    def text(self) -> str:
        """Everything streamed so far, sanitized."""
        return self._markdown.text

    @property
    def final_pieces(self) -> list[Piece]:
        return list(self._final)

    @property
    def tail_start(self) -> int:
        """The line where the tail (the piece still growing) begins."""
        return self._body.height if self._body is not None else 0

    def behind(self) -> bool:
        """Whether text arrived that is not drawn yet (`dirty`, asked after an update)."""
        return self.dirty

    @property
    def backlog(self) -> bool:
        """Whether text arrived that is not even taken in yet (a burst: `take_in` has work)."""
        return self._markdown.behind

    def streamed(self, text: str) -> bool:
        """Whether `text` is exactly what was fed, so the lines drawn from it are its lines."""
        return text == "".join(self._raw)

    def feed(self, delta: str) -> None:
        self._raw.append(delta)
        safe = self._sanitizer.feed(delta)
        if safe:
            self._markdown.append(safe)
            self.dirty = True

    def update(self, width: int, painter: Painter, *, redraw: bool = False) -> None:
        """Take in what arrived: final pieces join the body, the tail is drawn again
        (`redraw`: all of it, in new colours)."""
        body = self._body
        was_start, was_tail = self.tail_start, self._tail
        if redraw or body is None or body.width != max(1, width - GUTTER):  # first, another width or theme
            body = self._body = MarkdownBody(max(1, width - GUTTER))
            for piece in self._final:
                body.add(piece, painter)
            self._tail_drawn, was_tail = (None, []), []
        self._take_held(body, painter)
        deadline = time.monotonic() + self.BUDGET
        while True:
            self._take(self._markdown.settle(self.CHUNK), body, painter)
            if not self._markdown.behind or time.monotonic() > deadline:
                break
        tail = self._markdown.tail()
        if tail != self._tail_drawn[0] or tail is None:
            self._tail_drawn = (tail, block_lines(tail, body.width, painter) if tail is not None else [])
            opens = tail is None or tail.opens
            self._tail = decorate(self._tail_drawn[1], painter, first=not body, opens=opens)
        self.height = body.height + len(self._tail)
        self.dirty = self._markdown.behind
        self.changed_from = min(was_start, body.height)
        if was_start == body.height:  # the same final part: the tail's lines that differ (often only its last)
            same = itertools.takewhile(lambda pair: pair[0] == pair[1], zip(was_tail, self._tail, strict=False))
            self.changed_from += sum(1 for _ in same)

    def take_in(self) -> None:
        """Settle what arrived for at most `BUDGET`, drawing nothing: the pieces that became
        final join the body at the next `update` (during a burst, most frames draw nothing)."""
        deadline = time.monotonic() + self.BUDGET
        while self._markdown.behind and time.monotonic() <= deadline:
            self._held.append(self._markdown.settle(self.CHUNK))

    def _take_held(self, body: MarkdownBody, painter: Painter) -> None:
        for settled in self._held:
            self._take(settled, body, painter)
        self._held.clear()

    def _take(self, settled: Settled, body: MarkdownBody, painter: Painter) -> None:
        """Pieces taken back leave the body; final ones join it (with the tail's lines
        when the tail, as last drawn, is what became final: the usual case)."""
        if settled.taken_back:
            del self._final[len(self._final) - settled.taken_back :]
            body.drop_last(settled.taken_back)
        for piece in settled.pieces:
            drawn, lines = self._tail_drawn
            self._final.append(piece)
            body.add(piece, painter, lines if drawn == piece else None)
            self._tail_drawn = (None, [])

    def draw(self, start: int, end: int, width: int, painter: Painter) -> bool:
        if self._body is None:
            return False
        drawn = self._body.draw(start, min(end, self._body.height), painter)
        self.height = self._body.height + len(self._tail)
        return drawn

    def line(self, y: int, painter: Painter) -> Strip:
        body = self._body
        if body is not None and y < body.height:
            return body.line(y, painter)
        return self._tail[y - (body.height if body is not None else 0)]

    def all_lines(self, width: int, painter: Painter) -> list[Strip]:
        return [*(self._body.all_lines(painter) if self._body is not None else []), *self._tail]

    def finish(self, entry: AssistantEntry, painter: Painter) -> AssistantBlock:
        """The finished message, made of the same lines (the tail becomes its last pieces)."""
        body = self._body
        if body is None:
            return AssistantBlock(entry)
        self._take_held(body, painter)
        self._take(self._markdown.finish(), body, painter)
        return AssistantBlock(entry, body)
