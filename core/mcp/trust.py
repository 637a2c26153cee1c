"""Remembering which of a project's MCP servers the person accepted.

A server from `.mcp.json` or the project's settings came with the repository, and starting
it runs its command (or sends its headers to its URL). It starts only once the person
has accepted it for this project. Acceptances are kept in `<data root>/trusted_mcp.json`,
per project path, as fingerprints of what would run (`ServerSpec.fingerprint`: command,
args, env, cwd, url, headers): change any of it and the person is asked again (Claude Code
keys by name only, which has been shown to run a changed command silently).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..session.directory import data_root
from ..tasks.persistence import PersistenceError, update_atomic
from .config import ServerSpec

TRUST_FILE = "trusted_mcp.json"


def trust_path() -> Path:
    return data_root() / TRUST_FILE


def _decode(document: Any) -> dict[str, list[str]]:
    if not isinstance(document, dict):
        raise TypeError("not an object")
    return {str(k): [f for f in v if isinstance(f, str)] for k, v in document.items() if isinstance(v, list)}


def trusted_fingerprints(workspace: Path) -> set[str]:
    try:
        trusted = _decode(json.loads(trust_path().read_bytes()))
    except (OSError, ValueError, TypeError):
        return set()
    return set(trusted.get(str(workspace.resolve()), []))


def trust(workspace: Path, specs: Iterable[ServerSpec]) -> None:
    """Remember these servers as accepted for this project (atomic write, locked).
    Raises OSError with a clear message when the file cannot be written."""
    key = str(workspace.resolve())
    added = [s.fingerprint() for s in specs]

    def compute(current: dict[str, list[str]] | None) -> bytes:
        trusted = dict(current or {})
        trusted[key] = sorted({*trusted.get(key, []), *added})
        return json.dumps(trusted, indent=1, sort_keys=True).encode()

    try:
        update_atomic(trust_path(), _decode, compute)
    except PersistenceError as exc:
        raise OSError(f"cannot remember the MCP server acceptance in {trust_path()}: {exc}") from exc
