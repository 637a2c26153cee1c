"""What an agent last read of each file, and the check before Edit or Write replaces one.

Several agents (the main one and its sub-agents) may work one project at once. Two rules
keep every byte:

- **Stale.** Each agent's `FileLedger` keeps the content hash of each file as it last read
  or wrote it. Edit and Write refuse a file whose content is not that any more (another
  agent, a command or the person changed it): the model reads it again first. A file the
  agent never read is not checked: it has no view of it to be stale.
- **Held.** While a task is in progress, the files it changed belong to it: `holder`
  (supplied by whoever knows the plan, `core/agents/holds.py`) names the task that holds
  a path, and another agent's Edit or Write of it is refused.

The check and the write run in one thread call under a per-path lock shared by every
agent of the process, so no two writes of one file interleave between check and rename.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .results import ToolError

Holder = Callable[[Path], str | None]
"""A resolved path → why another agent's task holds it (`explore-2 (task #3 "…")`), or None."""

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: the path as given is all there is
        return path.absolute()


@contextmanager
def write_lock(path: Path) -> Iterator[None]:
    """Hold `path`'s lock (one per resolved path, for every agent of the process)."""
    key = str(real(path))
    with _locks_guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        yield


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class FileLedger:
    """One agent's view of the files it read or wrote (by content hash)."""

    def __init__(self, holder: Holder | None = None, wrote: Callable[[Path], None] | None = None) -> None:
        self.holder = holder
        self.wrote_hook = wrote
        """Told after this agent wrote a file (its task holds it from that moment)."""
        self._seen: dict[Path, str | None] = {}

    def saw(self, path: Path, data: bytes | None) -> None:
        """This agent read (or wrote) `path`, which then held `data` (None: it did not exist)."""
        self._seen[real(path)] = None if data is None else digest(data)

    def saw_digest(self, path: Path, value: str) -> None:
        self._seen[real(path)] = value

    def check(self, path: Path, shown: str, current: Callable[[], bytes | None]) -> None:
        """Refuse (ToolError) to replace `path` if another agent's task holds it, or if it
        changed since this agent last saw it. `current` reads it now (None: missing)."""
        where = real(path)
        if self.holder is not None and (held := self.holder(where)) is not None:
            raise ToolError(
                f"{shown} is held by {held}, which changed it and is still at work; leave the file to that task "
                "(or wait until it is finished) so neither change is lost"
            )
        if where not in self._seen:
            return
        now = current()
        if (None if now is None else digest(now)) != self._seen[where]:
            raise ToolError(
                f"{shown} changed since you last read it (another agent, a command or the person changed it); "
                "Read it again, then make your change on what it holds now"
            )

    def wrote(self, path: Path, data: bytes) -> None:
        self.saw(path, data)
        if self.wrote_hook is not None:
            self.wrote_hook(real(path))
