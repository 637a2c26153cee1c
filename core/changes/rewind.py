"""Rewinding a task: its files back to what they held before the task touched them.

`plan` looks at each file the task changed and says what a rewind would do: restore
its old content, delete a file the task created, nothing (it is already as before), or
nothing possible (its old content was too big to keep, or never known). A file that is
no longer what the task left (a later task or the person changed it since) is a
conflict: the plan names who, and carries the diff from what the task left to what is
there now, so the person decides per file. Nothing is written by `plan`.

`apply` writes a journal (`<id>.rewind.json`, atomically) naming every file and its
target, then puts each file back (each atomically: a temporary file renamed over it),
records the rewind with the task's changes, sets the task back to pending with one
line for the model (delivered once, like the person's other panel edits) and a version
in the plan history, and removes the journal. A crash (kill -9) before the journal is
written changes nothing; after it, `recover` (run when the session is opened) finishes
the same steps, every one of which can run twice: the result is the old state or the new
one, never a mix.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import stat
import time
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from ..atomic import atomic_write, new_file_mode
from ..tasks.model import StoreError
from ..tasks.store import TaskStore
from .log import MAX_KEEP_BYTES, ChangeLog, Content, FileChange, unified
from .on_disk import OnDisk, look

Action = Literal["restore", "delete", "nothing", "unavailable"]


@dataclass(frozen=True)
class FilePlan:
    path: str
    action: Action
    conflict: str = ""
    """Empty, or who changed the file since the task: "changed later by task #3"."""
    diff: str = ""
    """For a conflict, what changed since the task; otherwise what the rewind would undo."""
    note: str = ""

    @property
    def suggested(self) -> bool:
        """Selected at first: a file that can be put back and nobody changed since."""
        return self.action in ("restore", "delete") and not self.conflict


@dataclass(frozen=True)
class RewindPlan:
    task_id: str
    subject: str
    files: tuple[FilePlan, ...]

    @property
    def actionable(self) -> tuple[FilePlan, ...]:
        return tuple(f for f in self.files if f.action in ("restore", "delete"))


def _matches(content: Content, now: OnDisk) -> bool | None:
    """Whether what is at the path `now` is `content`; None when that cannot be told."""
    if content.state == "absent":
        return now.kind == "missing"
    if content.state == "kept":
        return now.data is not None and hashlib.sha256(now.data).hexdigest() == content.digest
    if content.state == "too_big":
        return None if now.kind == "file" and now.size == content.size else False
    return None


def _shown(now: OnDisk) -> bytes | None:
    """What is at the path now, for a diff (None: nothing). A symlink is shown as what it
    is, never read through (it may lead anywhere)."""
    if now.kind == "missing":
        return None
    if now.kind == "file" and now.data is not None:
        return now.data
    if now.kind == "file":
        return f"(a file of {now.size:,} bytes, not shown)\n".encode()
    return f"({now.describe()})\n".encode()


def _later(changes: ChangeLog, task_id: str, change: FileChange) -> list[str]:
    """Other tasks that changed the file after `task_id` last did."""
    later = {
        task
        for task, files in changes.records.items()
        if task != task_id and any(f.path == change.path and f.first > change.last for f in files)
    }
    return sorted(later, key=lambda t: int(t) if t.isdigit() else 0)


def _escapes(changes: ChangeLog, path: str) -> bool:
    """Whether writing `path` now would land outside the workspace: a folder on the way
    was replaced by a symlink (a model could do that between the task and the rewind,
    so that putting back or deleting "its" file hits one of the person's elsewhere).
    The file itself may be a symlink: it is replaced or removed, never followed."""
    return changes.relative((changes.workspace / path).parent) is None


@dataclass(frozen=True)
class Since:
    """What a rewind puts a file back to just before, in its words (a task's, a prompt's)."""

    what: str
    """`the task`, `the prompt`: "already as before the task"."""
    left_by: str
    """Whose last change the file should still hold: `task #3 left`, `todo-agent left`."""
    conflict: Callable[[], str]
    """Why the file is a conflict when it no longer holds that (asked only then)."""
    rewound_label: str = "{path} rewound"


def plan_file(changes: ChangeLog, path: str, before: Content, after: Content, since: Since) -> FilePlan:
    """What putting `path` back to `before` would do, todo-agent having left it as `after`;
    one file's trouble (whatever the workspace became) is that file's note, never a raise."""
    try:
        return _plan_file(changes, path, before, after, since)
    except (OSError, RuntimeError, ValueError) as exc:
        return FilePlan(path, "unavailable", note=f"it cannot be looked at ({type(exc).__name__}: {exc})")


def _plan_file(changes: ChangeLog, path: str, target: Content, left: Content, since: Since) -> FilePlan:
    if _escapes(changes, path):
        return FilePlan(path, "unavailable", note="its folder now leads outside the workspace (a symlink)")
    # Looked at, never waited on: a FIFO there would hang a read (and the app with it).
    now = look(changes.workspace / path, MAX_KEEP_BYTES)
    if now.kind == "directory":  # putting the file back would delete what is in it
        return FilePlan(path, "unavailable", note="it is now a directory; move it away to rewind this file")
    before = None if target.state == "absent" else changes.blob(target)
    if target.state in ("too_big", "unknown") or (target.state == "kept" and before is None):
        return FilePlan(path, "unavailable", note=target.note() or "its saved content is missing")
    if _matches(target, now):
        return FilePlan(path, "nothing", note=f"already as before {since.what}")
    action: Action = "delete" if target.state == "absent" else "restore"
    shown = _shown(now)
    if now.kind == "other":
        return FilePlan(path, action, f"it is now {now.describe()}, not a file", "")
    if not _matches(left, now):
        last = None if left.state == "absent" else changes.blob(left)
        diff = unified(path, last, shown, before_label=since.left_by, after_label="now")
        return FilePlan(path, action, since.conflict(), diff)
    after_label = since.rewound_label.format(path=path)
    return FilePlan(path, action, "", unified(path, shown, before, before_label=f"{path} now", after_label=after_label))


def _since_task(changes: ChangeLog, task_id: str, change: FileChange) -> Since:
    def conflict() -> str:
        later = _later(changes, task_id, change)
        if later:
            return "changed later by " + ", ".join(f"task #{t}" for t in later)
        return "changed since the task, not by a task (by you, or with no task in progress)"

    return Since("the task", f"task #{task_id} left", conflict)


def plan(changes: ChangeLog, store: TaskStore, task_id: str) -> RewindPlan:
    """What rewinding `task_id` would do, file by file. Blocking (reads the files)."""
    task = store.get(task_id)
    subject = task.subject if task else ""
    files = tuple(
        plan_file(changes, c.path, c.before, c.after, _since_task(changes, task_id, c))
        for c in changes.files_of(task_id)
    )
    return RewindPlan(task_id, subject, files)


# --- applying ---------------------------------------------------------------------------


def journal_path(changes: ChangeLog) -> Path | None:
    return (
        None
        if changes.path is None
        else changes.path.with_name(changes.path.name.replace(".changes.json", ".rewind.json"))
    )


def describe(task_id: str, subject: str, done: list[FilePlan], kept: list[FilePlan]) -> str:
    """The line the model (and the plan history) gets."""
    restored = [f.path for f in done if f.action == "restore"]
    deleted = [f.path for f in done if f.action == "delete"]
    parts = []
    if restored:
        parts.append("restored " + ", ".join(restored))
    if deleted:
        parts.append("deleted " + ", ".join(deleted) + " (created by the task)")
    text = f'rewound #{task_id} "{subject}": ' + ("; ".join(parts) or "no file put back")
    text += " to their state before the task; the task is pending again"
    if kept:
        text += "; left as they are: " + ", ".join(f"{f.path} ({f.conflict or f.note})" for f in kept)
    return text


def _put_back(changes: ChangeLog, path: str, target: Content) -> None:
    if _escapes(changes, path):  # checked in the plan; changed since: leave it
        return
    where = changes.workspace / path
    try:
        info: os.stat_result | None = where.lstat()
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        return  # became a directory since the plan: never delete what is in it
    if target.state == "absent":
        with contextlib.suppress(FileNotFoundError):
            where.unlink()
        return
    data = changes.blob(target)
    if data is None:
        return  # checked in the plan; gone since: leave the file as it is
    where.parent.mkdir(parents=True, exist_ok=True)
    # A regular file keeps its mode. What replaces a symlink or a FIFO gets a new file's
    # mode: never the mode of whatever a symlink pointed at (an executable, a setuid file).
    regular = info is not None and stat.S_ISREG(info.st_mode)
    atomic_write(where, data, mode=stat.S_IMODE(info.st_mode) if info is not None and regular else new_file_mode())


def _finish(changes: ChangeLog, journal: dict[str, Any]) -> None:
    """Steps 2 and 3, blocking and repeatable: files back, the rewind recorded."""
    for item in journal["files"]:
        _put_back(changes, item["path"], Content(**item["to"]))
    if any(r.get("id") == journal["id"] for r in changes.rewinds):
        return
    restored = {item["path"] for item in journal["files"]}
    task = journal["task"]
    changes.records[task] = tuple(f for f in changes.files_of(task) if f.path not in restored)
    changes.rewinds.append(
        {"id": journal["id"], "task": task, "at": journal["at"], "restored": sorted(restored), "text": journal["text"]}
    )
    changes.save()


async def apply(changes: ChangeLog, store: TaskStore, rewind: RewindPlan, chosen: Collection[str]) -> str:
    """Put back the files of `rewind` named in `chosen`; returns the line the model gets."""
    done = [f for f in rewind.actionable if f.path in chosen]
    kept = [f for f in rewind.files if f not in done and f.action != "nothing"]
    text = describe(rewind.task_id, rewind.subject, done, kept)
    targets = {c.path: c.before for c in changes.files_of(rewind.task_id)}
    rewind_id = secrets.token_hex(6)
    journal = {
        "id": rewind_id,
        "task": rewind.task_id,
        "at": time.time(),
        "text": text,
        "files": [{"path": f.path, "to": asdict(targets[f.path])} for f in done],
    }
    where = journal_path(changes)
    if where is not None:
        await asyncio.to_thread(atomic_write, where, json.dumps(journal).encode())
    await asyncio.to_thread(_finish, changes, journal)
    with contextlib.suppress(StoreError):  # the task was deleted meanwhile: the files are back all the same
        await store.user_rewound(rewind.task_id, text, rewind_id)
    if where is not None:
        with contextlib.suppress(FileNotFoundError):
            where.unlink()
    return text


def recover(changes: ChangeLog, store: TaskStore) -> str | None:
    """Finish a rewind a crash interrupted (at session open); returns a notice, if any."""
    where = journal_path(changes)
    if where is None or not where.exists():
        return None
    try:
        journal = json.loads(where.read_bytes())
        _finish(changes, journal)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"An interrupted rewind could not be finished ({exc}); its journal is {where}."
    with contextlib.suppress(StoreError):
        store.apply_now(store.rewound_step(str(journal["task"]), str(journal["text"]), str(journal["id"])))
    where.unlink(missing_ok=True)
    return f"Finished a rewind that was interrupted: {journal['text']}"
