"""File-system helpers for the file and search tools: paths as the model and the person see
them, text versus binary, bounded line reading, and replacing a file's content safely.

`replace_file` writes through `atomic_write` (temporary file, fsync, rename), keeping a
file's mode, a symlink as a link and a hard link as one file; the temporary file is
noted in the data dir while it exists, so one a kill -9 left behind is removed by the
next run (`sweep_unfinished_writes`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ..atomic import atomic_write, new_file_mode, temp_beside
from .context import ToolContext
from .results import ToolError

MAX_LINE_CHARS = 2000
BINARY_SAMPLE = 8192


def display_path(path: Path, ctx: ToolContext) -> str:
    """Workspace-relative when inside it (short for the model and the UI), else absolute."""
    real = (Path(os.path.realpath(path)), Path(os.path.realpath(ctx.workspace)))
    for candidate, root in ((path, ctx.workspace), real):
        try:
            return candidate.relative_to(root).as_posix()
        except ValueError:
            continue
    return str(path)


def short_path(path: object, limit: int = 60) -> str:
    """Keep the end of a long path: the file name matters more than its parents."""
    text = " ".join(str(path).split())
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def looks_binary(sample: bytes) -> bool:
    """NUL bytes, or mostly not UTF-8: not something to show or edit as text.

    A few stray bytes (a Latin-1 é in a comment) do not make a file binary; they are
    shown as U+FFFD by Read and kept byte-for-byte by Edit.
    """
    if b"\0" in sample:
        return True
    undecodable = sample.decode("utf-8", errors="replace").count("\ufffd")
    return undecodable * 10 > len(sample) * 3


def regular_file_exists(path: Path, shown: str) -> bool:
    """False when missing; ToolError for directories and devices, FIFOs, sockets."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise ToolError(f"Cannot access {shown}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(mode):
        raise ToolError(f"{shown} is a directory, not a file (use Glob, or Bash `ls`, to list it)")
    if not stat.S_ISREG(mode):
        # Opening a FIFO would block forever; a device could be endless.
        raise ToolError(f"{shown} is not a regular file")
    return True


def open_regular(path: Path, shown: str) -> IO[bytes] | None:
    """`path` opened for reading, or None when it does not exist; ToolError for a directory,
    a FIFO, a socket or a device. Opened without blocking and checked on the open file, so
    a FIFO put in its place after a look (`regular_file_exists`) still never hangs a read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ToolError(f"{shown} is a directory, not a file (use Glob, or Bash `ls`, to list it)") from None
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ToolError(f"{shown} is a directory, not a file (use Glob, or Bash `ls`, to list it)")
        if not stat.S_ISREG(mode):
            raise ToolError(f"{shown} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def printable(text: str) -> str:
    """Lone surrogates (undecodable bytes kept for round-tripping, odd file names) become
    U+FFFD, so the text can be shown and sent as JSON."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def bounded_lines(f: IO[bytes], limit: int) -> Iterator[bytes]:
    """Each line of `f` (with its newline), cut to its first `limit` bytes: a line of any
    length (a 1 GB minified file) costs at most `limit` bytes of memory."""
    while raw := f.readline(limit):
        if len(raw) == limit and not raw.endswith(b"\n"):
            while (rest := f.readline(limit)) and not rest.endswith(b"\n"):
                pass  # the rest of an over-long line is skipped, never held
        yield raw


LINE_BYTES = MAX_LINE_CHARS * 4 + 8
"""Enough bytes for MAX_LINE_CHARS characters and the cut note to show."""


def numbered(number: int, line: str) -> str:
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS] + f" … [line cut at {MAX_LINE_CHARS} chars]"
    return f"{number:6d}\t{line}"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


# --- replacing a file's content ------------------------------------------------------


def replace_file(path: Path, shown: str, data: bytes) -> None:
    """Give the file at `path` the content `data`, all at once.

    Writing in place truncates first, so a full disk or a quota would leave the file cut
    short. Instead the data goes to a temporary file beside it, which then replaces the
    original in one rename; on any failure the original is untouched.
    """
    # Through a symlink to its target, so the link stays a link.
    target = Path(os.path.realpath(path))
    try:
        mode: int | None = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from exc
    # The rename needs only a writable directory; keep refusing a file we may not write.
    if mode is not None and not os.access(target, os.W_OK):
        raise ToolError(f"Cannot write {shown}: Permission denied")
    if mode is not None and (target.stat().st_nlink > 1 or not os.access(target.parent, os.W_OK)):
        # A rename would cut a hard link, and is impossible in a read-only directory:
        # here the file is written in place, as any editor would.
        _write_in_place(target, shown, data)
        return
    temp = temp_beside(target, hidden=True)
    with _recorded(temp):
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # The new file gets the original's mode, or for a new file the mode a plain create would have.
            atomic_write(target, data, mode=mode if mode is not None else new_file_mode(), temp=temp)
        except OSError as exc:
            unchanged = "the file was left unchanged" if mode is not None else "nothing was written"
            raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}; {unchanged}") from exc


def _write_in_place(target: Path, shown: str, data: bytes) -> None:
    """Overwrite the file's content where it is (a hard link must stay one file). When that
    fails half way (a full disk), the old content goes back into the blocks it had."""
    try:
        old = target.read_bytes()
        with target.open("r+b", buffering=0) as f:
            try:
                _overwrite(f, data)
            except OSError as exc:
                try:
                    _overwrite(f, old)
                    unchanged = "the file was left unchanged"
                except OSError as again:
                    unchanged = f"putting the old content back failed too ({again.strerror or again})"
                raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}; {unchanged}") from exc
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from exc


def _overwrite(f: IO[bytes], data: bytes) -> None:
    f.seek(0)
    view = memoryview(data)
    while view:
        written = f.write(view)
        view = view[written or 0 :]
    f.truncate(len(data))
    os.fsync(f.fileno())


# --- temporary files a killed process left behind -----------------------------------

_TEMP_NAME = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")


def _pending_dir() -> Path:
    from ..places import data_root

    return data_root() / "pending-writes"


@contextlib.contextmanager
def _recorded(temp: Path) -> Iterator[None]:
    """Note `temp` in the data dir while it exists, under a lock this process holds: after a
    kill -9, the next run finds the note unlocked and removes the file (`sweep_unfinished_writes`).
    Best effort: a data dir that cannot be written never stops a Write."""
    fd = None
    entry = _pending_dir() / f"{os.getpid()}-{secrets.token_hex(6)}"
    try:
        entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(entry, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, os.fsencode(temp))
    except OSError:
        pass
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
        if fd is not None:
            with contextlib.suppress(OSError):
                entry.unlink()
            os.close(fd)


def sweep_unfinished_writes() -> None:
    """Remove the temporary files of writes whose process died (their note is unlocked)."""
    try:
        entries = list(_pending_dir().iterdir())
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            _sweep_one(entry)


def _sweep_one(entry: Path) -> None:
    fd = os.open(entry, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # its writer is alive
        temp = Path(os.fsdecode(entry.read_bytes()))
        if _TEMP_NAME.fullmatch(temp.name):  # only ever a file this module named
            temp.unlink(missing_ok=True)
        entry.unlink()
    finally:
        os.close(fd)
