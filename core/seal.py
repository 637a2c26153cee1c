"""Records only the person could have written: what they trusted (a project's hooks, its
MCP servers, a version of a command file) is kept in the data directory as HMACs under a
random key (`trust.key`, beside the records), which a model cannot compute without running
code; the key and the records must be the person's own files, writable by nobody else.
The permission gate also asks before any write into the data directory
(`core/permissions/policy.py`). `SealedRecords` is the one way such a file is read and
written.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .places import data_root
from .tasks.persistence import PersistenceError, update_atomic

KEY_FILE = "trust.key"


def own_private(path: Path) -> bool:
    """The person's own file (not a link), which nobody else may write."""
    try:
        info = path.lstat()
    except OSError:
        return False
    mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    return stat.S_ISREG(info.st_mode) and mine and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_key() -> bytes | None:
    """The key, or None when there is none that can be believed."""
    path = data_root() / KEY_FILE
    if not own_private(path):
        return None
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    return key if len(key) >= 32 else None


def key() -> bytes:
    """The key, made on first use (0600; a second process racing to make it reads the first's).
    Raises OSError when the file there is not a private file of the person's."""
    if (found := read_key()) is not None:
        return found
    path = data_root() / KEY_FILE
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32) + "\n")
    if (found := read_key()) is None:
        raise OSError(f"{path} is not a private file of yours; remove it to trust again")
    return found


def seal(secret: bytes, *parts: str) -> str:
    """The HMAC of `parts` (joined by NUL) under `secret`."""
    message = "\0".join(parts).encode("utf-8", "surrogateescape")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


class SealedRecords:
    """One file of sealed records in the data directory: an entry (a project, a file) →
    the seals of what the person accepted for it.

    A seal covers the file's own name, the entry and what was accepted, so a record
    copied from one file or entry to another is not believed. Nothing in a file is
    believed when the key or the file is not a private file of the person's.
    """

    def __init__(self, filename: str, what: str) -> None:
        self.filename = filename
        self.what = what
        """What a record means, for error messages ("the hook acceptance")."""

    @property
    def path(self) -> Path:
        return data_root() / self.filename

    def holds(self, entry: str, accepted: str) -> bool:
        """Has the person accepted `accepted` for `entry`? (No file, no key: no.)"""
        secret = read_key()
        if secret is None or not own_private(self.path):
            return False
        try:
            records = _decode(json.loads(self.path.read_bytes()))
        except (OSError, ValueError, TypeError):
            return False
        wanted = self._seal(secret, entry, accepted)
        return any(hmac.compare_digest(found, wanted) for found in records.get(entry, []))

    def add(self, entry: str, accepted: Iterable[str], *, replace: bool) -> None:
        """Remember `accepted` for `entry` (atomic write, locked); `replace` forgets what
        was accepted for it before. Raises OSError with a clear message when it cannot."""
        try:
            secret = key()
        except OSError as exc:
            raise OSError(f"cannot remember {self.what}: {exc.strerror or exc}") from exc
        added = [self._seal(secret, entry, item) for item in accepted]

        def compute(current: dict[str, list[str]] | None) -> bytes:
            records = dict(current or {})
            records[entry] = sorted({*([] if replace else records.get(entry, [])), *added})
            return json.dumps(records, indent=1, sort_keys=True).encode()

        try:
            update_atomic(self.path, _decode, compute, what=self.what)
        except PersistenceError as exc:
            raise OSError(str(exc)) from exc

    def _seal(self, secret: bytes, entry: str, accepted: str) -> str:
        return seal(secret, self.filename, entry, accepted)


def _decode(document: Any) -> dict[str, list[str]]:
    if not isinstance(document, dict):
        raise TypeError("not an object")
    return {str(k): [s for s in v if isinstance(s, str)] for k, v in document.items() if isinstance(v, list)}
