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

from rich.console import RenderableType
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.content import Content
from textual.strip import Strip
from textual.style import Style
from textual.visual import RichVisual, Visual
from textual.widget import Widget

from ..sanitize import StreamSanitizer, sanitize
from ..transcript import (
    TASK_TOOLS,
    AssistantEntry,
    Entry,
    NoticeEntry,
    PlainEntry,
    ToolEntry,
    UserEntry,
    output_summary,
)
from .markdown_blocks import GrowingMarkdown, rich_markdown, split_blocks

MAX_OUTPUT_LINES = 2100
"""Lines of tool output kept when a call is expanded; the core caps output too. Room for a
whole Read window (2000 lines) and the note after it, so a Read's line 1 is never dropped."""

OUTPUT_INDENT = 5
"""Columns before the bar of an expanded tool output (under the `⎿`)."""

_STATUS_ICON = {"ok": "✔", "error": "✘", "denied": "✘", "cancelled": "✘", "running": "…"}
_NOTICE_STYLE = {"info": "$text-muted", "warning": "$text-warning", "error": "$text-error", "dim": "$text-muted 60%"}
_TALL_BAR = "▊"
"""Textual's `tall` left border: drawn reversed, it leaves a thin bar at the cell's right."""


class Painter:
    """Draws visuals into strips with the pane's theme (its CSS variables and component styles)."""

    def __init__(self, widget: Widget) -> None:
        self.widget = widget

    def style(self, *components: str) -> Style:
        return self.widget.get_visual_style(*components)

    def content(self, content: Content, width: int, style: Style) -> list[Strip]:
        return Visual.to_strips(self.widget, content, max(1, width), None, style, apply_selection=False)

    def rich(self, renderable: RenderableType, width: int, style: Style) -> list[Strip]:
        visual = RichVisual(self.widget, renderable)
        return Visual.to_strips(self.widget, visual, max(1, width), None, style, apply_selection=False)

    def bar(self, component: str) -> Strip:
        """A one-cell `tall` left border in `component`'s colour, as Textual draws it."""
        colour, outside = self.style(component).foreground, self.style().background
        style = RichStyle(
            color=colour.rich_color if colour else None,
            bgcolor=outside.rich_color if outside else None,
            reverse=True,
        )
        return Strip([Segment(_TALL_BAR, style)], 1)

    def blank(self, width: int) -> Strip:
        return Strip.blank(width, self.style().rich_style)


def _fit(strip: Strip, width: int, style: Style) -> Strip:
    return strip.adjust_cell_length(width, style.rich_style)


# --- one renderer per kind of entry ---------------------------------------------------


def user_lines(entry: UserEntry, width: int, painter: Painter) -> list[Strip]:
    """`❯ prompt` on a lighter band, wrapped lines indented under the text."""
    band = painter.style("conversation--user")
    mark = painter.style("conversation--user", "conversation--user-gutter")
    text_width = max(1, width - 4)
    body = painter.content(Content(sanitize(entry.text)), text_width, band) or [Strip.blank(text_width)]
    gutter = painter.content(Content("❯"), 2, mark)[0].adjust_cell_length(2, mark.rich_style)
    pad, indent = _spacing(1, band), _spacing(2, band)
    return [
        Strip.join([pad, gutter if n == 0 else indent, _fit(line, text_width, band), pad])
        for n, line in enumerate(body)
    ]


def _spacing(width: int, style: Style) -> Strip:
    """Blank cells in `style`'s background only, as Textual fills padding."""
    return Strip.blank(width, RichStyle(bgcolor=style.background.rich_color if style.background else None))


def markdown_lines(blocks: list[str], width: int, painter: Painter) -> list[Strip]:
    """Markdown blocks rendered one by one, one blank line between them."""
    lines: list[Strip] = []
    for block in blocks:
        rendered = block_lines(block, width, painter)
        if rendered and lines:
            lines.append(painter.blank(width))
        lines.extend(rendered)
    return lines


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


def with_gutter(lines: list[Strip], painter: Painter, *, first: bool = True) -> list[Strip]:
    """`● ` before the first line of a message, two spaces before the others."""
    style = painter.style()
    bullet, indent = Strip([Segment("● ", style.rich_style)], 2), _spacing(2, style)
    return [Strip.join([bullet if first and n == 0 else indent, line]) for n, line in enumerate(lines)]


def assistant_lines(text: str, width: int, painter: Painter) -> list[Strip]:
    return with_gutter(markdown_lines(split_blocks(sanitize(text)), max(1, width - 2), painter), painter)


def tool_line(entry: ToolEntry, waiting: bool) -> Content:
    """`⏺ Name(args)` and, under it, what became of the call."""
    colour = {"ok": "$text-success", "running": "$accent"}.get(entry.status, "$text-error")
    head = Content.assemble(("⏺ ", colour), (sanitize(entry.name), "bold"), f"({sanitize(entry.summary)})")
    if entry.status == "running":
        state = "waiting for your approval…" if waiting else "running…"
        return Content.assemble(head, "\n", (f"  ⎿  {state}", "$text-muted"))
    if entry.status == "ok" and entry.name in TASK_TOOLS:
        return Content.assemble(head, (" ✔", colour))
    summary = output_summary(sanitize(entry.output), entry.status)
    elapsed = f" · {entry.elapsed:.1f}s" if entry.elapsed >= 1 else ""  # sub-second timings are noise
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
        for line in tool_line(entry, waiting).split("\n")
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
    return [Strip.join([margin, bar, _fit(line, inner, box)]) for line in painter.content(text, inner, box)]


def notice_lines(entry: NoticeEntry, width: int, painter: Painter) -> list[Strip]:
    """`◇ text`: instructions loaded, retries, errors, reminders."""
    style = _NOTICE_STYLE[entry.level]
    marker = "✘ " if entry.level == "error" else "◇ "
    content = Content.assemble((marker, style), (sanitize(entry.text), style))
    return painter.content(content, width, painter.style())


def plain_lines(entry: PlainEntry, width: int, painter: Painter) -> list[Strip]:
    """Lines printed as they are: a task list (`/todos`) indented, help beside a bar."""
    content = Content(sanitize(entry.text))
    if entry.kind == "tasks":
        indent = painter.blank(2)
        return [Strip.join([indent, line]) for line in painter.content(content, width - 2, painter.style())]
    muted = painter.style("conversation--help")
    bar, pad = painter.bar("conversation--help-bar"), Strip.blank(1, muted.rich_style)
    inner = max(1, width - 3)
    return [Strip.join([bar, pad, _fit(line, inner, muted), pad]) for line in painter.content(content, inner, muted)]


def estimate_height(entry: Entry, width: int) -> int:
    """About how many lines `entry` takes at `width`, without rendering it."""
    match entry:
        case ToolEntry():
            return 1 if entry.status == "ok" and entry.name in TASK_TOOLS else 2
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
    """One entry of the conversation and its lines at the pane's current width."""

    margin = 1
    """Blank lines wanted above and below (between two blocks, the larger of the two)."""

    def __init__(self, entry: Entry) -> None:
        self.entry = entry
        self.lines: list[Strip] | None = None
        """The rendered lines, or None until the block is first drawn at this width."""
        self.height = 1

    @property
    def rendered(self) -> bool:
        return self.lines is not None

    def line(self, y: int) -> Strip:
        assert self.lines is not None
        return self.lines[y]

    def text(self) -> str:
        """What the block shows, as plain text (for selections and tests)."""
        return "\n".join(line.text.rstrip() for line in self.lines or [])

    def render(self, width: int, painter: Painter) -> None:
        self.lines = self._render(width, painter)
        self.height = len(self.lines)

    def estimate(self, width: int) -> None:
        """Forget the lines (the width changed) and guess the height until they are drawn again."""
        self.lines = None
        self.height = estimate_height(self.entry, width)

    def _render(self, width: int, painter: Painter) -> list[Strip]:
        match self.entry:
            case UserEntry() as entry:
                return user_lines(entry, width, painter)
            case AssistantEntry(text=text):
                return assistant_lines(text, width, painter)
            case NoticeEntry() as entry:
                return notice_lines(entry, width, painter)
            case PlainEntry() as entry:
                return plain_lines(entry, width, painter)
        raise TypeError(f"no renderer for {self.entry!r}")


class ToolBlock(Block):
    """`⏺ Name(args)` and a `✔`/`✘` line; expanded, the call's whole output under it."""

    margin = 0
    entry: ToolEntry

    def __init__(self, entry: ToolEntry) -> None:
        super().__init__(entry)
        self.waiting = False
        """Whether the call waits for the person's approval (not running yet)."""
        self.expanded = False

    def _render(self, width: int, painter: Painter) -> list[Strip]:
        return tool_lines(self.entry, waiting=self.waiting, expanded=self.expanded, width=width, painter=painter)


def block_for(entry: Entry) -> Block:
    return ToolBlock(entry) if isinstance(entry, ToolEntry) else Block(entry)


class LiveBlock:
    """The message being streamed.

    Its finished Markdown blocks are rendered once, when they finish; only the last block
    (the tail) is rendered again as text arrives. `update` takes in what arrived since the
    last frame.
    """

    margin = 1

    def __init__(self) -> None:
        self._sanitizer = StreamSanitizer()
        self._markdown = GrowingMarkdown()
        self._blocks: list[str] = []
        """The finished blocks, kept to draw them again at another width."""
        self._done: list[Strip] = []
        self._tail: list[Strip] = []
        self._tail_drawn: tuple[str, list[Strip]] = ("", [])
        """The tail as last drawn and its lines (without the gutter), at `_width`."""
        self._width = 0
        self.height = 0
        self.rendered = True
        self.dirty = False
        """Text arrived that is not drawn yet."""

    @property
    def text(self) -> str:
        """Everything streamed so far, sanitized."""
        return self._markdown.text

    def feed(self, delta: str) -> None:
        safe = self._sanitizer.feed(delta)
        if safe:
            self._markdown.append(safe)
            self.dirty = True

    def update(self, width: int, painter: Painter) -> None:
        """Draw what arrived: new finished blocks once, and the tail again."""
        width = max(1, width - 2)
        if width != self._width:
            self._width, self._done, self._tail_drawn = width, [], ("", [])
            for block in self._blocks:
                self._add_block(block, painter)
        for block in self._markdown.settle():
            self._blocks.append(block)
            self._add_block(block, painter)
        tail = self._markdown.tail
        self._tail_drawn = (tail, block_lines(tail, width, painter) if tail.strip() else [])
        lines = list(self._tail_drawn[1])
        if lines and self._done:
            lines.insert(0, painter.blank(width))
        self._tail = with_gutter(lines, painter, first=not self._done)
        self.height = len(self._done) + len(self._tail)
        self.dirty = False

    def _add_block(self, block: str, painter: Painter) -> None:
        drawn, drawn_lines = self._tail_drawn
        # Finished as it was last drawn (the usual case): keep those lines.
        same = drawn.rstrip() == block.rstrip()
        lines = list(drawn_lines) if same else block_lines(block, self._width, painter)
        if lines and self._done:
            lines.insert(0, painter.blank(self._width))
        self._done.extend(with_gutter(lines, painter, first=not self._done))

    def line(self, y: int) -> Strip:
        done = self._done
        return done[y] if y < len(done) else self._tail[y - len(done)]

    def lines(self) -> list[Strip]:
        return [*self._done, *self._tail]
