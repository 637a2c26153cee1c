"""A session's transcript as the blocks an export shows: the walk over its messages.

The same reading of a history as the conversation pane's (`tui/transcript.py`, which takes
its words for a call from here: `call_arguments`, `summarize`, `guess_status`,
`output_summary`): prompts, answers, thoughts, tool calls paired with their results, `@`
attachments, a custom command's prompt, a `!` command, one line per reminder, and a
"compacted here" line where a compaction replaced the history. Every text is `clean`:
credentials in URLs masked (as todo-agent shows them, `core/redact.py`) and control
characters made visible (`␛[2J`), so no escape sequence reaches an export raw. Otherwise
text is kept as it was, tool output whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from ..engine.person_shell import KILLED, parse_shell_message
from ..input.custom_commands import parse_header
from ..input.mentions import parse_attachment_message
from ..model.base import Message, content_text, stored_reasoning
from ..redact import mask_url
from ..session.transcript import CompactionMark, TranscriptItem
from ..tasks.reminders import COMPACTED, OPEN_TAG, reminder_text
from ..terminal import sanitize

Status = Literal["ok", "error", "denied", "cancelled"]
STATUS_MARKS: dict[str, str] = {"ok": "✔", "error": "✘", "denied": "✘ denied", "cancelled": "✘ cancelled"}


@dataclass(frozen=True)
class Prompt:
    """What the person typed (a `!command` and `/command args` as typed)."""

    text: str


@dataclass(frozen=True)
class Answer:
    """The model's text: Markdown."""

    text: str


@dataclass(frozen=True)
class Thought:
    """A reasoning model's thought before an answer or a call."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    name: str
    summary: str
    """What `⏺ Name(summary)` shows."""
    arguments: str
    """The call's arguments, as indented JSON (as sent when they were not JSON)."""
    status: Status
    output: str
    """The result as the model got it, whole."""


@dataclass(frozen=True)
class Fold:
    """One line that unfolds: a file attached with `@`, the prompt a custom command made."""

    label: str
    detail: str
    content: str


@dataclass(frozen=True)
class Note:
    """One short line: a reminder the model was given, an attachment that was refused."""

    text: str
    kind: Literal["reminder", "warning"] = "reminder"


@dataclass(frozen=True)
class Compacted:
    """Where a compaction replaced the history: the line, and the summary the model kept."""

    line: str
    summary: str


Block = Prompt | Answer | Thought | ToolCall | Fold | Note | Compacted
StatusOf = Callable[[str], str | None]


def walk(transcript: Iterable[TranscriptItem], status_of: StatusOf) -> list[Block]:
    """The blocks of a transcript (`Session.transcript`: every message, and a mark where a
    compaction happened); `status_of(call_id)` is how each call ended as the session
    recorded it (`Session.tool_status.get`, `Runtime.tool_status`)."""
    items = list(transcript)
    results = {
        str(m.get("tool_call_id")): content_text(m.get("content"))
        for m in items
        if not isinstance(m, CompactionMark) and m.get("role") == "tool"
    }
    found: list[Block] = []
    for item in items:
        if isinstance(item, CompactionMark):
            summary = reminder_text({"role": "user", "content": item.summary})
            found.append(Compacted(clean(compacted_line(item)), clean(item.summary if summary is None else summary)))
        elif item.get("role") == "user":
            found.extend(_user_blocks(clean(content_text(item.get("content")))))
        elif item.get("role") == "assistant":
            found.extend(_assistant_blocks(item, results, status_of))
    return found


def _assistant_blocks(message: Message, results: Mapping[str, str], status_of: StatusOf) -> list[Block]:
    found: list[Block] = []
    if (thought := stored_reasoning(message)[0]).strip():
        found.append(Thought(clean(thought)))
    if (text := content_text(message.get("content"))).strip():
        found.append(Answer(clean(text)))
    for call in message.get("tool_calls") or []:
        call_id = str(call.get("id") or "")
        function = call.get("function") or {}
        name, raw = str(function.get("name") or "?"), function.get("arguments")
        arguments = call_arguments(raw)
        output = results.get(call_id)
        status = _status(status_of(call_id), output)
        shown = json.dumps(arguments, ensure_ascii=False, indent=2) if arguments is not None else str(raw or "")
        found.append(
            ToolCall(clean(name), clean(summarize(name, arguments or {})), clean(shown), status, clean(output or ""))
        )
    return found


def _user_blocks(text: str) -> list[Block]:
    """As the conversation pane reads a user message (`tui/transcript.py`, `_user_entries`)."""
    if (reminder := reminder_text({"role": "user", "content": text})) is not None:
        if reminder.startswith(COMPACTED):  # the summary a compaction left: its line stands for it
            return []
        return [Note(one_line(reminder.split("\n", 1)[0], 160))]
    if text.lstrip().startswith(OPEN_TAG):
        return [Note(one_line(text.replace(OPEN_TAG, "").strip().split("\n", 1)[0], 160))]
    if (attachments := parse_attachment_message(text)) is not None:
        return [
            Note(f"@{a.path}: {a.note}", "warning") if a.note else Fold(f"@{a.path}", a.summary, a.content)
            for a in attachments
        ]
    if (custom := parse_header(text)) is not None:
        name, arguments, source, body = custom
        return [Prompt(f"{name} {arguments}".strip()), Fold(name, source, body)]
    if (shell := parse_shell_message(text)) is not None:
        command, output = shell
        return [Prompt(f"!{command}"), ToolCall("Bash", one_line(command, 80), command, _status(None, output), output)]
    return [Prompt(text)] if text else []


_FAILED_STARTS: dict[str, Status] = {
    "Error:": "error",
    "denied:": "denied",
    "cancelled:": "cancelled",
    "The user rejected": "denied",
}
"""How the core words a failed, refused or cancelled call (`core/engine/batch.py`, `core/model/history.py`)."""
_FAILED_LAST_LINE = re.compile(r"Exit code -?\d+( \(killed by [^)]*\))?|Command timed out after .*")
"""Bash's note on a non-zero exit, a signal or a timeout (`core/tools/bash.py`)."""


def guess_status(output: str) -> Status:
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


def _status(recorded: str | None, output: str | None) -> Status:
    if recorded in STATUS_MARKS:
        return recorded  # type: ignore[return-value]
    if output is None:  # its result never made it to the history
        return "cancelled"
    return guess_status(output)


def call_arguments(raw: Any) -> dict[str, Any] | None:
    """A call's arguments as the history keeps them (an object, or its JSON text); None
    when they are not an object."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


_SUMMARY_KEYS = ("file_path", "command", "pattern", "subject", "path", "url", "taskId", "description")


def summarize(name: str, arguments: dict[str, Any]) -> str:
    """A call's `⏺ Name(...)` words: the argument that best names it (the same words in the
    app's `/export` and in `todo-agent export`, which has no tools loaded)."""
    if name == "TaskUpdate" and "taskId" in arguments and "status" in arguments:
        return f"#{arguments['taskId']} → {arguments['status']}"
    if name == "TodoWrite" and isinstance(arguments.get("todos"), list):
        return f"{len(arguments['todos'])} items"
    for key in _SUMMARY_KEYS:
        value = arguments.get(key)
        if isinstance(value, str | int) and str(value):
            return one_line(str(value), 80)
    return one_line(json.dumps(arguments, ensure_ascii=False), 80) if arguments else ""


def one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def output_summary(output: str, status: str, limit: int = 100) -> str:
    """The one line under a finished call: its output's first line and how many follow."""
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return status if status in ("denied", "cancelled") else "(no output)"
    more = len(lines) - 1
    suffix = f"  …(+{more} line{'s' if more > 1 else ''})" if more else ""
    # The count outlives a narrow pane: the first line gives way to it.
    return one_line(lines[0], max(limit - len(suffix), 12)) + suffix


def output_shown(call: ToolCall) -> bool:
    """Whether the call's line already shows its whole output (one short line), so the
    fold need not show it again."""
    return output_summary(call.output, call.status) == (call.output.strip() or "(no output)")


def compacted_line(mark: CompactionMark) -> str:
    """The conversation pane's marker line (`tui/transcript.py`, `compacted_here`)."""
    return (
        f"compacted here: from now on the model sees a summary of the {mark.summarised} earlier messages "
        f"({mark.tokens_before:,} → {mark.tokens_after:,} tokens)"
    )


# --- an answer's code fences ----------------------------------------------------------------

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Segment:
    """A piece of an answer's Markdown: prose, or the lines inside one code fence."""

    lines: tuple[str, ...]
    fence: str = ""
    """The fence's run of backticks or tildes; empty for prose."""
    opening: str = ""
    """The fence's first line as written (with its info string)."""
    closing: str = ""
    """Its closing line; empty when the answer left it open."""


def segments(text: str) -> Iterator[Segment]:
    """`text` cut where its code fences open and close, as CommonMark reads them."""
    prose: list[str] = []
    code: list[str] = []
    run = opening = ""
    for line in text.split("\n"):
        found = _FENCE.match(line)
        if run:
            if found and found[1][0] == run[0] and len(found[1]) >= len(run) and not found[2].strip():
                yield Segment(tuple(code), run, opening, line)
                run, code = "", []
            else:
                code.append(line)
        elif found and not (found[1][0] == "`" and "`" in found[2]):  # a backtick in the info: not a fence
            if prose:
                yield Segment(tuple(prose))
            run, opening, prose = found[1], line, []
        else:
            prose.append(line)
    if run:
        yield Segment(tuple(code), run, opening)
    if prose:
        yield Segment(tuple(prose))


# --- text made safe to keep ---------------------------------------------------------------

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s<>\"'`\\]+", re.IGNORECASE)
"""A URL, up to what cannot be in one (a backslash neither: inside JSON text it starts an escape)."""
_SECRET_NAME = re.compile(r"key|token|secret|passw|pwd|auth|sig|credential|session", re.IGNORECASE)
"""A query parameter whose name says it holds a credential (`?api-key=`, `&access_token=`)."""


def clean(text: str) -> str:
    """`text` with credentials in URLs masked and every control character made visible."""
    return mask_urls(sanitize(text, visible=True))


def mask_urls(text: str) -> str:
    """Each URL that carries a credential (a password or a lone user name before `@`, a
    query parameter named like one) as `mask_url` shows it: `https://me:***@host/?key=***`.
    Other URLs stay as they are."""
    return _URL.sub(_masked, text) if "://" in text else text


def _masked(match: re.Match[str]) -> str:
    url = match.group()
    try:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return url
    if "@" in parts.netloc or any(_SECRET_NAME.search(name) for name, _ in query):
        return mask_url(url)
    return url
