"""Atomic file replacement: the one place that writes a temporary file and renames it.

A crash, a full disk or a kill at any moment leaves either the old file or the new one,
never a file cut short: the data goes to a temporary file in the same directory, is
fsynced, renamed over the target with `os.replace`, and the directory is fsynced so the
rename itself is durable. On any failure the temporary file is removed and the error
propagates unchanged (callers turn it into their own one-line message).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def temp_beside(path: Path, *, hidden: bool = False) -> Path:
    """A fresh temporary name next to `path`: `name.<12 hex>.tmp` (`.name.…` when hidden)."""
    dot = "." if hidden else ""
    return path.with_name(f"{dot}{path.name}.{secrets.token_hex(6)}.tmp")


def atomic_write(path: Path, data: bytes, *, mode: int = 0o600, temp: Path | None = None) -> None:
    """Replace `path` with `data` all at once; the new file gets permission bits `mode`.

    `temp` names the temporary file (default `temp_beside(path)`); it must not exist and
    must be in `path`'s directory. The directory itself must exist.
    """
    temp = temp or temp_beside(path)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode != 0o600:  # created private; widened only once the content is complete
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    with contextlib.suppress(OSError):  # the content is in place; only the rename's durability is at stake
        fsync_dir(path.parent)


def new_file_mode() -> int:
    """The mode a plain create would give a new file (0o666 less the umask), for files made
    on the person's behalf (a Write, a rewound file) rather than todo-agent's own (0600)."""
    mask = None
    try:  # Linux shows it without changing it; os.umask() sets it for every thread
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                mask = int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    if mask is None:
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


def fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable. Not possible on Windows, where it is not needed."""
    if os.name == "nt":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
