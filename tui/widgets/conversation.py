"""The conversation pane: entries as data, widgets for the newest of them only.

Long sessions stay fast because at most `max_mounted` blocks are mounted; older ones are
replaced by a single "N earlier messages" block that mounts them back on a click or when
the person scrolls to the top. While a message streams, new blocks go above it so the
live text stays last.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from textual.containers import VerticalScroll
from textual.events import Click
from textual.widget import Widget

from ..transcript import AssistantEntry, Entry, ToolEntry, ToolStatus
from .blocks import AssistantBlock, EarlierBlock, LiveAssistant, ToolBlock, block_for

MAX_MOUNTED = 200
REHYDRATE_STEP = 100


class Conversation(VerticalScroll, can_focus=False):
    """Scrollable list of conversation blocks.

    Not focusable: `tab` goes from the prompt straight to the task panel, and the screen
    scrolls this pane with `pageup`/`pagedown` wherever the focus is.
    """

    DEFAULT_CSS = """
    Conversation {
        height: 1fr;
        padding: 0 1;
        scrollbar-size-vertical: 1;
    }
    Conversation > * { margin: 1 0; }
    Conversation > ToolBlock { margin: 0; }
    Conversation > ToolBlock > .tool-line { text-wrap: nowrap; text-overflow: ellipsis; }
    Conversation > UserBlock { height: auto; }
    Conversation > UserBlock > .gutter { width: 2; color: $text-accent; text-style: bold; }
    Conversation > UserBlock > .user-text { width: 1fr; }
    Conversation > LiveAssistant { height: auto; }
    Conversation > LiveAssistant > .gutter { width: 2; }
    Conversation > LiveAssistant > Markdown { padding: 0; margin: 0; }
    Conversation > ToolBlock { height: auto; }
    Conversation > ToolBlock > Log.tool-output {
        height: auto;
        max-height: 16;
        overflow: auto auto;
        margin: 0 0 0 5;
        border-left: tall $surface-lighten-2;
        background: $surface;
    }
    Conversation > EarlierBlock:hover { background: $boost; }
    """

    def __init__(self, *, max_mounted: int = MAX_MOUNTED, id: str | None = None) -> None:
        super().__init__(id=id)
        self.max_mounted = max_mounted
        self.entries: list[Entry] = []
        self._first = 0  # index of the first entry with a mounted block
        self._blocks: deque[Widget] = deque()
        self._tools: dict[str, ToolEntry] = {}
        self._earlier: EarlierBlock | None = None
        self.live: LiveAssistant | None = None
        self._waiting_tool: str | None = None
        """The tool an open approval asks about: its call's block says it waits."""

    def on_mount(self) -> None:
        self.anchor()

    @property
    def mounted_blocks(self) -> int:
        return len(self._blocks)

    @property
    def hidden_entries(self) -> int:
        return self._first

    # --- adding -------------------------------------------------------------------

    async def add(self, entry: Entry) -> None:
        """Append an entry and mount its block (above the live message, if one streams)."""
        self.entries.append(entry)
        if isinstance(entry, ToolEntry):
            self._tools[entry.call_id] = entry
        block = block_for(entry)
        if (  # the approval opened before the call's start reached the screen
            isinstance(block, ToolBlock)
            and block.entry.status == "running"
            and block.entry.name == self._waiting_tool
            and not any(isinstance(b, ToolBlock) and b.waiting for b in self._blocks)
        ):
            block.set_waiting(True)
        self._blocks.append(block)
        if self.live is not None:
            await self.mount(block, before=self.live)
        else:
            await self.mount(block)
        await self._trim()

    async def load(self, entries: Iterable[Entry]) -> None:
        """Replace everything with `entries` (a resumed session), mounting only the newest."""
        await self.clear()
        self.entries = list(entries)
        self._tools = {e.call_id: e for e in self.entries if isinstance(e, ToolEntry)}
        self._first = max(0, len(self.entries) - self.max_mounted)
        blocks = [block_for(e) for e in self.entries[self._first :]]
        self._blocks.extend(blocks)
        if blocks:
            await self.mount_all(blocks)
        await self._sync_earlier()
        self.anchor()

    async def clear(self) -> None:
        await self.stop_live()
        await self.remove_children()
        self.entries = []
        self._tools = {}
        self._blocks.clear()
        self._first = 0
        self._earlier = None

    # --- the live message ---------------------------------------------------------

    async def write_live(self, delta: str) -> None:
        if self.live is None:
            self.live = LiveAssistant()
            await self.mount(self.live)
        await self.live.write(delta)

    async def stop_live(self) -> None:
        """Drop the live message (a discarded response, or nothing worth keeping)."""
        live, self.live = self.live, None
        if live is not None:
            await live.stop()
            await live.remove()

    async def finish_live(self, text: str) -> None:
        """Collapse the live message into a single finished block holding `text`."""
        live, self.live = self.live, None
        if live is not None:
            await live.stop()
        if text.strip():
            entry = AssistantEntry(text)
            self.entries.append(entry)
            block = AssistantBlock(entry)
            self._blocks.append(block)
            if live is not None and live.parent is self:
                await self.mount(block, after=live)
            else:
                await self.mount(block)
        if live is not None:
            await live.remove()
        await self._trim()

    # --- tool calls -----------------------------------------------------------------

    async def finish_tool(self, call_id: str, name: str, output: str, status: ToolStatus, elapsed: float) -> None:
        entry = self._tools.get(call_id)
        if entry is None:  # finished without a start (denied before it ran)
            await self.add(ToolEntry(call_id, name, "", status, output, elapsed))
            return
        entry.status, entry.output, entry.elapsed = status, output, elapsed
        for block in self._blocks:
            if isinstance(block, ToolBlock) and block.entry is entry:
                block.set_waiting(False)
                block.refresh_entry()
                break

    def set_waiting(self, tool: str | None) -> None:
        """Mark the running call of `tool` as waiting for approval; None: the wait is over."""
        self._waiting_tool = tool
        blocks = [b for b in self._blocks if isinstance(b, ToolBlock)]
        for block in blocks:
            block.set_waiting(False)
        if tool is None:
            return
        for block in reversed(blocks):  # the start may not have arrived yet: `add` marks it then
            if block.entry.status == "running" and block.entry.name == tool:
                block.set_waiting(True)
                break

    def last_tool_block(self) -> ToolBlock | None:
        for block in reversed(self._blocks):
            if isinstance(block, ToolBlock):
                return block
        return None

    # --- bounding -------------------------------------------------------------------

    async def _trim(self) -> None:
        """Unmount the oldest blocks beyond `max_mounted`, unless the person scrolled up to read."""
        excess = len(self._blocks) - self.max_mounted
        if excess <= 0 or self._anchor_released:
            return
        old = [self._blocks.popleft() for _ in range(excess)]
        self._first += excess
        await self.remove_children(old)
        await self._sync_earlier()

    async def show_earlier(self, count: int = REHYDRATE_STEP) -> None:
        """Mount up to `count` more of the hidden older blocks."""
        if self._first == 0:
            return
        start = max(0, self._first - count)
        blocks = [block_for(e) for e in self.entries[start : self._first]]
        reading = self._blocks[0] if self._blocks else None
        self._first = start
        self._blocks.extendleft(reversed(blocks))
        self.release_anchor()
        if self._earlier is not None:
            await self.mount_all(blocks, after=self._earlier)
        await self._sync_earlier()
        if reading is not None:  # keep the view on what the person was reading
            self.call_after_refresh(self.scroll_to_widget, reading, top=True, animate=False)

    async def _sync_earlier(self) -> None:
        if self._first == 0:
            if self._earlier is not None:
                earlier, self._earlier = self._earlier, None
                await earlier.remove()
        elif self._earlier is None:
            self._earlier = EarlierBlock(self._first)
            await self.mount(self._earlier, before=0)
        else:
            self._earlier.set_count(self._first)

    async def on_click(self, event: Click) -> None:
        if self._earlier is not None and event.widget is self._earlier:
            await self.show_earlier()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value == 0 and old_value > 0 and self._first > 0 and self._anchor_released:
            self.call_later(self.show_earlier)
