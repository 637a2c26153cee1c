"""Remembering which versions of a project's command files may run their shell commands.

A project's command file came with the repository; its `` !`cmd` `` lines run on the
person's machine when they type the command. The first time (and after every change to
the file) the person is asked; a yes is kept in `<data root>/approved_commands.json`,
keyed by the file's absolute path. Like the hook trust record, each entry is sealed
(`core/seal.py`: an HMAC of the path and the sha256 of the version approved, under the
person's key), so a model that writes the file cannot approve a command file for them.
"""

from __future__ import annotations

from pathlib import Path

from ..seal import SealedRecords

RECORDS = SealedRecords("approved_commands.json", "the command file approval")


def approvals_path() -> Path:
    return RECORDS.path


def is_approved(path: Path, digest: str) -> bool:
    return RECORDS.holds(str(path.resolve()), digest)


def approve(path: Path, digest: str) -> None:
    """Remember the yes for this version of the file (it replaces an earlier version's);
    OSError with a clear message when it cannot be saved."""
    RECORDS.add(str(path.resolve()), [digest], replace=True)
