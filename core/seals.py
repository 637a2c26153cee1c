"""Records the model cannot forge: an HMAC under a random key the person's process made.

A record that turns something on (trusted hooks, a project command file's approval) lives
in todo-agent's data directory. The gate asks before any write there, and on top of that
each entry is sealed: an HMAC-SHA256 of what it vouches for, under `trust.key` (0600, made
on first use), which the model cannot compute without running code. A file or key that is
not the person's own private regular file is not believed.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

KEY_FILE = "trust.key"


def own_private(path: Path) -> bool:
    """The person's own file (not a link), which nobody else may write."""
    try:
        info = path.lstat()
    except OSError:
        return False
    mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    return stat.S_ISREG(info.st_mode) and mine and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_key(directory: Path) -> bytes | None:
    path = directory / KEY_FILE
    if not own_private(path):
        return None
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    return key if len(key) >= 32 else None


def make_key(directory: Path) -> bytes:
    """The key, made on first use (0600; a second process racing to make it reads the first's).
    OSError when the file there is not a private file of the person's."""
    if (key := read_key(directory)) is not None:
        return key
    path = directory / KEY_FILE
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32) + "\n")
    if (key := read_key(directory)) is None:
        raise OSError(f"{path} is not a private file of yours; remove it to trust again")
    return key


def seal(key: bytes, message: str) -> str:
    return hmac.new(key, message.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()


def sealed(key: bytes, message: str, recorded: str) -> bool:
    """Whether `recorded` is the seal of `message` under `key` (compared in constant time)."""
    return hmac.compare_digest(recorded, seal(key, message))
