"""Where Read, Edit and Write take a file's text and put it, when not the disk: an ACP
client's editor (its buffers, saved or not). Bash, `@`, the file index and images see the
disk, as in every agent.

Blocking, called from the worker threads the file tools run in (never on the event loop).
Each answer may be "not through me": `read` None, `write` False; the caller then uses the
disk, so a client that fails or cannot take a file never loses an edit. The change record
(`ChangeLog.reader`) and the stale-file check read through the same channel, so what a
task changed is measured on what the model read and wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class FileChannel(Protocol):
    reads: bool
    writes: bool

    def read(self, path: Path) -> bytes | None:
        """The file's content as the channel has it; None: not through it (use the disk)."""
        ...

    def write(self, path: Path, data: bytes) -> bool:
        """Put `data` in the file; False: not taken (write it to the disk)."""
        ...
