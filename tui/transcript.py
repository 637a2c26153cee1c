"""What the conversation pane holds, as plain data, and how to rebuild it from history.

The pane keeps one entry per block and mounts widgets only for the newest ones, so an
entry must carry everything needed to draw its block again later. Nothing here imports
Textual.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from todo_agent.core.engine.person_shell import parse_shell_message
from todo_agent.core.events import Attached
from todo_agent.core.export.blocks import call_arguments, guess_status  # a call read as an export reads it
from todo_agent.core.export.blocks import summarize as summarize_arguments
from todo_agent.core.input.custom_commands import parse_header
from todo_agent.core.input.mentions import parse_attachment_message
from todo_agent.core.model.base import content_text, stored_reasoning
from todo_agent.core.session.transcript import CompactionMark
from todo_agent.core.tasks.reminders import CLOSE_TAG, COMPACTED, OPEN_TAG, TASK_TOOL_NAMES, reminder_text
from todo_agent.core.tools.base import short

ToolStatus = Literal["running", "ok", "error", "denied", "cancelled"]
NoticeLevel = Literal["info", "warning", "error", "dim"]

TASK_TOOLS = TASK_TOOL_NAMES
"""Tools whose effect the task panel shows; their blocks stay one line unless they fail."""
IMAGE_MARK = "🖼"
"""Bare (no VS16): one cell in Unicode's widths, Textual's count and tmux's; asked for as an
emoji (`🖼\ufe0f`) Textual counts two cells where tmux draws one."""


@dataclass
class UserEntry:
    text: str


@dataclass
class AssistantEntry:
    text: str


@dataclass
class ToolEntry:
    """A tool call; `status` and `output` change when it finishes."""

    call_id: str
    name: str
    summary: str
    status: ToolStatus = "running"
    output: str = ""
    elapsed: float = 0.0
    progress: str = ""
    """While it runs, what it is doing (an `Agent` call: its sub-agent's live line)."""


@dataclass
class NoticeEntry:
    text: str
    level: NoticeLevel = "info"


@dataclass
class FoldEntry:
    """One line that unfolds to more: a file attached with `@`, the prompt a custom command made."""

    label: str
    """`@cli.py`, `/review`."""
    detail: str
    """After the label, muted: `242 lines`, `.claude/commands/review.md`."""
    content: str
    """What unfolds (what the model got)."""


@dataclass
class ReminderEntry(FoldEntry):
    """What the harness reminded the model of: one dim line (`⎿ reminder  You changed files
    while no task is in progress: app.py`) that unfolds to the whole reminder."""

    @classmethod
    def of(cls, text: str) -> ReminderEntry:
        return cls("reminder", short(text.split("\n", 1)[0], 160), text)


@dataclass
class ThoughtEntry:
    """The model's reasoning before an answer or a call: streamed open, then one folded line
    (`∴ Thought for 12 s`) that unfolds to the whole thought."""

    text: str
    seconds: float | None = None
    """How long it streamed; None while it streams, and for a thought read back from a
    session (the session keeps the thought, not its timing)."""
    streaming: bool = False


@dataclass
class PlainEntry:
    """Lines printed into the conversation as they are: a task list (`/todos`), help,
    what the context holds (`/context`, its glyphs coloured by part)."""

    text: str
    kind: Literal["tasks", "help", "context"] = "tasks"


Entry = UserEntry | AssistantEntry | ToolEntry | NoticeEntry | PlainEntry | FoldEntry | ThoughtEntry

_RECORDED: dict[str, ToolStatus] = {"ok": "ok", "error": "error", "denied": "denied", "cancelled": "cancelled"}


def entries_from_history(
    messages: Iterable[dict[str, Any] | CompactionMark],
    *,
    show_reminders: bool = False,
    summarize: Callable[[str, dict[str, Any]], str] | None = None,
    status_of: Callable[[str], str | None] | None = None,
) -> list[Entry]:
    """Rebuild the conversation pane from OpenAI-format history (for `--continue`/`--resume`).

    User prompts, assistant text and tool calls paired with their results come back as
    blocks; `<system-reminder>` messages are skipped, as they are never shown live (with
    `show_reminders`, one dim notice each); system messages are skipped. `summarize` is the core's own wording of a call
    (`Runtime.summarize`); without it a generic summary is used. `status_of(call_id)` is
    how the call ended as the session recorded it (`Session.tool_status.get`); when it
    has nothing (sessions saved before statuses were kept) the output's wording decides.
    Given a session's `transcript`, a `CompactionMark` becomes a "compacted here" notice
    between the full earlier transcript and what came after.
    """
    entries: list[Entry] = []
    tools: dict[str, ToolEntry] = {}
    for message in messages:
        if isinstance(message, CompactionMark):
            entries.append(NoticeEntry(compacted_here(message)))
            continue
        role = message.get("role")
        text = content_text(message.get("content"))
        if role == "user":
            entries.extend(_user_entries(text, show_reminders))
        elif role == "assistant":
            if (thought := stored_reasoning(message)[0]).strip():
                entries.append(ThoughtEntry(thought))
            if text.strip():
                entries.append(AssistantEntry(text))
            for call in message.get("tool_calls") or []:
                entry = _tool_entry(call, summarize or summarize_arguments)
                tools[entry.call_id] = entry
                entries.append(entry)
        elif role == "tool":
            found = tools.get(str(message.get("tool_call_id", "")))
            if found is not None:
                found.output = text
                recorded = _RECORDED.get(status_of(found.call_id) or "") if status_of is not None else None
                found.status = recorded or guess_status(text)
    for entry in tools.values():
        if entry.status == "running":  # a call whose result never made it to history
            entry.status = "cancelled"
    return entries


def thought_label(entry: ThoughtEntry) -> tuple[str, str]:
    """`∴ Thought for 12 s` (live), `∴ Thought` and `312 words` (read back from a session)."""
    if entry.streaming:
        return "∴ Thinking…", ""
    if entry.seconds is not None:
        return f"∴ Thought for {max(1, round(entry.seconds))} s", ""
    words = len(entry.text.split())
    return "∴ Thought", f"{words:,} word{'' if words == 1 else 's'}"


def _user_entries(text: str, show_reminders: bool) -> list[Entry]:
    if (reminder := reminder_text({"role": "user", "content": text})) is not None and _shown_live(reminder):
        return [ReminderEntry.of(reminder)]
    if text.lstrip().startswith(OPEN_TAG):
        return [NoticeEntry(_reminder_line(text), "dim")] if show_reminders else []
    if (attachments := parse_attachment_message(text)) is not None:
        return [attachment_entry(item) for item in attachments]
    if (custom := parse_header(text)) is not None:
        name, arguments, source, body = custom
        return [UserEntry(f"{name} {arguments}".strip()), FoldEntry(name, source, body)]
    if (shell := parse_shell_message(text)) is not None:
        command, output = shell
        return [UserEntry(f"!{command}"), ToolEntry("", "Bash", short(command), guess_status(output), output)]
    return [UserEntry(text)] if text else []


def attachment_entry(item: Attached) -> Entry:
    """An attached file as one foldable line (an image: `🖼 shot.png  1280×720 · 210 KB`);
    one that could not be attached as a warning."""
    if item.note:
        return NoticeEntry(f"@{item.path}: {item.note}", "warning")
    if item.mime:
        return FoldEntry(f"{IMAGE_MARK} {item.path}", item.summary, f"{item.mime}, sent to the model as an image")
    return FoldEntry(f"@{item.path}", item.summary, item.content)


def _tool_entry(call: dict[str, Any], summarize: Callable[[str, dict[str, Any]], str]) -> ToolEntry:
    function = call.get("function") or {}
    name = str(function.get("name") or "?")
    arguments = call_arguments(function.get("arguments")) or {}
    summary = summarize(name, arguments) or summarize_arguments(name, arguments)
    return ToolEntry(call_id=str(call.get("id") or ""), name=name, summary=summary)


def _shown_live(reminder: str) -> bool:
    """A reminder the live conversation showed (a `Reminded`): the task reminders and the
    team's note, not a compaction's summary (the compaction notice stands for it)."""
    return not reminder.startswith(COMPACTED)


def _reminder_line(text: str) -> str:
    body = text.replace(OPEN_TAG, "").replace(CLOSE_TAG, "").strip()
    first = body.splitlines()[0] if body else ""
    return f"reminder: {short(first, 100)}"


def compacted_here(mark: CompactionMark) -> str:
    """The marker line where a resumed session was compacted."""
    return (
        f"compacted here: from now on the model sees a summary of the {mark.summarised} earlier messages "
        f"({mark.tokens_before:,} → {mark.tokens_after:,} tokens)"
    )
