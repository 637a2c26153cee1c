"""Conversation blocks: one small widget per entry, built from the entry alone.

Every string that came from the model, a file or a command goes through `sanitize` and
reaches the screen as `Content`/`Text` (never as markup), so `[/bold]` or an escape
sequence in output is drawn as what it is.
"""

from __future__ import annotations

from rich.markdown import Markdown as RichMarkdown
from rich.table import Table
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.events import Click
from textual.widget import Widget
from textual.widgets import Log, Markdown, Static
from textual.widgets.markdown import MarkdownStream

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

MAX_OUTPUT_LINES = 2100
"""Lines of tool output kept when a call is expanded; the core caps output too. Room for a
whole Read window (2000 lines) and the note after it, so a Read's line 1 is never dropped."""

_STATUS_ICON = {"ok": "✔", "error": "✘", "denied": "✘", "cancelled": "✘", "running": "…"}
_NOTICE_STYLE = {"info": "$text-muted", "warning": "$text-warning", "error": "$text-error", "dim": "$text-muted 60%"}


class UserBlock(Horizontal):
    """`❯ prompt`, wrapped lines indented under the text."""

    def __init__(self, entry: UserEntry) -> None:
        super().__init__()
        self.entry = entry

    def compose(self) -> ComposeResult:
        yield Static("❯", classes="gutter", markup=False)
        yield Static(Content(sanitize(self.entry.text)), classes="user-text", markup=False)


def assistant_renderable(text: str) -> Table:
    """A finished message: a `●` gutter and the text as Rich Markdown, in one renderable."""
    grid = Table.grid(padding=0, expand=True)
    grid.add_column(width=2, no_wrap=True)
    grid.add_column(ratio=1)
    grid.add_row("●", RichMarkdown(sanitize(text)))
    return grid


class AssistantBlock(Static):
    """A finished assistant message: one widget, whatever the length of the text."""

    def __init__(self, entry: AssistantEntry) -> None:
        super().__init__(assistant_renderable(entry.text), markup=False)


class LiveAssistant(Horizontal):
    """The message being streamed: a Textual `Markdown` fed through a `MarkdownStream`."""

    def __init__(self) -> None:
        super().__init__()
        self.markdown = Markdown()
        self._stream: MarkdownStream | None = None
        self._sanitizer = StreamSanitizer()
        self.text = ""

    def compose(self) -> ComposeResult:
        yield Static("●", classes="gutter", markup=False)
        yield self.markdown

    async def write(self, delta: str) -> None:
        safe = self._sanitizer.feed(delta)
        if not safe:
            return
        self.text += safe
        if self._stream is None:
            self._stream = Markdown.get_stream(self.markdown)
        await self._stream.write(safe)

    async def stop(self) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None


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


class ToolBlock(Vertical):
    """`⏺ Name(args)` and a `✔`/`✘` line; a click shows the full output in a capped `Log`."""

    def __init__(self, entry: ToolEntry) -> None:
        super().__init__(classes=f"-{entry.status}")
        self.entry = entry
        self._waiting = False
        self._line = Static(self._render_line(), markup=False, classes="tool-line")
        self._log: Log | None = None

    def compose(self) -> ComposeResult:
        yield self._line

    @property
    def waiting(self) -> bool:
        """Whether the call waits for the person's approval (not running yet)."""
        return self._waiting

    def set_waiting(self, waiting: bool) -> None:
        if waiting != self._waiting:
            self._waiting = waiting
            self._line.update(self._render_line())

    def _render_line(self) -> Content:
        entry = self.entry
        colour = {"ok": "$text-success", "running": "$accent"}.get(entry.status, "$text-error")
        head = Content.assemble(("⏺ ", colour), (sanitize(entry.name), "bold"), f"({sanitize(entry.summary)})")
        if entry.status == "running":
            state = "waiting for your approval…" if self._waiting else "running…"
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

    @property
    def expanded(self) -> bool:
        return self._log is not None

    def refresh_entry(self) -> None:
        """Redraw after `entry` changed (the call finished)."""
        self.set_classes(f"-{self.entry.status}" + (" -expanded" if self.expanded else ""))
        self._line.update(self._render_line())
        if self._log is not None:
            self._log.clear()
            self._write_log(self._log)

    async def toggle(self) -> None:
        if self._log is not None:
            log, self._log = self._log, None
            self.remove_class("-expanded")
            await log.remove()
        elif self.entry.status != "running":
            self._log = Log(max_lines=MAX_OUTPUT_LINES + 1, auto_scroll=False, classes="tool-output")
            self.add_class("-expanded")
            await self.mount(self._log)
            self._write_log(self._log)

    def _write_log(self, log: Log) -> None:
        log.write_lines(output_lines(self.entry.output))

    async def on_click(self, event: Click) -> None:
        event.stop()
        await self.toggle()


class NoticeBlock(Static):
    """`◇ text`: instructions loaded, retries, errors, reminders."""

    def __init__(self, entry: NoticeEntry) -> None:
        style = _NOTICE_STYLE[entry.level]
        marker = "✘ " if entry.level == "error" else "◇ "
        super().__init__(
            Content.assemble((marker, style), (sanitize(entry.text), style)),
            markup=False,
            classes=f"-{entry.level}",
        )


class PlainBlock(Static):
    """Lines printed as they are: a task list (`/todos`), help."""

    def __init__(self, entry: PlainEntry) -> None:
        super().__init__(Content(sanitize(entry.text)), markup=False, classes=f"-{entry.kind}")


class EarlierBlock(Static):
    """Stands in for blocks that are no longer mounted; a click mounts some back."""

    def __init__(self, count: int) -> None:
        super().__init__(self._label(count), markup=False)

    @staticmethod
    def _label(count: int) -> Content:
        noun = "message" if count == 1 else "messages"
        return Content.assemble(("▲ ", "$accent"), (f"{count} earlier {noun} (click to show)", "$text-muted"))

    def set_count(self, count: int) -> None:
        self.update(self._label(count))


def block_for(entry: Entry) -> Widget:
    """The widget that draws `entry`."""
    match entry:
        case UserEntry():
            return UserBlock(entry)
        case AssistantEntry():
            return AssistantBlock(entry)
        case ToolEntry():
            return ToolBlock(entry)
        case NoticeEntry():
            return NoticeBlock(entry)
        case PlainEntry():
            return PlainBlock(entry)
