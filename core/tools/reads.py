"""What the model has read, so Edit and Write never overwrite a change they have not seen.

A Read (or a file the person attached with `@`) notes the file's size and modification
time. An Edit or Write of a file read in this session is refused when the file has
changed since (the person saved it, a command rewrote it): the model reads it again
first, and the person's change is not undone by an edit made from the old text. A file
never read is not checked (a new file, or one the model only knows from Grep). The
agent's own writes, and the person's `PostToolUse` hooks right after them (a formatter),
note the new state, so the next edit of the same file goes through.
"""

from __future__ import annotations

import os
from pathlib import Path

from .results import ToolError

Stamp = tuple[int, int]
"""(size, mtime in ns)."""


def _stamp(path: Path) -> Stamp | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_size, info.st_mtime_ns


class ReadLedger:
    """The files read in one session and how each looked then, by resolved path."""

    def __init__(self) -> None:
        self._seen: dict[str, Stamp] = {}

    @staticmethod
    def _key(path: Path) -> str:
        return os.path.realpath(path)

    @staticmethod
    def stamp(path: Path) -> Stamp | None:
        """How the file looks now (taken before reading it: a change during the read counts)."""
        return _stamp(path)

    def record(self, path: Path, stamp: Stamp | None = None) -> None:
        """The file at `path` was read (or written) as it was at `stamp` (default: now)."""
        stamp = _stamp(path) if stamp is None else stamp
        if stamp is not None:
            self._seen[self._key(path)] = stamp

    def check(self, path: Path, shown: str) -> None:
        """Raise `ToolError` when the file changed since it was last read."""
        if self.changed_since_read(path):
            raise ToolError(
                f"{shown} has changed since you last read it (saved by the person, or rewritten by a command); "
                "Read it again before changing it, so that change is not undone"
            )

    def changed_since_read(self, path: Path) -> bool:
        """Whether `path` was read in this session and is not as it was then (or is gone)."""
        seen = self._seen.get(self._key(path))
        return seen is not None and _stamp(path) != seen

    def __contains__(self, path: Path) -> bool:
        return self._key(path) in self._seen
