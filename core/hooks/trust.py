"""Remembering that the person trusted a project's hooks.

Hooks in `.todo-agent/settings.toml` arrive with whatever repository was cloned, and a
hook is a shell command that runs without asking. So they run only once the person has
accepted them for this project (the TUI asks at start-up). The acceptance is kept in
`<data root>/trusted_hooks.json` (`TODO_AGENT_HOME` or the user data dir), keyed by the
project's absolute path, holding a fingerprint of the project's hook set (every event,
matcher, command and timeout, and the workspace code each command runs): change one
command, or the script it runs, and the person is asked again.

A record is believed only when it could not have been written by the model: each entry
is sealed (`core/seal.py`: an HMAC under a random key, in files only the person may
write), and the permission gate asks before any write into the data directory. A record
that fails these checks (or one from before them) is not trusted: the person is asked again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from ..seal import SealedRecords
from .spec import HookSpec

RECORDS = SealedRecords("trusted_hooks.json", "the hook acceptance")


def trust_path() -> Path:
    return RECORDS.path


def fingerprint(specs: Sequence[HookSpec], code: Sequence[str] = ()) -> str:
    """Identifies a set of hooks, order and all, with `code`: each one's digest of the
    workspace code its command runs (`core/permissions/workspace_code.py`, by the caller)."""
    rows: list[list[object]] = [[s.event, s.matcher, s.command, s.timeout] for s in specs]
    if any(code):  # (a set without workspace code keeps the fingerprint it always had)
        rows = [[*row, digest] for row, digest in zip(rows, code, strict=True)]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def is_trusted(workspace: Path, specs: Sequence[HookSpec], code: Sequence[str] = ()) -> bool:
    """Has the person accepted exactly these hooks, and the code they run, for this
    project? (No file: no.)"""
    return RECORDS.holds(str(workspace.resolve()), fingerprint(specs, code))


def trust(workspace: Path, specs: Sequence[HookSpec], code: Sequence[str] = ()) -> None:
    """Remember that the person accepted these hooks for this project (they replace what
    was accepted before). Blocks briefly; OSError with a clear message if it cannot."""
    RECORDS.add(str(workspace.resolve()), [fingerprint(specs, code)], replace=True)
