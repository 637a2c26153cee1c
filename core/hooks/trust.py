"""Remembering that the person trusted a project's hooks.

Hooks in `.todo-agent/settings.toml` arrive with whatever repository was cloned, and a
hook is a shell command that runs without asking. So they run only once the person has
accepted them for this project (the TUI asks at start-up). The acceptance is kept in
`<data root>/trusted_hooks.json` (`TODO_AGENT_HOME` or the user data dir), keyed by the
project's absolute path, holding a fingerprint of the project's hook set (every event,
matcher, command and timeout): change one command and the person is asked again.

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


def fingerprint(specs: Sequence[HookSpec]) -> str:
    """Identifies a set of hooks: order and all."""
    text = json.dumps([[s.event, s.matcher, s.command, s.timeout] for s in specs])
    return hashlib.sha256(text.encode()).hexdigest()


def is_trusted(workspace: Path, specs: Sequence[HookSpec]) -> bool:
    """Has the person accepted exactly these hooks for this project? (No file: no.)"""
    return RECORDS.holds(str(workspace.resolve()), fingerprint(specs))


def trust(workspace: Path, specs: Sequence[HookSpec]) -> None:
    """Remember that the person accepted these hooks for this project (they replace what
    was accepted before). Blocks briefly; OSError with a clear message if it cannot."""
    RECORDS.add(str(workspace.resolve()), [fingerprint(specs)], replace=True)
