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

from collections.abc import Iterable
from pathlib import Path

from ..seal import SealedRecords
from .config import ServerSpec

RECORDS = SealedRecords("trusted_mcp.json", "the MCP server acceptance")


def trust_path() -> Path:
    return RECORDS.path


def is_trusted(workspace: Path, spec: ServerSpec) -> bool:
    """Has the person accepted exactly this server for this project? (No file: no.)"""
    return RECORDS.holds(str(workspace.resolve()), spec.fingerprint())


def trust(workspace: Path, specs: Iterable[ServerSpec]) -> None:
    """Remember these servers as accepted for this project, beside those accepted before.
    Raises OSError with a clear message when the file cannot be written."""
    RECORDS.add(str(workspace.resolve()), [spec.fingerprint() for spec in specs], replace=False)
