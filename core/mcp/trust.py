"""Remembering which of a project's MCP servers the person accepted.

A server from `.mcp.json` or the project's settings came with the repository, and starting
it runs its command (or sends its headers to its URL). It starts only once the person
has accepted it for this project. Acceptances are kept in `<data root>/trusted_mcp.json`,
per project path, as fingerprints of what would run (`ServerSpec.fingerprint`: command,
args, env, cwd, url, headers): change any of it and the person is asked again (Claude Code
keys by name only, which has been shown to run a changed command silently).

As the hooks' acceptance (`core/hooks/trust.py`), each entry is sealed (`core/seal.py`):
an HMAC of the project and the fingerprint under the person's key, in files only they
may write, so a record the model wrote is not believed.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..places import data_root
from ..seal import key, own_private, read_key, seal
from ..tasks.persistence import PersistenceError, update_atomic
from .config import ServerSpec

TRUST_FILE = "trusted_mcp.json"


def trust_path() -> Path:
    return data_root() / TRUST_FILE


def _decode(document: Any) -> dict[str, list[str]]:
    if not isinstance(document, dict):
        raise TypeError("not an object")
    return {str(k): [f for f in v if isinstance(f, str)] for k, v in document.items() if isinstance(v, list)}


def is_trusted(workspace: Path, spec: ServerSpec) -> bool:
    """Has the person accepted exactly this server for this project? (No file: no.)"""
    secret = read_key()
    if secret is None or not own_private(trust_path()):
        return False
    try:
        trusted = _decode(json.loads(trust_path().read_bytes()))
    except (OSError, ValueError, TypeError):
        return False
    wanted = seal(secret, str(workspace.resolve()), spec.fingerprint())
    return any(hmac.compare_digest(entry, wanted) for entry in trusted.get(str(workspace.resolve()), []))


def trust(workspace: Path, specs: Iterable[ServerSpec]) -> None:
    """Remember these servers as accepted for this project (atomic write, locked).
    Raises OSError with a clear message when the file cannot be written."""
    try:
        secret = key()
    except OSError as exc:
        raise OSError(f"cannot remember the MCP server acceptance: {exc.strerror or exc}") from exc
    project = str(workspace.resolve())
    added = [seal(secret, project, spec.fingerprint()) for spec in specs]

    def compute(current: dict[str, list[str]] | None) -> bytes:
        trusted = dict(current or {})
        trusted[project] = sorted({*trusted.get(project, []), *added})
        return json.dumps(trusted, indent=1, sort_keys=True).encode()

    try:
        update_atomic(trust_path(), _decode, compute)
    except PersistenceError as exc:
        raise OSError(f"cannot remember the MCP server acceptance in {trust_path()}: {exc}") from exc
