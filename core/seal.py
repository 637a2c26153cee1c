"""Records only the person could have written: what they trusted (a project's hooks, its
MCP servers) is kept in the data directory as HMACs under a random key (`trust.key`,
beside the records), which a model cannot compute without running code; the key and the
records must be the person's own files, writable by nobody else. The permission gate also
asks before any write into the data directory (`core/permissions/policy.py`).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from .places import data_root

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
