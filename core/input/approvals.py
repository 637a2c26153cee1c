"""Remembering which versions of a project's command files may run their shell commands.

A project's command file came with the repository; its `` !`cmd` `` lines run on the
person's machine when they type the command. The first time (and after every change to
the file) the person is asked; a yes is kept in `<data root>/approved_commands.json`,
keyed by the file's absolute path. Like the hook trust record, each entry is sealed
(`core/seal.py`: an HMAC of the path and the sha256 of the version approved, under the
person's key), so a model that writes the file cannot approve a command file for them.
"""

from __future__ import annotations

import hmac
import json
from pathlib import Path
from typing import Any

from ..places import data_root
from ..seal import key, own_private, read_key, seal
from ..tasks.persistence import PersistenceError, update_atomic

APPROVALS_FILE = "approved_commands.json"


def approvals_path() -> Path:
    return data_root() / APPROVALS_FILE


def _decode(document: Any) -> dict[str, str]:
    if not isinstance(document, dict):
        raise TypeError("not an object")
    return {str(k): v for k, v in document.items() if isinstance(v, str)}


def _seal(secret: bytes, path: Path, digest: str) -> str:
    return seal(secret, "command file", str(path.resolve()), digest)


def is_approved(path: Path, digest: str) -> bool:
    secret = read_key()
    if secret is None or not own_private(approvals_path()):
        return False
    try:
        approved = _decode(json.loads(approvals_path().read_bytes()))
    except (OSError, ValueError, TypeError):
        return False
    return hmac.compare_digest(approved.get(str(path.resolve()), ""), _seal(secret, path, digest))


def approve(path: Path, digest: str) -> None:
    """Remember the yes; OSError with a clear message when it cannot be saved."""
    try:
        secret = key()
    except OSError as exc:
        raise OSError(f"cannot remember the approval: {exc.strerror or exc}") from exc
    entry, value = str(path.resolve()), _seal(secret, path, digest)

    def compute(current: dict[str, str] | None) -> bytes:
        return json.dumps({**(current or {}), entry: value}, indent=1, sort_keys=True).encode()

    try:
        update_atomic(approvals_path(), _decode, compute)
    except PersistenceError as exc:
        raise OSError(f"cannot remember the approval in {approvals_path()}: {exc}") from exc
