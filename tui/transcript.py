"""What the conversation pane holds, as plain data, and how to rebuild it from history.

The pane keeps one entry per block and mounts widgets only for the newest ones, so an
entry must carry everything needed to draw its block again later. Nothing here imports
Textual.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from todo_agent.core.engine.person_shell import KILLED, parse_shell_message
from todo_agent.core.events import Attached
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

# Which argument best names a call, per tool, for `⏺ Name(...)` lines rebuilt from history.
_SUMMARY_KEYS = ("file_path", "command", "pattern", "subject", "path", "taskId")


def summarize_arguments(name: str, arguments: dict[str, Any]) -> str:
    """A short human form of a call's arguments when the core's summary is not at hand."""
    if name == "TaskUpdate" and "taskId" in arguments and "status" in arguments:
        return f"#{arguments['taskId']} → {arguments['status']}"
    if name == "TodoWrite" and isinstance(arguments.get("todos"), list):
        return f"{len(arguments['todos'])} items"
    for key in _SUMMARY_KEYS:
        value = arguments.get(key)
        if isinstance(value, str | int) and str(value):
            return short(str(value), 80)
    return short(json.dumps(arguments, ensure_ascii=False), 80) if arguments else ""


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


_FAILED_STARTS: dict[str, ToolStatus] = {
    "Error:": "error",
    "denied:": "denied",
    "cancelled:": "cancelled",
    "The user rejected": "denied",
}
"""How the core words a failed, refused or cancelled call (`core/engine/batch.py`, `core/model/history.py`)."""
_FAILED_LAST_LINE = re.compile(r"Exit code -?\d+( \(killed by [^)]*\))?|Command timed out after .*")
"""Bash's note on a non-zero exit, a signal or a timeout (`core/tools/bash.py`)."""
_RECORDED: dict[str, ToolStatus] = {"ok": "ok", "error": "error", "denied": "denied", "cancelled": "cancelled"}


def guess_status(output: str) -> ToolStatus:
    """How a call ended, read from its output: for sessions saved before statuses were kept.

    Only the core's own wording counts, so a file that merely contains "Error" reads as ok.
    """
    for start, status in _FAILED_STARTS.items():
        if output.startswith(start):
            return status
    lines = output.rstrip().splitlines()
    if lines and lines[-1].strip() == KILLED:  # a `!` command stopped with esc
        return "cancelled"
    if lines and _FAILED_LAST_LINE.fullmatch(lines[-1].strip()):
        return "error"
    return "ok"


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
    arguments = _parse_arguments(function.get("arguments"))
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


def output_summary(output: str, status: ToolStatus, limit: int = 100) -> str:
    """The one line shown under a finished tool call."""
    lines = [line for line in output.splitlines() if line.strip()]
    if status == "denied" and not lines:
        return "denied"
    if status == "cancelled" and not lines:
        return "cancelled"
    if not lines:
        return "(no output)"
    more = len(lines) - 1
    suffix = f"  …(+{more} line{'s' if more > 1 else ''})" if more else ""
    # The count outlives a narrow pane: the first line gives way to it.
    return short(lines[0], max(limit - len(suffix), 12)) + suffix


def compacted_here(mark: CompactionMark) -> str:
    """The marker line where a resumed session was compacted."""
    return (
        f"compacted here: from now on the model sees a summary of the {mark.summarised} earlier messages "
        f"({mark.tokens_before:,} → {mark.tokens_after:,} tokens)"
    )
