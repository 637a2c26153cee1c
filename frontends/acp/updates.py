"""What the core's events and values look like to an ACP client: plan entries with their
owners, tool calls (kind, title, locations, diffs, output), a sub-agent's live lines, and a
saved session's history replayed.

Everything a client shows is text it may render as Markdown (Zed does): a tool's output and
a command go inside a fence longer than any run of backticks in them, so nothing the model,
a command or a file wrote is read as markup there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    PlanEntry,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from todo_agent.core.events import (
    Compacted,
    Error,
    Event,
    GoalProgress,
    HookResult,
    Notice,
    ReasoningDelta,
    Retrying,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from todo_agent.core.export.blocks import (
    Answer,
    Fold,
    Note,
    Prompt,
    StatusOf,
    Thought,
    ToolCall,
    call_arguments,
    walk,
)
from todo_agent.core.export.blocks import (
    Compacted as CompactedBlock,
)
from todo_agent.core.export.markdown import fence
from todo_agent.core.session.transcript import TranscriptItem
from todo_agent.core.tasks.model import Task

Kind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]

KINDS: dict[str, Kind] = {
    "Read": "read",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "Grep": "search",
    "Glob": "search",
    "LS": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "TodoWrite": "think",
    "TaskCreate": "think",
    "TaskUpdate": "think",
    "TaskList": "think",
    "TaskGet": "think",
}
OUTPUT_LIMIT = 20_000
"""Characters of a tool's output a client is sent (its head and tail); the model has it all."""
OLD_TEXT_LIMIT = 1_000_000
"""Bytes of a file a Write's diff shows as its old text; a bigger file shows as new."""
META = "todo_agent"
"""The key of todo-agent's own part of each `_meta`."""


def kind_of(tool: str) -> Kind:
    return KINDS.get(tool, "other")


def title_of(tool: str, summary: str) -> str:
    """`Bash(pytest -q)`, as the TUI's `⏺` line reads; one line, at most 200 characters."""
    line = " ".join(summary.split())
    title = f"{tool}({line})" if line else tool
    return title if len(title) <= 200 else title[:199] + "…"


def text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def _cut(text: str, limit: int = OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… {len(text) - limit:,} characters not shown here …\n{text[-half:]}"


def _path_of(arguments: dict[str, Any], workspace: Path) -> Path | None:
    for key in ("file_path", "path", "notebook_path"):
        value = arguments.get(key)
        if isinstance(value, str) and value and "\x00" not in value:
            path = Path(value)
            return path if path.is_absolute() else workspace / path
    return None


def locations(arguments: dict[str, Any], workspace: Path) -> list[ToolCallLocation]:
    path = _path_of(arguments, workspace)
    if path is None:
        return []
    line = arguments.get("offset")
    return [ToolCallLocation(path=str(path), line=line if isinstance(line, int) and line > 0 else None)]


def _old_text(path: Path) -> str | None:
    """A file's text before a Write, for its diff; None when it is new, big or not text."""
    try:
        if not path.is_file() or path.stat().st_size > OLD_TEXT_LIMIT:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def call_content(tool: str, arguments: dict[str, Any], workspace: Path, *, read_before: bool = True) -> list[Any]:
    """What a call will do, as the TUI's approval shows it: Edit and Write as diffs (the
    edited span, or the file before and after), a command as a fenced block. Blocking (a
    Write's diff reads the file as it is, unless `read_before` is False): off the loop."""
    path = _path_of(arguments, workspace)
    if tool == "Edit" and path is not None:
        old, new = arguments.get("old_string"), arguments.get("new_string")
        if isinstance(old, str) and isinstance(new, str):
            return [FileEditToolCallContent(type="diff", path=str(path), old_text=old, new_text=new)]
    if tool == "MultiEdit" and path is not None and isinstance(edits := arguments.get("edits"), list):
        return [
            FileEditToolCallContent(type="diff", path=str(path), old_text=e["old_string"], new_text=e["new_string"])
            for e in edits
            if isinstance(e, dict) and isinstance(e.get("old_string"), str) and isinstance(e.get("new_string"), str)
        ]
    if tool == "Write" and path is not None and isinstance(content := arguments.get("content"), str):
        before = _old_text(path) if read_before else None
        return [FileEditToolCallContent(type="diff", path=str(path), old_text=before, new_text=content)]
    if tool == "Bash" and isinstance(command := arguments.get("command"), str):
        return [text_content(fence(command, "sh"))]
    return []


def started(
    event: ToolStarted, workspace: Path, meta: dict[str, Any] | None = None, *, read_before: bool = True
) -> ToolCallStart:
    """The call as it starts (blocking, as `call_content` is)."""
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=event.call_id,
        title=title_of(event.name, event.summary),
        kind=kind_of(event.name),
        status="in_progress",
        content=call_content(event.name, event.arguments, workspace, read_before=read_before) or None,
        locations=locations(event.arguments, workspace) or None,
        raw_input=event.arguments,
        field_meta=meta,
    )


def running(call_id: str, shown: Sequence[Any], printed: str) -> ToolCallProgress:
    """A running command: what its start showed, then what it printed so far."""
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status="in_progress",
        content=[*shown, text_content(fence(printed))],
    )


def finished(event: ToolFinished, shown_before: Sequence[Any] = ()) -> ToolCallProgress:
    """The call's end: its output after what its start showed (a diff stays in view)."""
    output = _cut(event.output)
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=event.call_id,
        status="completed" if event.status == "ok" and not event.is_error else "failed",
        content=[*shown_before, text_content(fence(output))] if output else list(shown_before) or None,
    )


# --- the plan ---------------------------------------------------------------------------


def _priority(task: Task, open_ids: set[str]) -> Literal["high", "medium", "low"]:
    """In progress: high; pending and free to start: medium; waiting on an open task, or done: low."""
    if task.status == "in_progress":
        return "high"
    if task.status == "pending" and not any(blocker in open_ids for blocker in task.blockedBy):
        return "medium"
    return "low"


def task_meta(task: Task) -> dict[str, Any]:
    """What a client that knows todo-agent may show beside an entry: who owns it, what it
    waits on, its check and whether that check passed."""
    last = task.checks[-1] if task.checks else None
    return {
        "id": task.id,
        "owner": task.claim.agent if task.claim is not None else task.owner,
        "activeForm": task.activeForm,
        "blockedBy": list(task.blockedBy),
        "blocks": list(task.blocks),
        "check": task.verify,
        "verified": task.verified_at is not None,
        "checkRunning": task.check_running is not None,
        "lastCheckExit": last.exit if last is not None else None,
        "createdBy": task.created_by,
    }


def plan_update(tasks: Iterable[Task]) -> AgentPlanUpdate:
    """Every task in order: the subject, its status, a priority, and `_meta.todo_agent`."""
    tasks = list(tasks)
    open_ids = {t.id for t in tasks if t.status != "completed"}
    return AgentPlanUpdate(
        session_update="plan",
        entries=[
            PlanEntry(
                content=f"#{t.id} {t.subject}",
                status=t.status,
                priority=_priority(t, open_ids),
                field_meta={META: task_meta(t)},
            )
            for t in tasks
        ],
    )


# --- a saved session, replayed ------------------------------------------------------------


def replay(transcript: Sequence[TranscriptItem], status_of: StatusOf, workspace: Path) -> list[Any]:
    """A saved session as the updates a client would have seen, read as `todo-agent export`
    reads it (`core/export/blocks.walk`: reminders as one line, `@` attachments folded, a
    `!` command as its call, text cleaned): the person's words, thoughts and answers, each
    call with its result (no file is read: a Write's old text is not known any more)."""
    found: list[Any] = []
    for number, block in enumerate(walk(transcript, status_of)):
        match block:
            case Prompt(text=text):
                found.append(UserMessageChunk(session_update="user_message_chunk", content=_block(text)))
            case Fold(label=label, detail=detail):
                found.append(UserMessageChunk(session_update="user_message_chunk", content=_block(f"{label} {detail}")))
            case Answer(text=text):
                found.append(message(text))
            case Thought(text=text) | CompactedBlock(line=text):
                found.append(_thought(text))
            case Note(text=text, kind=kind):
                found.append(_thought(f"reminder: {text}") if kind == "reminder" else message(f"⚠ {text}\n\n"))
            case ToolCall():
                call_id = f"replayed-{number}"
                arguments = call_arguments(block.arguments) or {}
                call = ToolStarted(call_id, block.name, arguments, block.summary)
                found.append(started(call, workspace, read_before=False))
                found.append(
                    finished(ToolFinished(call_id, block.name, block.output, block.status != "ok", block.status))
                )
    return found


def _block(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _thought(text: str) -> AgentThoughtChunk:
    return AgentThoughtChunk(session_update="agent_thought_chunk", content=_block(text))


def said(event: Event) -> AgentMessageChunk | AgentThoughtChunk | None:
    """The events that are words: the answer, the thought, and the lines worth a person's
    eye (a warning, an error, a wait for the server, a compaction, a goal's progress)."""
    words: tuple[str, bool] | None = None  # the text, and whether it is a thought
    match event:
        case TextDelta(text=text):
            words = text, False
        case ReasoningDelta(text=text):
            words = text, True
        case Retrying():
            words = event.describe(), True
        case Notice(level="warning" | "error"):
            words = f"\n\n⚠ {event.text}\n\n", False
        case HookResult() if event.noteworthy:
            words = f"\n\n⚠ {event.describe()}\n\n", False
        case Error(message=text):
            words = f"\n\nError: {text}\n\n", False
        case Compacted():
            words = f"compacted: {event.tokens_before:,} → {event.tokens_after:,} tokens", True
        case GoalProgress():
            words = event.label(), True
    if words is None:
        return None
    return _thought(words[0]) if words[1] else message(words[0])


def message(text: str) -> AgentMessageChunk:
    return AgentMessageChunk(session_update="agent_message_chunk", content=_block(text))


def thought(text: str) -> AgentThoughtChunk:
    return _thought(text)
