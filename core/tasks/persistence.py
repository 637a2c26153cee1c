"""Crash-safe storage of one small JSON document: the task list of a session.

A write is `atomic_write` (temporary file, fsync, rename, directory fsync), under a
cross-process lock on `<path>.lock`. A crash at any moment leaves either the old or the new file.
These functions block; the store calls them through `asyncio.to_thread`.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock, Timeout

from ..atomic import atomic_write

T = TypeVar("T")

LOCK_TIMEOUT = 10.0
"""Seconds to wait for another process that holds the lock before giving up."""
LOCK_MODE = 0o600
"""Lock files are private like the files they guard (filelock's default is 0644)."""


class PersistenceError(Exception):
    """The file could not be written; the message is one line a person can act on."""


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def temp_files(path: Path) -> list[Path]:
    """Temporary files a write to `path` may leave behind if the process dies."""
    return sorted(path.parent.glob(f"{path.name}.*.tmp"))


def update_atomic(
    path: Path, decode: Callable[[Any], T], compute: Callable[[T | None], bytes | None], what: str = "the task list"
) -> None:
    """Read, change and write `path` under one hold of the lock.

    `compute` gets what is on disk now (None when there is no usable file) and returns
    the new bytes, or None to leave the file alone; `what` names the file in errors.
    Reading inside the lock makes another process's saved changes the base of this one,
    so two processes on one list neither lose each other's changes nor hand out the same id.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(lock_path(path), timeout=LOCK_TIMEOUT, mode=LOCK_MODE):
            try:
                current: T | None = decode(json.loads(path.read_bytes().decode("utf-8")))
            except (OSError, ValueError, KeyError, TypeError, RecursionError):
                current = None  # missing or unusable: the caller's own state is the base
            data = compute(current)
            if data is not None:
                atomic_write(path, data)
    except Timeout as exc:
        raise PersistenceError(f"another process holds {exc.lock_file}; {what} was not saved") from exc
    except OSError as exc:
        raise PersistenceError(f"cannot save {what} to {path}: {exc.strerror or exc}") from exc


def read_json(path: Path, decode: Callable[[Any], T]) -> tuple[T | None, str | None]:
    """Load `path` through `decode`, never raising.

    Returns `(value, None)`, `(None, None)` when there is no file yet, or
    `(None, warning)` when the file was unusable: it is then moved aside to
    `<path>.corrupt-<timestamp>` so nothing is lost, and the caller starts empty.
    `decode` raises `ValueError`, `KeyError` or `TypeError` on a malformed document.
    """
    if not path.parent.is_dir():
        return None, None  # nothing saved yet; taking the lock would create the directory
    try:
        with FileLock(lock_path(path), timeout=LOCK_TIMEOUT, mode=LOCK_MODE):
            for leftover in temp_files(path):
                with contextlib.suppress(OSError):
                    leftover.unlink()
            raw = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except (OSError, Timeout) as exc:
        return None, f"The task list {path} could not be read ({_reason(exc)}); starting with an empty list."
    try:
        return decode(json.loads(raw.decode("utf-8"))), None
    except (ValueError, KeyError, TypeError, RecursionError) as exc:  # RecursionError: absurd nesting
        return None, _quarantine(path, _reason(exc))


def _quarantine(path: Path, reason: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    try:
        os.replace(path, target)
    except OSError as exc:
        return (
            f"The task list {path} is unreadable ({reason}) and could not be moved aside"
            f" ({exc.strerror}); starting with an empty list."
        )
    return f"The task list {path} was unreadable ({reason}); it was kept as {target.name} and the list starts empty."


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON at line {exc.lineno}"
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
