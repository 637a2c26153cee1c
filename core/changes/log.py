"""What each task changed: files, lines added and removed, and their content before.

Every Edit/Write, and every workspace file a Bash command created, modified or deleted
(`scan`), while a task is in progress is recorded against that task (the
latest started, as tool calls are counted). Per task and file the record keeps the
content the file had before the task first touched it and the content the task left
it with, so a task's diff is its own even when a later task edits the same file again.

Storage, beside the session: `<id>.changes.json` (the records, written atomically under
a lock like the task list) and `<id>.blobs/<sha256>` (file contents, stored once per
distinct content). A file over `MAX_KEEP_BYTES` is recorded without its content, with a
note: it is counted as changed but cannot be shown or rewound. Sessions without these
files simply have no recorded changes.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..atomic import atomic_write, new_file_mode
from ..tasks.persistence import read_json, update_atomic
from .on_disk import look
from .scan import Scan, changed, old_content, scan

MAX_KEEP_BYTES = 1_000_000
"""A file larger than this is counted, not kept: its diff and rewind say so."""
FORMAT = 1

State = Literal["absent", "kept", "too_big", "unknown"]
PUT_BACK = "Put back"


@dataclass(frozen=True)
class Content:
    """A file's content at one moment, by reference to a blob."""

    state: State
    digest: str = ""
    size: int = 0

    def note(self) -> str:
        if self.state == "too_big":
            return f"too big to keep ({_size(self.size)}; the limit is {_size(MAX_KEEP_BYTES)})"
        if self.state == "unknown":
            return "its content before the command was not kept (outside git and past the read-ahead budget)"
        return ""


ABSENT = Content("absent")


@dataclass(frozen=True)
class Holding:
    """Another agent's task holds a file: who, as it last left the file, and whether that
    agent is running a command right now (which may be writing the file)."""

    name: str
    version: Content | None
    busy: bool = False


HeldCheck = Callable[[str], "Holding | None"]
"""A workspace-relative path → the holding of another agent's task, or None."""


@dataclass(frozen=True)
class FileChange:
    """One file one task changed: from `before` (when the task first touched it) to `after`."""

    path: str
    """Relative to the workspace, `/`-separated."""
    before: Content
    after: Content
    added: int = 0
    removed: int = 0
    first: int = 0
    """Sequence number of the task's first change to the file (orders tasks on one file)."""
    last: int = 0
    """Sequence number of its latest change."""

    @property
    def kind(self) -> str:
        if self.before.state == "absent":
            return "created"
        if self.after.state == "absent":
            return "deleted"
        return "modified"


@dataclass(frozen=True)
class Summary:
    files: int
    added: int
    removed: int

    def line(self) -> str:
        """`2 files · +14 −3`."""
        return f"{self.files} {'file' if self.files == 1 else 'files'} · +{self.added} −{self.removed}"


def _size(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB" if n >= 1_000_000 else f"{n / 1000:.0f} kB"


def _lines(data: bytes | None) -> list[str] | None:
    if data is None:
        return []
    if b"\0" in data[:8000]:
        return None  # binary: no line diff
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def count_lines(before: bytes | None, after: bytes | None) -> tuple[int, int]:
    """Lines added and removed between two contents (None: the file does not exist)."""
    old, new = _lines(before), _lines(after)
    if old is None or new is None:
        return 0, 0
    added = removed = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


def unified(
    path: str, before: bytes | None, after: bytes | None, *, before_label: str = "", after_label: str = ""
) -> str:
    """A unified diff of one file; `None` content means the file does not exist."""
    old, new = _lines(before), _lines(after)
    a = "/dev/null" if before is None else f"a/{path}"
    b = "/dev/null" if after is None else f"b/{path}"
    if old is None or new is None:
        return f"--- {a}\n+++ {b}\nBinary file {path} changed\n"
    text = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        for line in difflib.unified_diff(old, new, before_label or a, after_label or b)
    )
    return text


class ChangeLog:
    """The recorded changes of one session (in memory only when `path` is None)."""

    def __init__(self, path: Path | None, workspace: Path) -> None:
        self.path = path
        self.workspace = workspace
        self.records: dict[str, tuple[FileChange, ...]] = {}
        self.rewinds: list[dict[str, Any]] = []
        self.seq = 0
        self.warning: str | None = None
        self._memory: dict[str, bytes] = {}
        self.reader: Callable[[Path], bytes | None] | None = None
        """Where a file's content is read before the disk (an ACP client's editor, the
        channel the file tools use; `core/tools/channel.py`); None: the disk alone."""

    @classmethod
    def for_session(cls, session_path: Path | None, workspace: Path) -> ChangeLog:
        if session_path is None:
            return cls(None, workspace)
        log = cls(session_path.with_name(session_path.stem + ".changes.json"), workspace)
        log.reload()
        return log

    @property
    def blob_dir(self) -> Path | None:
        return (
            None if self.path is None else self.path.with_name(self.path.name.removesuffix(".changes.json") + ".blobs")
        )

    def reload(self) -> None:
        if self.path is None:
            return
        loaded, warning = read_json(self.path, _decode)
        self.warning = warning and warning.replace("task list", "record of changes")
        if loaded is not None:
            self.records, self.rewinds, self.seq = loaded

    # --- reading -----------------------------------------------------------------

    def files_of(self, task_id: str) -> tuple[FileChange, ...]:
        return self.records.get(task_id, ())

    def summaries(self) -> dict[str, Summary]:
        return {
            task: Summary(len(files), sum(f.added for f in files), sum(f.removed for f in files))
            for task, files in self.records.items()
            if files
        }

    def blob(self, content: Content) -> bytes | None:
        """The bytes of a kept content; None when absent or not kept (or the blob is gone)."""
        if content.state != "kept":
            return None
        if content.digest in self._memory:
            return self._memory[content.digest]
        if self.blob_dir is None:
            return None
        try:
            return (self.blob_dir / content.digest).read_bytes()
        except OSError:
            return None

    def diff(self, task_id: str) -> str:
        """The task's combined diff: each file from before the task to what it left."""
        parts = []
        for change in self.files_of(task_id):
            notes = [c.note() for c in (change.before, change.after) if c.note()]
            if notes:
                parts.append(f"--- a/{change.path}\n+++ b/{change.path}\n# {change.kind}; {'; '.join(notes)}\n")
                continue
            before = None if change.before.state == "absent" else self.blob(change.before)
            after = None if change.after.state == "absent" else self.blob(change.after)
            parts.append(unified(change.path, before, after))
        return "".join(parts)

    def as_json(self, task_id: str) -> list[dict[str, Any]]:
        """Per file, for `-p --output-format json`."""
        return [
            {"path": c.path, "change": c.kind, "added": c.added, "removed": c.removed}
            | ({"note": n} if (n := c.before.note() or c.after.note()) else {})
            for c in self.files_of(task_id)
        ]

    # --- recording -----------------------------------------------------------------

    def capture(self, path: Path) -> Content:
        """Keep `path`'s current content as a blob (absent, or too big, noted as such).

        Only a regular file has content (`on_disk.look`: never blocks, never follows a
        final symlink): a directory, FIFO or socket where the file was counts as gone."""
        if self.reader is not None and (data := self.reader(path)) is not None:
            return self.keep(data)  # the editor's copy, which the file tools read and wrote
        now = look(path, MAX_KEEP_BYTES)
        if now.kind == "file":
            if now.data is None:
                return Content("too_big", size=now.size) if now.size > MAX_KEEP_BYTES else Content("unknown")
            return self.keep(now.data)
        return Content("unknown") if now.kind == "symlink" else ABSENT

    def keep(self, data: bytes) -> Content:
        if len(data) > MAX_KEEP_BYTES:
            return Content("too_big", size=len(data))
        digest = hashlib.sha256(data).hexdigest()
        if self.blob_dir is None:
            self._memory[digest] = data
        else:
            _write_blob(self.blob_dir, digest, data)
        return Content("kept", digest, len(data))

    def relative(self, path: Path) -> str | None:
        """`path` relative to the workspace, or None when outside it."""
        try:
            return path.resolve().relative_to(self.workspace.resolve()).as_posix()
        except (ValueError, OSError, RuntimeError):  # outside, or a symlink loop (RuntimeError before 3.13)
            return None

    def record(self, task_id: str, path: str, before: Content, after: Content) -> None:
        """Note that `task_id` took `path` from `before` to `after` (one tool call)."""
        self.seq += 1
        files = list(self.records.get(task_id, ()))
        index = next((i for i, f in enumerate(files) if f.path == path), None)
        if index is None:
            files.append(FileChange(path, before, after, first=self.seq, last=self.seq))
            index = len(files) - 1
        else:
            files[index] = replace(files[index], after=after, last=self.seq)
        change = files[index]
        if change.before == change.after:  # back where the task found it: nothing to show
            files.pop(index)
        else:
            added, removed = self._counts(change)
            files[index] = replace(change, added=added, removed=removed)
        self.records[task_id] = tuple(files)

    def _counts(self, change: FileChange) -> tuple[int, int]:
        if change.before.state in ("too_big", "unknown") or change.after.state in ("too_big", "unknown"):
            return 0, 0
        before = None if change.before.state == "absent" else self.blob(change.before)
        after = None if change.after.state == "absent" else self.blob(change.after)
        return count_lines(before, after)

    def scan(self) -> Scan:
        return scan(self.workspace, read_ahead=True, keep_limit=MAX_KEEP_BYTES)

    def record_scan(self, task_id: str, before: Scan, held: HeldCheck | None = None) -> tuple[list[str], list[str]]:
        """Record every file changed since `before` against `task_id`: (their paths, notes)."""
        found, notes = self.scan_changes(before, held)
        for path, old in found:
            self.record(task_id, path, old, self.capture(self.workspace / path))
        return [path for path, _ in found], notes

    def scan_changes(self, before: Scan, held: HeldCheck | None = None) -> tuple[list[tuple[str, Content]], list[str]]:
        """Every file changed since `before`, with what it held then: (path, old content), notes.

        A file another agent's task holds (`held`) is put back as that task left it when
        it is certain nobody else wrote it since: the command found it so, and the holder
        runs no command now. Otherwise the change stays and a note says so."""
        after = scan(self.workspace)
        paths = changed(before, after, self.workspace)
        notes: list[str] = []
        kept: list[str] = []
        for path in paths:
            holding = held(path) if held is not None else None
            if holding is not None:
                note = self._hold(path, before, holding)
                notes.append(note)
                if note.startswith(PUT_BACK):
                    continue
            kept.append(path)
        found: list[tuple[str, Content]] = []
        for path in kept:
            if path in before.stamps:
                data = old_content(self.workspace, before, path)
                size = before.stamps[path][0]
                if data is not None:
                    old = self.keep(data)
                else:
                    old = Content("too_big" if size > MAX_KEEP_BYTES else "unknown", size=size)
            else:
                old = ABSENT
            found.append((path, self._known_before(path, old)))
        return found, notes

    def _hold(self, path: str, before: Scan, holding: Holding) -> str:
        """Put `path` back as its holder left it, if that is safe; the line that says what happened."""

        def left(why: str) -> str:
            return f"{path} is held by {holding.name}: this command changed it, and it was left so ({why})"

        version = holding.version
        if holding.busy:
            return left("that agent is running a command too, which may be what changed it")
        if version is None or version.state not in ("kept", "absent"):
            return left("how that task left it is not kept")
        theirs = None if version.state == "absent" else self.blob(version)
        if version.state == "kept" and theirs is None:
            return left("how that task left it is not kept")
        was_absent = path not in before.stamps
        found = None if was_absent else old_content(self.workspace, before, path)
        if not was_absent and found is None:
            return left("what it held before this command is not known")
        if was_absent != (theirs is None) or found != theirs:
            return left("it had changed since that task left it")
        target = self.workspace / path
        try:
            if theirs is None:
                target.unlink(missing_ok=True)
            else:
                info = target.lstat() if os.path.lexists(target) else None
                regular = info is not None and stat.S_ISREG(info.st_mode)
                atomic_write(target, theirs, mode=stat.S_IMODE(info.st_mode) if regular and info else new_file_mode())
        except OSError as exc:
            return left(f"it could not be put back: {exc.strerror or exc}")
        return (
            f"{PUT_BACK} {path} as {holding.name} left it: that task holds the file. "
            "Leave it to that task, or change it once the task is done"
        )

    def _known_before(self, path: str, old: Content) -> Content:
        """Prefer what a task left in the file over "unknown" when the scan could not read it."""
        if old.state != "unknown":
            return old
        latest = max(
            (f for files in self.records.values() for f in files if f.path == path), key=lambda f: f.last, default=None
        )
        return latest.after if latest is not None else old

    # --- persistence -----------------------------------------------------------------

    def save(self) -> None:
        if self.path is None:
            return
        data = encode(self.records, self.rewinds, self.seq)
        update_atomic(self.path, lambda doc: doc, lambda _current: data, what="the record of changes")


def _write_blob(directory: Path, digest: str, data: bytes) -> None:
    target = directory / digest
    if target.exists():
        return  # content-addressed: already kept
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(target, data)


def encode(records: Mapping[str, Sequence[FileChange]], rewinds: Sequence[dict[str, Any]], seq: int) -> bytes:
    document = {
        "format": FORMAT,
        "seq": seq,
        "tasks": {task: [asdict(f) for f in files] for task, files in records.items()},
        "rewinds": list(rewinds),
    }
    return (json.dumps(document, ensure_ascii=False, indent=1) + "\n").encode()


def _content(raw: Any) -> Content:
    if not isinstance(raw, dict) or raw.get("state") not in ("absent", "kept", "too_big", "unknown"):
        raise ValueError("a file content entry is malformed")
    digest, size = raw.get("digest", ""), raw.get("size", 0)
    if not isinstance(digest, str) or not isinstance(size, int):
        raise ValueError("a file content entry is malformed")
    return Content(raw["state"], digest, size)


def _change(raw: Any) -> FileChange:
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
        raise ValueError("a file change entry lacks its path")
    numbers = {k: raw.get(k, 0) for k in ("added", "removed", "first", "last")}
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in numbers.values()):
        raise ValueError("a file change entry has a wrong number")
    return FileChange(raw["path"], _content(raw.get("before")), _content(raw.get("after")), **numbers)


def _decode(document: Any) -> tuple[dict[str, tuple[FileChange, ...]], list[dict[str, Any]], int]:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("not a todo-agent record of changes (format 1)")
    tasks, rewinds, seq = document.get("tasks"), document.get("rewinds", []), document.get("seq", 0)
    if not isinstance(tasks, dict) or not isinstance(rewinds, list) or not isinstance(seq, int):
        raise ValueError("'tasks' must be an object, 'rewinds' a list, 'seq' an integer")
    records = {str(task): tuple(_change(c) for c in files) for task, files in tasks.items() if isinstance(files, list)}
    return records, [r for r in rewinds if isinstance(r, dict)], seq
