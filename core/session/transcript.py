"""Sessions: one JSONL transcript per conversation, plus its task list file.

Layout: `<root>/sessions/<project>/<id>.jsonl` and `<id>.tasks.json` (`core/session/directory.py`
says where `<root>` and `<project>` are, and lists and finds sessions).
Line 1 is a header `{"type": "session", ..., "title": first prompt}`; every further line
is appended and flushed as it happens, and is one of:

- `{"type": "message", "message": {...}, "status"?: ...}`: one chat message.
- `{"type": "compaction", "summary": {...}, "kept": K, "tokens_before": …, "tokens_after": …,
  "trigger": …, "summarised": N}`: from here on the history is the summary message followed
  by the last K messages before this line. The messages before stay in the file, so the
  full transcript can still be shown above a "compacted here" marker.
- `{"type": "rewind", "length": N}`: the history is cut back to its first N messages (a
  prompt that could not be sent is not kept to grow every later request).
- `{"type": "server", "model": name, "learned": {...}}`: what the model client learned of
  its server (a parameter it refused, the Responses API): the last one per model counts.
- any other `type` (a sub-agent's `agent_result`, `note`): kept for whoever reads it, skipped here.

A sub-agent's transcript is a session file of its own in `<id>.agents/` beside its
parent's (`for_agent`): no lock of its own (its parent's covers it); `view` reads one, or
any session, without changing it.

Sessions written before compaction existed have only message lines and load as before.
Transcripts hold everything the model read: `sessions/` and each project folder are
private (0700) and every file in them is created 0600.

A session is used by one process at a time: it holds an OS lock on `<id>.lock` from
create/open to close (the OS drops it when the process dies, so a crash leaves nothing
stale), and a second process gets a `SessionError` saying so instead of interleaving
its writes with the first one's.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeGuard

from filelock import BaseFileLock, FileLock, Timeout

from ..atomic import atomic_write, temp_beside
from ..model.base import Message
from ..model.history import CANCELLED, repair_history
from .directory import (
    HEADER_TYPE,
    PRIVATE_FILE,
    SERVER_RECORD,
    SHELL_RECORD,
    SPEND_RECORD,
    SessionError,
    parse_record,
    private_dir,
    project_dir,
    prompt_title,
)


def _private_opener(path: str, flags: int) -> int:
    return os.open(path, flags, PRIVATE_FILE)


@dataclass(frozen=True)
class CompactionMark:
    """Where the history was compacted, for drawing the full transcript with a marker."""

    tokens_before: int
    tokens_after: int
    trigger: str
    summarised: int
    """Messages folded into the summary."""
    summary: str
    """The summary message's text."""


TranscriptItem = Message | CompactionMark


@dataclass
class Session:
    id: str
    path: Path
    messages: list[Message] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    transcript: list[TranscriptItem] = field(default_factory=list)
    """Everything that happened, for display: every message ever appended, in order, and a
    `CompactionMark` where a compaction replaced the history. `messages` is what the model sees."""
    tool_status: dict[str, str] = field(default_factory=dict)
    server_facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per model: what its client learned of the server in an earlier run (`SERVER_RECORD`)."""
    shells: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Background commands by id, from `SHELL_RECORD` lines: `command`, and `lost` when it
    was still running as the session last ended (stopped then, or killed with todo-agent)."""
    spend: dict[str, Any] | None = None
    """The latest `SPEND_RECORD`: prompt tokens so far and the plan's part."""
    """tool_call_id → ok | error | denied | cancelled, for rebuilding the conversation.

    Kept beside the message in the JSONL record, not in the message itself, because
    strict servers reject unknown keys in API messages."""
    _handle: IO[str] | None = field(default=None, repr=False)
    _pending_header: dict[str, Any] | None = field(default=None, repr=False)
    _lock: BaseFileLock | None = field(default=None, repr=False)

    def _take_lock(self) -> None:
        """Hold `<id>.lock` until `close()`; SessionError if another process (or another
        Session object in this one) has the session open."""
        lock = FileLock(self.path.with_name(f"{self.id}.lock"), timeout=0, mode=PRIVATE_FILE)
        try:
            lock.acquire()
        except Timeout:
            raise SessionError(
                f"session {self.id} is in use by another todo-agent (a second process would interleave its "
                "writes); wait for it to finish, or start a new session"
            ) from None
        except OSError as exc:
            raise SessionError(f"cannot lock session {self.id}: {exc.strerror or exc}") from exc
        self._lock = lock

    @property
    def tasks_path(self) -> Path:
        return self.path.with_name(f"{self.id}.tasks.json")

    @classmethod
    def create(cls, workspace: Path, root: Path | None = None) -> Session:
        directory = project_dir(workspace, root)
        try:
            private_dir(directory)
        except OSError as exc:
            raise SessionError(f"cannot create the session folder {directory}: {exc.strerror or exc}") from exc
        session_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
        session = cls(session_id, directory / f"{session_id}.jsonl")
        session._take_lock()
        # Written with the first message: a launch that is quit at once leaves no empty
        # session behind for --continue and the picker to offer.
        session._pending_header = {
            "type": HEADER_TYPE,
            "id": session_id,
            "cwd": str(workspace.resolve()),
            "created": time.time(),
        }
        return session

    @classmethod
    def for_agent(cls, path: Path, header: dict[str, Any]) -> Session:
        """A sub-agent's transcript at `path`; `header` joins the first line (written with
        the first message, like a session's)."""
        private_dir(path.parent)
        session = cls(path.stem, path)
        session._pending_header = {"type": HEADER_TYPE, "id": path.stem, **header, "created": time.time()}
        return session

    @classmethod
    def view(cls, path: Path) -> Session:
        """A transcript read to be shown: no lock, no repair, nothing written. SessionError
        when it cannot be read."""
        session = cls(path.stem, path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise SessionError(f"cannot read {path}: {exc.strerror or exc}") from exc
        lines = raw.split(b"\n")
        for number, line in enumerate(lines if raw.endswith(b"\n") else lines[:-1], start=1):
            session._load_line(number, line)
        return session

    def note(self, record: dict[str, Any]) -> None:
        """Append a record that is not a message (a sub-agent's result); skipped on loading."""
        self._write_line(record)

    @classmethod
    def open(cls, path: Path) -> Session:
        """Load a transcript. Torn or garbled lines are skipped with a warning, never fatal.
        SessionError when it cannot be read or another process has it open."""
        session = cls(path.stem, path)
        session._take_lock()
        try:
            session._load()
        except BaseException:
            session.close()
            raise
        return session

    def _load(self) -> None:
        session, path = self, self.path
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise SessionError(f"cannot read session {path}: {exc.strerror or exc}") from exc
        lines = raw.split(b"\n")
        if raw and not raw.endswith(b"\n"):
            # A crash mid-append leaves a partial last line; it was never acknowledged.
            session.warnings.append(f"skipped a torn last line in session {session.id} (crash while writing)")
            with path.open("r+b") as f:
                f.truncate(len(raw) - len(lines[-1]))
        for number, line in enumerate(lines[:-1], start=1):
            session._load_line(number, line)
        repaired, notes = repair_history(session.messages)
        if notes:
            session.warnings.append(f"session {session.id} repaired: " + "; ".join(dict.fromkeys(notes)))
            session._apply_repair(repaired, raw, lines[0] if _is_header(lines[0]) else None)

    def _load_line(self, number: int, line: bytes) -> None:
        if not line.strip():
            return
        record = parse_record(line)
        if record is None:
            self.warnings.append(f"skipped unreadable line {number} in session {self.id}")
            return
        if record.get("type") != "message":
            self._load_note(number, record)
            return
        message = record.get("message")
        if not _is_message(message):
            self.warnings.append(f"skipped line {number} in session {self.id}: not a message this version can use")
            return
        self.messages.append(message)
        self.transcript.append(message)
        if isinstance(record.get("status"), str) and message.get("role") == "tool":
            self.tool_status[str(message.get("tool_call_id"))] = record["status"]

    def _load_note(self, number: int, record: dict[str, Any]) -> None:
        """A line that is not a message: a compaction, what a server was found to be, the
        spend so far, a rewind; the header, or a kind this version does not know, is skipped."""
        kind = record.get("type")
        if kind == "compaction":
            if not self._load_compaction(record):
                self.warnings.append(f"skipped an unreadable compaction record (line {number}) in session {self.id}")
        elif kind == SPEND_RECORD:
            self.spend = record
        elif kind == SHELL_RECORD and isinstance(shell := record.get("id"), str):
            if record.get("event") == "started":
                self.shells[shell] = {"command": str(record.get("command", "")), "lost": True}
            elif shell in self.shells:
                self.shells[shell]["lost"] = record.get("stopped") == "ended with the session"
        elif kind == SERVER_RECORD:
            model, learned = record.get("model"), record.get("learned")
            if isinstance(model, str) and isinstance(learned, dict):
                self.server_facts[model] = learned
        elif kind == "rewind":
            length = record.get("length")
            if isinstance(length, int) and 0 <= length <= len(self.messages):
                self._cut(length)

    def _load_compaction(self, record: dict[str, Any]) -> bool:
        summary, kept = record.get("summary"), record.get("kept")
        if not _is_message(summary) or not isinstance(kept, int) or not 0 <= kept <= len(self.messages):
            return False
        numbers = [record.get(k) for k in ("tokens_before", "tokens_after", "summarised")]
        before, after, summarised = (n if isinstance(n, int) else 0 for n in numbers)
        mark = CompactionMark(before, after, str(record.get("trigger") or ""), summarised, str(summary.get("content")))
        self._replace(summary, kept, mark)
        return True

    def _replace(self, summary: Message, kept: int, mark: CompactionMark) -> None:
        tail = self.messages[len(self.messages) - kept :]
        self.messages[:] = [summary, *tail]  # in place: the agent holds this very list
        self.transcript.append(mark)

    def _cut(self, length: int) -> None:
        dropped = {id(m) for m in self.messages[length:]}
        del self.messages[length:]
        self.transcript[:] = [item for item in self.transcript if id(item) not in dropped]

    def append(self, message: Message, status: str | None = None) -> None:
        """Add a message; `status` (tool replies only) says how the call ended."""
        self.messages.append(message)
        self.transcript.append(message)
        record: dict[str, Any] = {"type": "message", "message": message}
        if status is not None and message.get("role") == "tool":
            self.tool_status[str(message.get("tool_call_id"))] = status
            record["status"] = status
        self._write_line(record)

    def compact(self, summary: Message, kept: int, mark: CompactionMark) -> None:
        """Replace the history with `summary` and its last `kept` messages, and record it."""
        if not 0 <= kept <= len(self.messages):
            raise ValueError(f"cannot keep {kept} of {len(self.messages)} messages")
        record = {
            "type": "compaction",
            "summary": summary,
            "kept": kept,
            "tokens_before": mark.tokens_before,
            "tokens_after": mark.tokens_after,
            "trigger": mark.trigger,
            "summarised": mark.summarised,
        }
        self._write_line(record)
        self._replace(summary, kept, mark)

    def rewind(self, length: int) -> None:
        """Cut the history back to its first `length` messages, and record it."""
        if not 0 <= length <= len(self.messages):
            raise ValueError(f"cannot rewind {len(self.messages)} messages to {length}")
        self._write_line({"type": "rewind", "length": length})
        self._cut(length)

    def _apply_repair(self, repaired: list[Message], original: bytes, header: bytes | None) -> None:
        """Make the repair permanent, so it happens once, not on every load.

        Calls left unanswered at the end (a crash mid-batch, or another instance still
        running this session) are answered by appending, which never disturbs the file.
        Anything else means rewriting: the original is kept as `<id>.jsonl.bak` first.
        """
        trailing = repaired[len(self.messages) :]
        if repaired[: len(self.messages)] == self.messages:
            for message in trailing:
                self.append(message, "cancelled")
            return
        self.messages[:] = repaired
        self.transcript[:] = repaired  # a rewritten file holds the current history only
        try:
            with open(self.path.with_name(self.path.name + ".bak"), "wb", opener=_private_opener) as backup:
                backup.write(original)
            self._rewrite(header or self._header_line())
        except OSError as exc:  # the repaired history still serves this run
            self.warnings.append(f"could not save the repaired session ({exc.strerror or exc}); kept in memory")

    def _header_line(self) -> bytes:
        header = {"type": HEADER_TYPE, "id": self.id, "cwd": "", "created": self.path.stat().st_mtime}
        return json.dumps(header).encode()

    def _rewrite(self, header: bytes) -> None:
        """Replace the file with the header and the current messages: temp file, fsync, rename."""
        self._close_handle()
        lines = [header.rstrip(b"\n"), *(_dump(self._record(message)).encode() for message in self.messages)]
        atomic_write(self.path, b"\n".join(lines) + b"\n", temp=temp_beside(self.path, hidden=True))

    def _record(self, message: Message) -> dict[str, Any]:
        record: dict[str, Any] = {"type": "message", "message": message}
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id"))
            status = self.tool_status.get(call_id) or ("cancelled" if message.get("content") == CANCELLED else None)
            if status:
                record["status"] = self.tool_status.setdefault(call_id, status)
        return record

    def _write_line(self, record: dict[str, Any]) -> None:
        """Append one record; SessionError (one line) when the disk is full or read-only."""
        try:
            self._append(_dump(record), prompt_title(record.get("message")))
        except OSError as exc:
            self._close_handle()
            raise SessionError(f"cannot save session {self.id} to {self.path}: {exc.strerror or exc}") from exc

    def _append(self, line: str, title: str = "") -> None:
        if self._handle is None or self._handle.closed:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
            self._handle = os.fdopen(fd, "a", encoding="utf-8")
        if self._pending_header is not None:
            header, self._pending_header = self._pending_header, None
            if title:
                header["title"] = title  # the picker reads this line only
            self._handle.write(_dump(header) + "\n")
        self._handle.write(line + "\n")
        self._handle.flush()

    def _close_handle(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):  # a full disk fails the flush on close too
                self._handle.close()
            self._handle = None

    def close(self) -> None:
        """Stop writing and let other processes open the session."""
        self._close_handle()
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _dump(record: dict[str, Any]) -> str:
    """One JSON line, UTF-8 safe: text that cannot be UTF-8 (a lone surrogate) is written
    as a JSON escape, so the line is still valid and loads back the same."""
    text = json.dumps(record, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(record, ensure_ascii=True)
    return text


_ROLES = frozenset({"system", "user", "assistant", "tool"})


def _is_message(message: object) -> TypeGuard[Message]:
    """The shape the loop and the API rely on; anything else is skipped, never trusted."""
    if not isinstance(message, dict) or message.get("role") not in _ROLES:
        return False
    content = message.get("content")
    if not (content is None or isinstance(content, str) or _is_parts(content)):
        return False
    if message["role"] == "tool" and not isinstance(message.get("tool_call_id"), str):
        return False
    calls = message.get("tool_calls")
    return calls is None or (isinstance(calls, list) and all(_is_call(c) for c in calls))


def _is_parts(content: object) -> bool:
    return isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in content)


def _is_call(call: object) -> bool:
    if not isinstance(call, dict) or not isinstance(call.get("id"), str):
        return False
    function = call.get("function")
    return (
        isinstance(function, dict)
        and isinstance(function.get("name"), str)
        and (isinstance(function.get("arguments"), str))
    )


def _is_header(line: bytes) -> bool:
    record = parse_record(line)
    return record is not None and record.get("type") == HEADER_TYPE
