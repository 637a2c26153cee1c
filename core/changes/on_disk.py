"""What a workspace path holds right now, looked at without following it or waiting on it.

The change record and rewind read paths that a command (or a hostile model) may have
turned into anything: a directory, a FIFO, a socket, a symlink loop. Opening a FIFO
waits for a writer for ever, in a thread nothing can stop; following a symlink may
lead out of the workspace or round in a loop. So a path is first looked at with
`lstat` (it answers at once, whatever the path is), and a regular file is opened with
`O_NONBLOCK | O_NOFOLLOW` and checked again on the open descriptor, so a FIFO swapped
in between never blocks the read either.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["missing", "file", "symlink", "directory", "other"]

_OTHER = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}


@dataclass(frozen=True)
class OnDisk:
    kind: Kind
    data: bytes | None = None
    """A file's content; None when it is larger than the limit or could not be read."""
    size: int = 0
    note: str = ""
    """A symlink's target; for `other`, what it is (`a FIFO`); for an unreadable file, why."""

    def describe(self) -> str:
        """What is there, for a person: `a directory`, `a FIFO`, `a symlink to ../x`."""
        if self.kind == "symlink":
            return f"a symlink to {self.note}"
        return {"missing": "nothing", "file": "a file", "directory": "a directory"}.get(self.kind, self.note)


def look(path: Path, limit: int) -> OnDisk:
    """What `path` is, and for a regular file of at most `limit` bytes its content. Never
    blocks, never follows a symlink at the end of `path`, never raises."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return OnDisk("missing")
    except (OSError, ValueError) as exc:  # a folder on the way is not one, a NUL byte, no permission
        return OnDisk("other", note=f"something that cannot be looked at ({_why(exc)})")
    if stat.S_ISLNK(info.st_mode):
        try:
            return OnDisk("symlink", note=os.readlink(path))
        except OSError as exc:
            return OnDisk("symlink", note=f"? ({_why(exc)})")
    if stat.S_ISDIR(info.st_mode):
        return OnDisk("directory")
    if not stat.S_ISREG(info.st_mode):
        return OnDisk("other", note=_OTHER.get(stat.S_IFMT(info.st_mode), "not a regular file"))
    if info.st_size > limit:
        return OnDisk("file", size=info.st_size)
    return _read(path, info.st_size, limit)


def _read(path: Path, size: int, limit: int) -> OnDisk:
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return OnDisk("missing")
    except OSError as exc:
        return OnDisk("file", size=size, note=_why(exc))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped for something else since the look
            return OnDisk("other", note=_OTHER.get(stat.S_IFMT(info.st_mode), "not a regular file"))
        chunks: list[bytes] = []
        total = 0
        while total <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - total))):
            chunks.append(chunk)
            total += len(chunk)
        data = b"".join(chunks)
        return OnDisk("file", size=len(data)) if len(data) > limit else OnDisk("file", data, len(data))
    except OSError as exc:
        return OnDisk("file", size=size, note=_why(exc))
    finally:
        os.close(fd)


def _why(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or type(exc).__name__
