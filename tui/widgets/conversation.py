"""The conversation pane: one line-based widget, whatever the length of the session.

Entries are data (`transcript.py`); each becomes a block (`blocks.py`) whose lines are
rendered the first time they come near the screen and kept until the width changes.
The pane draws only the lines in view (Textual's Line API), so neither a keystroke nor a
new token makes Textual arrange the history again: the screen holds the same handful of
widgets with 10 entries or 10,000. Blocks never drawn yet have an estimated height; when
they are drawn, the line at the top of the view stays where it is.

The message being streamed is the last block. Text arrives per token but is drawn at
most `FRAME_RATE` times a second (less when drawing falls behind), and only its last
Markdown block is drawn again each time. While it streams, new blocks go above it so
the live text stays last; when it finishes it turns into an ordinary block in place,
with the very lines already on screen.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.color import Color
from textual.events import Click, Resize
from textual.filter import LineFilter
from textual.geometry import Offset, Region, Size
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.selection import Selection
from textual.strip import Strip
from textual.style import Style
from textual.timer import Timer

from ..transcript import AssistantEntry, Entry, ThoughtEntry, ToolEntry, ToolStatus
from .blocks import AssistantBlock, Block, FoldingBlock, LiveBlock, ThoughtBlock, ToolBlock, block_for
from .painter import Painter
from .scrollbar import steady_vertical_scrollbar

FRAME_RATE = 20
"""Most redraws of the live message per second: smooth for text, and each redraw
repaints the whole pane (the view scrolls with it)."""
SLOWEST_FRAME = 0.25
"""However far behind drawing falls, the live message is redrawn at least this often (s)."""
BURST_FRAME = 0.25
"""While more text waits than a frame takes in (a burst), it is taken in a slice at a time
with keys served between slices, and drawn only this often (s): drawing every slice of a
2 MB burst cost more than taking it in. Each draw of a burst moves the whole view (a new
screen of highlighted text for the terminal); at 0.12 s they held typed keys up to 135 ms
in `benchmarks/` (the `fence`, `lines` and `line` scenarios), at 0.25 s about 100 ms."""

FRAMED_KEPT = 2_000
"""Framed lines kept for a view that moves back and forth; past this many, framed anew."""

AnyBlock = Block | LiveBlock
Anchor = tuple[AnyBlock, int]
"""A line of the document named by its block and its line in that block."""


@dataclass(frozen=True)
class _Framing:
    """What Textual's styles cache does to each line of a pane with plain styles: pad it
    in the pane's background, then apply the app's line filters (ANSI colours to the
    theme's, dimming)."""

    width: int
    height: int
    content_width: int
    padding: tuple[int, int, int, int]
    inner: RichStyle
    background: Color
    filters: tuple[LineFilter, ...]

    def frame(self, line: Strip) -> Strip:
        _, right, _, left = self.padding
        line = line.adjust_cell_length(self.content_width, self.inner)
        segments = list(line)
        if left:
            segments.insert(0, Segment(" " * left, self.inner))
        if right:
            segments.append(Segment(" " * right, self.inner))
        return self._filtered(Strip(segments, self.width))

    @cached_property
    def padding_row(self) -> Strip:
        return self._filtered(Strip([Segment(" " * self.width, self.inner)], self.width))

    def _filtered(self, strip: Strip) -> Strip:
        for line_filter in self.filters:
            strip = strip.apply_filter(line_filter, self.background)
        return strip


def _placed(line: Strip, document_y: int) -> Strip:
    """`line` with the mouse offsets of its place in the document (the blank above has none)."""
    return line if document_y < 0 else line.apply_offsets(0, document_y)


class Conversation(ScrollView, can_focus=False):
    """The scrollable conversation.

    Not focusable: `tab` goes from the prompt straight to the task panel, and the screen
    scrolls this pane with `pageup`/`pagedown` wherever the focus is.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "conversation--user",
        "conversation--user-gutter",
        "conversation--output",
        "conversation--output-bar",
        "conversation--help",
        "conversation--help-bar",
    }

    DEFAULT_CSS = """
    Conversation {
        height: 1fr;
        padding: 0 1;
        scrollbar-size-vertical: 1;
        scrollbar-gutter: stable;
        overflow-x: hidden;
    }
    Conversation > .conversation--user { background: $boost; }
    Conversation > .conversation--user-gutter { color: $text-accent; text-style: bold; }
    Conversation > .conversation--output { background: $surface; }
    Conversation > .conversation--output-bar { color: $surface-lighten-2; }
    Conversation > .conversation--help { color: $text-muted; }
    Conversation > .conversation--help-bar { color: $accent; }
    """

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """Drawn again only when its thumb moves (`scrollbar.py`): Textual's repaints it
        every frame the view follows a streaming answer."""
        return steady_vertical_scrollbar(self)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: list[Entry] = []
        self.live: LiveBlock | None = None
        self._blocks: list[AnyBlock] = []
        self._tops: list[int] = []
        """The document line where each block starts (after the blank lines above it)."""
        self._height = 0
        self._width = 0
        """The width the blocks are rendered at; 0 until the pane has a size."""
        self._tools: dict[str, ToolBlock] = {}
        self._painter = Painter(self)
        self._frame: Timer | None = None
        self._last_frame = 0.0
        self._frame_interval = 1 / FRAME_RATE
        self._waiting_tool: str | None = None
        """The tool an open approval asks about: its call's block says it waits."""
        self._prefetch_pending = False
        self._relayout_pending = False
        self._blank_line: Strip | None = None
        self._framed: dict[int, tuple[Strip, Strip]] = {}
        """Per line of the document: the line as drawn and as framed in its place (`_framed_lines`)."""
        self._framed_with: _Framing | None = None
        self._finishing = False
        """`finish_live` is taking in the rest of a burst: the screen's drawing does not too."""
        self._look: tuple[object, ...] = ()
        """The colours the blocks were drawn in: a new theme draws them again."""
        self.thought: ThoughtBlock | None = None
        """The reasoning streaming now (open, the last block), until the answer or a call starts."""
        self._thought_frame: Timer | None = None
        self._thought_cost = 0.0

    def on_mount(self) -> None:
        self.anchor()

    @property
    def blocks(self) -> list[AnyBlock]:
        return list(self._blocks)

    # --- adding -------------------------------------------------------------------

    async def add(self, entry: Entry) -> None:
        """Append an entry (above the live message, if one streams)."""
        self.entries.append(entry)
        block = block_for(entry)
        if isinstance(block, ToolBlock):
            self._tools[block.entry.call_id] = block
            if (  # the approval opened before the call's start reached the screen
                block.entry.status == "running"
                and block.entry.name == self._waiting_tool
                and not any(isinstance(b, ToolBlock) and b.waiting for b in self._blocks)
            ):
                block.waiting = True
        self._insert(block)

    def _insert(self, block: Block) -> None:
        position = len(self._blocks) - 1 if self.live is not None else len(self._blocks)
        self._blocks.insert(position, block)
        self._draw(block)
        self._relayout()

    async def load(self, entries: Iterable[Entry]) -> None:
        """Replace everything with `entries` (a resumed session); nothing is rendered yet."""
        await self.clear()
        self.entries = list(entries)
        self._blocks = [block_for(e) for e in self.entries]
        self._tools = {b.entry.call_id: b for b in self._blocks if isinstance(b, ToolBlock)}
        width = self._width or 80
        for block in self._blocks:
            if isinstance(block, Block):
                block.reset(width)
        self._relayout()
        self.anchor()

    async def clear(self) -> None:
        await self.stop_live()
        if self._thought_frame is not None:
            self._thought_frame.stop()
            self._thought_frame = None
        self.thought = None
        self.entries, self._blocks, self._tools = [], [], {}
        self._relayout()

    # --- the live message ---------------------------------------------------------

    async def write_live(self, delta: str) -> None:
        if self.live is None:
            self.live = LiveBlock()
            self._blocks.append(self.live)
        self.live.feed(delta)
        if self.live.dirty and self._frame is None:
            delay = max(0.001, self._last_frame + self._frame_interval - time.monotonic())
            self._frame = self.set_timer(delay, self._draw_live, name="live message")

    def _draw_live(self) -> None:
        """One frame of the live message: whatever arrived since the last one."""
        self._frame = None
        live = self.live
        if live is None or not live.dirty or not self._width:
            return
        if self._in_burst(live):
            live.take_in()
            self._frame = self.set_timer(0.001, self._draw_live, name="live message")
            return
        started = time.monotonic()
        height = live.height
        live.update(self._width, self._painter)
        if live.height == height and self._blocks[-1] is live and self._tops:
            # The same number of lines: nothing moves, only the lines that changed (most
            # frames of a steady stream: the last line grows). Repaint those, not the pane.
            first = self._tops[-1] + live.changed_from
            if live.changed_from < live.height:
                self.refresh_lines(first + self._lift, self._tops[-1] + live.height - first)
        else:
            self._relayout()
        cost = time.monotonic() - started
        self._last_frame = time.monotonic()
        if live.behind():  # a burst bigger than one frame takes: the rest in the next, soon
            self._frame = self.set_timer(0.001, self._draw_live, name="live message")
        else:  # falling behind (a huge tail, a slow machine): draw less often, never too rarely
            self._frame_interval = min(SLOWEST_FRAME, max(1 / FRAME_RATE, 3 * cost))

    def _in_burst(self, live: LiveBlock) -> bool:
        """More text waits than a frame takes in, and the last drawing is recent: take the
        next slice in without drawing (`BURST_FRAME`)."""
        return live.backlog and time.monotonic() - self._last_frame < BURST_FRAME

    def _cancel_frame(self) -> None:
        if self._frame is not None:
            self._frame.stop()
            self._frame = None

    async def stop_live(self) -> None:
        """Drop the live message (a discarded response, or nothing worth keeping)."""
        self._cancel_frame()
        live, self.live = self.live, None
        if live is not None:
            self._blocks.remove(live)
            self._relayout()

    async def finish_live(self, text: str) -> None:
        """Turn the live message into a finished one holding `text`, in place."""
        self._cancel_frame()
        live = self.live
        same = live is not None and self._width > 0 and self.is_attached and live.streamed(text)
        if live is not None and same:
            self._finishing = True  # the screen's own drawing leaves the live message to this loop
            try:
                while live.behind():  # what is left of a burst, a slice at a time, drawn now and then
                    if self._in_burst(live):
                        live.take_in()
                    else:
                        live.update(self._width, self._painter)
                        self._relayout()
                        self._last_frame = time.monotonic()
                    await asyncio.sleep(0)  # keys and the screen go first
            finally:
                self._finishing = False
        self.live = None
        position = self._blocks.index(live) if live is not None else len(self._blocks)
        if live is not None:
            self._blocks.remove(live)
        if text.strip():
            entry = AssistantEntry(text)
            self.entries.append(entry)
            if live is not None and same:
                block = live.finish(entry, self._painter)  # the same lines: the swap changes nothing on screen
            else:
                block = AssistantBlock(entry)
                self._draw(block)
            self._blocks.insert(position, block)
        self._relayout()

    # --- the model's reasoning -------------------------------------------------------

    async def write_thought(self, delta: str) -> None:
        """Append to the thought streaming now, starting one (open) if needed; drawn at
        most `FRAME_RATE` times a second, less when drawing it falls behind."""
        if self.thought is None:
            entry = ThoughtEntry("", streaming=True)
            self.entries.append(entry)
            self.thought = ThoughtBlock(entry)
            self._insert(self.thought)
        self.thought.entry.text += delta
        if self._thought_frame is None:
            delay = max(1 / FRAME_RATE, 3 * self._thought_cost)
            self._thought_frame = self.set_timer(min(SLOWEST_FRAME, delay), self._draw_thought, name="thought")

    def _draw_thought(self) -> None:
        self._thought_frame = None
        if self.thought is not None:
            started = time.monotonic()
            self._redraw(self.thought)
            self._thought_cost = time.monotonic() - started

    async def finish_thought(self, seconds: float | None) -> None:
        """The answer or a call has begun: the thought folds to `∴ Thought for N s`
        (dropped when it held nothing but blank space)."""
        if self._thought_frame is not None:
            self._thought_frame.stop()
            self._thought_frame = None
        block, self.thought = self.thought, None
        if block is None:
            return
        block.entry.streaming, block.entry.seconds = False, seconds
        if not block.entry.text.strip():
            self.entries.remove(block.entry)
            self._blocks.remove(block)
            self._relayout()
            return
        self._redraw(block)

    async def drop_thought(self) -> None:
        """The response it belonged to failed and will be asked again."""
        if self.thought is not None:
            self.thought.entry.text = ""
        await self.finish_thought(None)

    # --- tool calls -----------------------------------------------------------------

    async def finish_tool(self, call_id: str, name: str, output: str, status: ToolStatus, elapsed: float) -> None:
        block = self._tools.get(call_id)
        if block is None:  # finished without a start (denied before it ran)
            await self.add(ToolEntry(call_id, name, "", status, output, elapsed))
            return
        block.entry.status, block.entry.output, block.entry.elapsed = status, output, elapsed
        block.waiting = False
        self._redraw(block)

    def set_progress(self, call_id: str, text: str) -> None:
        """What a running call is doing now (an `Agent` call's sub-agent), under its line."""
        block = self._tools.get(call_id)
        if block is not None and block.entry.status == "running" and block.entry.progress != text:
            block.entry.progress = text
            self._redraw(block)

    def set_waiting(self, tool: str | None) -> None:
        """Mark the running call of `tool` as waiting for approval; None: the wait is over."""
        self._waiting_tool = tool
        blocks = [b for b in self._blocks if isinstance(b, ToolBlock)]
        for block in blocks:
            if block.waiting:
                block.waiting = False
                self._redraw(block)
        if tool is None:
            return
        for block in reversed(blocks):  # the start may not have arrived yet: `add` marks it then
            if block.entry.status == "running" and block.entry.name == tool:
                block.waiting = True
                self._redraw(block)
                break

    def last_tool_block(self) -> ToolBlock | None:
        for block in reversed(self._blocks):
            if isinstance(block, ToolBlock):
                return block
        return None

    def last_folding_block(self) -> FoldingBlock | None:
        for block in reversed(self._blocks):
            if isinstance(block, FoldingBlock):
                return block
        return None

    async def toggle_output(self, block: FoldingBlock) -> None:
        """Show or hide a finished call's whole output (an attachment's content) under its line."""
        if not block.can_fold:
            return
        block.expanded = not block.expanded
        self._redraw(block)
        if block.expanded and block in self._blocks:
            self._show_top_of(block)
        elif self.scroll_y >= self.max_scroll_y:  # back at the end: follow new output again
            self.anchor()

    def _show_top_of(self, block: FoldingBlock) -> None:
        """Scroll the least that shows the call's line and as much of its output as fits."""
        top = self._tops[self._blocks.index(block)]
        viewport = self.scrollable_content_region.height
        if self._following() and top >= self._height - viewport:
            return  # all of it in view at the end, where the view stays
        self.release_anchor()  # `force`: the scrollbar that allows it appears only at the next layout
        region = Region(0, top, 1, min(block.height, viewport))
        self.scroll_to_region(region, animate=False, immediate=True, force=True)

    async def toggle_last_output(self) -> None:
        """`ctrl+o`: the last call's output (or attachment)."""
        block = self.last_folding_block()
        if block is not None:
            await self.toggle_output(block)

    async def on_click(self, event: Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        found = self._block_at(offset.y + round(self.scroll_y) - self._lift)
        if found is not None and isinstance(found[0], FoldingBlock):
            event.stop()
            await self.toggle_output(found[0])

    # --- drawing blocks -----------------------------------------------------------------

    def _draw(self, block: Block) -> None:
        """Draw a new or changed block now (it is at the end, or it just changed in view)."""
        block.reset(self._width or 80)
        if self._width and self.is_attached:  # else: not laid out yet, or gone (the app quits)
            block.draw(0, block.height, self._width, self._painter)

    def _redraw(self, block: Block) -> None:
        self._draw(block)
        self._relayout()

    def _relayout(self) -> None:
        """Place the blocks again after heights changed, keeping the line at the top of the view."""
        anchor = self._anchor()
        tops: list[int] = []
        y, above = 0, 0
        for block in self._blocks:
            y += max(above, block.margin)
            tops.append(y)
            y += block.height
            above = block.margin
        self._tops, self._height = tops, y + above
        self._resize(Size(self._width, self._height))
        self._restore(anchor)
        self.refresh()

    def _resize(self, size: Size) -> None:
        """Set the scrollable size; without a screen layout when only the length changes.

        A new `virtual_size` makes Textual arrange and repaint the whole screen. When the
        width is the same and the scrollbar stays as it is, which is every frame of a
        stream, the scrollbar is told the new length directly and only this pane repaints.
        """
        if size == self.virtual_size:
            return
        viewport = self.scrollable_content_region.height
        scrollbar = self.show_vertical_scrollbar
        if size.width != self.virtual_size.width or scrollbar != (size.height > viewport) or not viewport:
            self.virtual_size = size  # the scrollbar comes or goes: a real layout
            return
        self.set_reactive(ScrollView.virtual_size, size)
        if scrollbar:
            bar = self.vertical_scrollbar
            bar.window_virtual_size, bar.window_size = size.height, viewport  # it repaints if its thumb moved

    def _following(self) -> bool:
        return self.is_anchored and not self._anchor_released

    def _anchor(self) -> Anchor | None:
        if self._following():
            return None
        return self._block_at(round(self.scroll_y))

    def _restore(self, anchor: Anchor | None) -> None:
        if self._following():
            y = max(0, self._height - self.scrollable_content_region.height)
        elif anchor is not None and anchor[0] in self._blocks:
            block, line = anchor
            y = self._tops[self._blocks.index(block)] + line
        else:
            return
        if y != round(self.scroll_y):
            self.set_reactive(ScrollView.scroll_target_y, float(y))
            self.scroll_y = float(y)

    def _block_at(self, y: int) -> Anchor | None:
        """The block drawn at document line `y` and the line within it (negative: the blank above)."""
        index = bisect_right(self._tops, y) - 1
        if not self._blocks:
            return None
        if index < 0:
            return self._blocks[0], y - self._tops[0]
        return self._blocks[index], y - self._tops[index]

    def _reflow(self, width: int, *, restyle: bool = False) -> None:
        """The width (or the theme) changed: every block is drawn again when next in view."""
        self._width = width
        for block in self._blocks:
            if isinstance(block, Block):
                block.reset(width)
            else:
                block.update(width, self._painter, redraw=restyle)
        self._relayout()

    def _blank(self) -> Strip:
        blank = self._blank_line
        if blank is None or blank.cell_length != self._width:
            blank = self._blank_line = Strip.blank(self._width, self.rich_style)
        return blank

    def notify_style_update(self) -> None:
        """Styles were applied again: when the colours changed (another theme), draw anew."""
        super().notify_style_update()
        if not self.is_attached:
            return
        try:
            look = (self.rich_style, *(self.get_component_rich_style(n) for n in sorted(self.COMPONENT_CLASSES)))
        except KeyError:  # the component styles are not set up yet (first styling)
            return
        if look != self._look:
            self._look, self._blank_line = look, None
            if self._width:
                self._reflow(self._width, restyle=True)

    def _draw_near_view(self, screens: int = 0) -> bool:
        """Render the blocks in view (and `screens` screens above and below); whether any were."""
        viewport = max(1, self.scrollable_content_region.height)
        drawn = False
        for _ in range(4):  # each pass may move the view; it settles at once in practice
            top = round(self.scroll_y) - self._lift
            start = max(0, bisect_right(self._tops, top - screens * viewport) - 1)
            end = bisect_right(self._tops, top + (1 + screens) * viewport)
            changed = False
            for index in range(start, end):  # each block draws the part of it in range
                block, block_top = self._blocks[index], self._tops[index]
                low, high = top - screens * viewport - block_top, top + (1 + screens) * viewport - block_top
                changed = block.draw(max(0, low), min(block.height, high), self._width, self._painter) or changed
            if not changed:
                break
            drawn = True
            self._relayout()
        return drawn

    def _draw_around_view(self) -> None:
        """After a frame: the screens above and below too, so paging lands on exact lines.

        Not while the view follows a message still arriving: the screen above is gone by
        the next frame (a burst scrolls a screen or more a frame), and paging up draws it then."""
        self._prefetch_pending = False
        streaming = self.live is not None and self.live.dirty and self._following()
        if self._width and self.is_attached and not streaming:
            self._draw_near_view(screens=1)

    def _on_resize(self, event: Resize) -> None:
        self._prepare()

    def _prepare(self) -> None:
        width = self.scrollable_content_region.width
        if width <= 0:
            return
        if width != self._width:
            self._reflow(width)
        live = self.live
        if live is not None and live.dirty and self._frame is None and not self._finishing:
            live.update(width, self._painter)
            self._relayout()
        self._draw_near_view()
        if not self._prefetch_pending:
            self._prefetch_pending = True
            self.call_after_refresh(self._draw_around_view)

    # --- the Line API -------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        self._prepare()
        framing = self._framing()
        if framing is None:
            return super().render_lines(crop)
        return self._framed_lines(crop, framing)

    def _framing(self) -> _Framing | None:
        """How Textual would frame each line of this pane: its padding, background and line
        filters, when that is all it would do (no border, outline, tint, opacity or hatch:
        this pane's own CSS); else None, and Textual frames them itself."""
        styles = self.styles
        top, right, bottom, left = styles.padding
        width, height = self.region.size
        content = self.content_region.size
        if (
            any(edge for edge, _ in styles.border)
            or any(edge for edge, _ in styles.outline)
            or styles.tint.a
            or self.opacity != 1.0
            or styles.text_opacity != 1.0
            or (styles.has_rule("hatch") and styles.hatch != "none")
            or content.width != width - left - right
            or content.height != height - top - bottom
        ):
            return None
        base_background, background = self.background_colors
        inner = Style(background=base_background + background).rich_style
        filters = tuple(self.get_line_filters())
        return _Framing(width, height, content.width, (top, right, bottom, left), inner, background, filters)

    def _framed_lines(self, crop: Region, framing: _Framing) -> list[Strip]:
        """The lines in `crop`, each framed as Textual's styles cache would frame it, but
        kept per line of the document: when the view moves (every frame the view follows
        a streaming answer), the lines it already showed cost a lookup, not a new frame
        and a colour filter each (Textual keeps its framed lines per row of the screen)."""
        if framing != self._framed_with or len(self._framed) > FRAMED_KEPT:
            self._framed.clear()
            self._framed_with = framing
        framing = self._framed_with  # the kept one: its padding row is made once
        top, _, bottom, _ = framing.padding
        first = round(self.scroll_y) - self._lift - top  # the document's line at row 0
        strips: list[Strip] = []
        for y in crop.line_range:
            if y < top or y >= framing.height - bottom:
                strips.append(framing.padding_row)
                continue
            document_y = first + y
            line = self._drawn_line(document_y)
            kept = self._framed.get(document_y)
            if kept is not None and kept[0] is line:
                strip = kept[1]
            elif kept is not None and kept[0] == line:  # drawn again the same (a live tail's first lines)
                strip = kept[1]
                self._framed[document_y] = (line, strip)
            else:
                strip = framing.frame(_placed(line, document_y))
                self._framed[document_y] = (line, strip)
            strips.append(strip)
        x1, x2 = crop.column_span
        if (x1, x2) != (0, framing.width):
            strips = [strip.crop(x1, x2) for strip in strips]
        return self._styled_links(strips)

    def _styled_links(self, strips: list[Strip]) -> list[Strip]:
        """The link under the mouse in its hover style, as Textual's own rendering does."""
        hover = self.hover_style
        if not (self.auto_links and hover._link_id and hover._meta and "@click" in hover.meta):
            return strips
        style = self.link_style_hover
        return [strip.style_links(hover.link_id, style) for strip in strips] if style else strips

    @property
    def _lift(self) -> int:
        """Blank lines above a document shorter than the view: it sits at the bottom, by the prompt."""
        return max(0, self.scrollable_content_region.height - self._height)

    def render_line(self, y: int) -> Strip:
        document_y = round(self.scroll_y) - self._lift + y
        return _placed(self._drawn_line(document_y), document_y)

    def _drawn_line(self, document_y: int) -> Strip:
        """Line `document_y` as drawn, selection included, before the mouse offsets that
        tie it to its place (a blank line's strip is shared by many places)."""
        if document_y < 0:
            return self._blank()
        strip = self._line(document_y)
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(document_y)) is not None:
            strip = self._highlight(strip, *span)
        return strip

    def _line(self, y: int) -> Strip:
        found = self._block_at(y)
        if found is None:
            return self._blank()
        block, line = found
        if not 0 <= line < block.height:
            return self._blank()
        if block.draw(line, line + 1, self._width, self._painter):  # `_prepare` missed it
            self._settle_later()
            if line >= block.height:
                return self._blank()
        return block.line(line, self._painter)

    def _settle_later(self) -> None:
        """Place the blocks again after this frame: one was drawn while painting."""
        if not self._relayout_pending:
            self._relayout_pending = True
            self.call_after_refresh(self._settle)

    def _settle(self) -> None:
        self._relayout_pending = False
        self._relayout()

    def _highlight(self, strip: Strip, start: int, end: int) -> Strip:
        style = self.screen.get_component_rich_style("screen--selection")
        end = strip.cell_length if end == -1 else end
        before, chosen, after = strip.divide([start, end, strip.cell_length])[:3]
        chosen = Strip(list(Segment.apply_style(chosen, post_style=style)), chosen.cell_length)
        return Strip.join([before, chosen, after])

    # --- selection and text ---------------------------------------------------------------

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        first = selection.start.y if selection.start is not None else 0
        last = selection.end.y if selection.end is not None else self._height - 1
        lines = [self._line(y).text.rstrip() for y in range(first, last + 1)]
        shifted = Selection(
            None if selection.start is None else Offset(selection.start.x, 0),
            None if selection.end is None else Offset(selection.end.x, last - first),
        )
        return shifted.extract("\n".join(lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    def block_text(self, block: AnyBlock) -> str:
        """What `block` shows, as plain text (drawn now if it was not yet)."""
        lines = block.all_lines(self._width or 80, self._painter)
        if lines:
            self._relayout()  # it may have been an estimate until now
        return "\n".join(line.text.rstrip() for line in lines)
