"""Remembering that the person trusted a project's hooks.

Hooks in `.todo-agent/settings.toml` arrive with whatever repository was cloned, and a
hook is a shell command that runs without asking. So they run only once the person has
accepted them for this project (the TUI asks at start-up). The acceptance is kept in
`<data root>/trusted_hooks.json` (`TODO_AGENT_HOME` or the user data dir), keyed by the
project's absolute path, holding a fingerprint of the project's hook set (every event,
matcher, command and timeout): change one command and the person is asked again.

A record is believed only when it could not have been written by the model: each entry
is an HMAC of the project and its fingerprint under a random key (`core/seal.py`), and
both files must be the person's own and writable by nobody else. The permission gate also asks before any
write into the data directory (`core/permissions/policy.py`). A record that fails these
checks (or one from before them) is not trusted: the person is asked again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..places import data_root
from ..seal import key as _key
from ..seal import own_private as _own_private
from ..seal import read_key as _read_key
from ..seal import seal
from ..tasks.persistence import PersistenceError, update_atomic
from .spec import HookSpec

TRUST_FILE = "trusted_hooks.json"


def trust_path() -> Path:
    return data_root() / TRUST_FILE


def fingerprint(specs: Sequence[HookSpec]) -> str:
    """Identifies a set of hooks: order and all."""
    text = json.dumps([[s.event, s.matcher, s.command, s.timeout] for s in specs])
    return hashlib.sha256(text.encode()).hexdigest()


def _seal(key: bytes, workspace: Path, specs: Sequence[HookSpec]) -> str:
    return seal(key, str(workspace.resolve()), fingerprint(specs))


def _decode(document: Any) -> dict[str, str]:
    if not isinstance(document, dict):
        raise TypeError("not an object")
    return {str(k): v for k, v in document.items() if isinstance(v, str)}


def is_trusted(workspace: Path, specs: Sequence[HookSpec]) -> bool:
    """Has the person accepted exactly these hooks for this project? (No file: no.)"""
    key = _read_key()
    if key is None or not _own_private(trust_path()):
        return False
    try:
        trusted = _decode(json.loads(trust_path().read_bytes()))
    except (OSError, ValueError, TypeError):
        return False
    return hmac.compare_digest(trusted.get(str(workspace.resolve()), ""), _seal(key, workspace, specs))


def trust(workspace: Path, specs: Sequence[HookSpec]) -> None:
    """Remember that the person accepted these hooks for this project (atomic write, locked).

    Blocks briefly; raises OSError with a clear message if the file cannot be written.
    """
    try:
        key = _key()
    except OSError as exc:
        raise OSError(f"cannot remember the hook acceptance: {exc.strerror or exc}") from exc
    entry, value = str(workspace.resolve()), _seal(key, workspace, specs)

    def compute(current: dict[str, str] | None) -> bytes:
        trusted = dict(current or {})
        trusted[entry] = value
        return json.dumps(trusted, indent=1, sort_keys=True).encode()

    try:
        update_atomic(trust_path(), _decode, compute)
    except PersistenceError as exc:
        raise OSError(f"cannot remember the hook acceptance in {trust_path()}: {exc}") from exc
