"""The plan's history: every change to the task list, by the model, a sub-agent or the person.

`<session>.tasks.log.jsonl` gets one line per version of the list: who changed it
(`model`, `person`, or `agent`: a sub-agent, or the claim and release of a task for one),
what (one line), when, the affected task as it was before (so
the person's change can be undone), and the list after it (id, status, subject). The
line is appended and fsynced under the task list's lock, just before the list itself
is replaced; each carries the list's `version`, which the list file also stores. So a
crash between the two leaves a line whose version the list never reached: it is
ignored on reading, and the next change reuses the number (the later line wins).
A line that cannot be read (torn by a crash, edited by hand, a time no clock can show
such as `1e300`) is skipped and counted, and `/todos history` says how many. Tool-count
updates are not versions and are not logged.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .file_format import decode_task
from .model import STATUSES, Task, TaskStatus

Who = Literal["model", "person", "agent"]
"""`agent`: a sub-agent, or the harness claiming and releasing tasks for one."""


@dataclass(frozen=True)
class Version:
    """One change to the list."""

    version: int
    at: float
    who: Who
    what: str
    task_id: str | None = None
    before: dict[str, Any] | None = None
    """The affected task before the change (None: it did not exist)."""
    index: int | None = None
    """Its position before the change."""
    tasks: tuple[tuple[str, str, str], ...] = ()
    """The list after the change: (id, status, subject)."""
    undoes: int | None = None
    """For an undo: the version it undid."""
    undoable: bool = False
    """A person's list edit that `u` can undo (not a rewind, not an undo)."""
    extra: dict[str, Any] = field(default_factory=dict)


def history_path(tasks_path: Path) -> Path:
    return tasks_path.with_name(tasks_path.name.removesuffix(".json") + ".log.jsonl")


def make(
    version: int,
    who: Who,
    what: str,
    tasks: Sequence[Task],
    *,
    before: Task | None = None,
    task_id: str | None = None,
    index: int | None = None,
    undoes: int | None = None,
    undoable: bool = False,
    extra: dict[str, Any] | None = None,
    now: float | None = None,
) -> Version:
    return Version(
        version,
        time.time() if now is None else now,
        who,
        what,
        task_id,
        json.loads(json.dumps(asdict(before))) if before is not None else None,  # as read back from the file
        index,
        tuple((t.id, t.status, t.subject) for t in tasks),
        undoes,
        undoable,
        extra or {},
    )


def append(path: Path, entry: Version) -> None:
    """Append one line, durably (the caller holds the task list's lock)."""
    line = (json.dumps(asdict(entry), ensure_ascii=False) + "\n").encode()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "rb+") as handle:
        end = handle.seek(0, os.SEEK_END)
        if end and (handle.seek(end - 1), handle.read(1))[1] != b"\n":
            line = b"\n" + line  # a torn last line (a crash mid-append) stays a line of its own
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def _parse(line: str) -> Version | None:
    try:
        raw = json.loads(line)
        tasks = tuple((str(a), str(b), str(c)) for a, b, c in raw.get("tasks", ()))
        entry = Version(
            version=int(raw["version"]),
            at=float(raw["at"]),
            who=raw["who"] if raw.get("who") in ("person", "agent") else "model",
            what=str(raw.get("what", "")),
            task_id=None if raw.get("task_id") is None else str(raw["task_id"]),
            before=raw.get("before") if isinstance(raw.get("before"), dict) else None,
            index=raw.get("index") if isinstance(raw.get("index"), int) else None,
            tasks=tasks,
            undoes=raw.get("undoes") if isinstance(raw.get("undoes"), int) else None,
            undoable=raw.get("undoable") is True,
            extra=raw.get("extra") if isinstance(raw.get("extra"), dict) else {},
        )
        time.localtime(entry.at)  # a time that cannot be shown (1e300, nan) makes the line unreadable
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, OverflowError, OSError):
        return None
    return entry


def read(path: Path, upto: int) -> tuple[list[Version], int]:
    """The versions up to `upto` (the list file's version), oldest first, and how many
    lines could not be read; never raises."""
    with contextlib.suppress(OSError):
        text = path.read_text(encoding="utf-8", errors="replace")
        entries: list[Version] = []
        skipped = 0
        for line in text.splitlines():
            entry = _parse(line)
            if entry is None:
                skipped += bool(line.strip())
                continue
            if entry.version > upto:
                continue
            while entries and entries[-1].version >= entry.version:  # a crash left a line the list never reached
                entries.pop()
            entries.append(entry)
        return entries, skipped
    return [], 0


def list_at(entries: Sequence[Version], version: int, current: Sequence[Task]) -> tuple[Task, ...] | None:
    """The list as it was at `version` (0: before any change, empty), rebuilt from the
    history: each task listed then, with its status and subject then, taken from the
    current list, or (deleted since) from the history's saved copy of it. None when the
    history no longer holds that version."""
    if version == 0:
        return ()
    at = next((e for e in reversed(entries) if e.version <= version), None)
    if at is None or at.version != version:
        return None
    now = {t.id: t for t in current}
    saved = {e.task_id: e.before for e in entries if e.version > version and e.task_id and e.before is not None}
    tasks = []
    for task_id, status, subject in at.tasks:
        task = now.get(task_id) or _decoded(saved.get(task_id)) or Task(task_id, subject)
        known: TaskStatus = next((s for s in STATUSES if s == status), "pending")
        tasks.append(replace(task, status=known, subject=subject))
    ids = {t.id for t in tasks}
    return tuple(replace(t, blocks=tuple(b for b in t.blocks if b in ids)) for t in tasks)


def _decoded(raw: dict[str, Any] | None) -> Task | None:
    try:
        return decode_task(raw) if raw is not None else None
    except ValueError:
        return None


def last_undoable(entries: Sequence[Version]) -> Version | None:
    """The person's latest list edit that no undo has undone yet."""
    undone = {e.undoes for e in entries if e.undoes is not None}
    return next((e for e in reversed(entries) if e.undoable and e.version not in undone), None)


MARKS = {"pending": "☐", "in_progress": "◼", "completed": "☒"}


_WHAT_SHOWN = 300
"""Characters of a change's description shown (one logged before subjects were bounded may be huge)."""


def render(entries: Sequence[Version], *, limit: int = 50, skipped: int = 0) -> str:
    """`/todos history`: one line per version, newest last, with the list it left."""
    note = ""
    if skipped:
        count, was = ("1 line", "was") if skipped == 1 else (f"{skipped} lines", "were")
        note = f"({count} of the history could not be read and {was} skipped)"
    if not entries:
        return "\n".join(filter(None, ["No changes to the task list yet.", note]))
    shown = entries[-limit:]
    lines = [f"Task list history ({len(entries)} versions{', latest ' + str(limit) if len(entries) > limit else ''})"]
    if note:
        lines.append(note)
    for entry in shown:
        stamp = time.strftime("%H:%M:%S", time.localtime(entry.at))
        listing = " ".join(f"{MARKS.get(status, '?')}#{tid}" for tid, status, _ in entry.tasks) or "(empty)"
        what = entry.what if len(entry.what) <= _WHAT_SHOWN else entry.what[: _WHAT_SHOWN - 1] + "…"
        lines.append(f"v{entry.version:<3} {stamp}  {entry.who:<6}  {what}")
        lines.append(f"      {listing}")
    return "\n".join(lines)
