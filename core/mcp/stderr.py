"""A server's stderr: never on the terminal. Read from a pipe of our own into a bounded
buffer of its last lines (shown in `/mcp` when it fails) and a log file beside the session.

A local server is started through `/bin/sh`, which first writes its own pid on this pipe
and then `exec`s the server (same pid): the first line tells the server's process group,
so the whole group can be stopped however the server ends (the transport keeps its process to
itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import deque
from pathlib import Path
from typing import TextIO

from ..pipes import open_read_pipe

PID_MARK = "todo-agent-mcp-pid "
KEPT_LINES = 200
LINE_CHARS = 2_000
LOG_BYTES = 2_000_000
"""A log file stops growing here (a server that floods stderr must not fill the disk)."""
_CHUNK = 65_536

LAUNCHER = f'printf "{PID_MARK}%s\\n" "$$" >&2; exec "$0" "$@"'
"""`/bin/sh -c LAUNCHER COMMAND ARGS…`: the pid on stderr, then the server in its place."""


class StderrLog:
    """The read end of one server's stderr pipe, its last lines and its log file."""

    def __init__(self, log_path: Path | None) -> None:
        self.log_path = log_path
        self.lines: deque[str] = deque(maxlen=KEPT_LINES)
        self.pid: int | None = None
        self.spawned_at = 0.0
        """When the pid line arrived (`time.monotonic()`): the process runs."""
        self.spawned = asyncio.Event()
        """Set once the pid line arrived: the process runs."""
        self._partial = b""
        self._logged = 0
        self._log: int | None = None
        self._reading: asyncio.Task[None] | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._write_fd: int | None = None
        self.errlog: TextIO | None = None

    async def open(self) -> TextIO:
        """A new pipe; returns its write end as the file the child's stderr goes to."""
        reader, self._transport, self._write_fd = await open_read_pipe()
        self.errlog = os.fdopen(self._write_fd, "w", closefd=False)
        self._reading = asyncio.ensure_future(self._read(reader))
        return self.errlog

    def release_write_end(self) -> None:
        """The child holds the write end now (or never will): ours is closed, so the pipe
        ends when the server and everything it started are gone."""
        if self.errlog is not None:
            with contextlib.suppress(OSError):
                self.errlog.close()
            self.errlog = None
        if self._write_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._write_fd)
            self._write_fd = None

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while chunk := await reader.read(_CHUNK):
                self._feed(chunk)
        finally:
            if self._partial:
                self._line(self._partial)
                self._partial = b""

    def _feed(self, chunk: bytes) -> None:
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        if len(self._partial) > LINE_CHARS * 4:  # a "line" with no end: keep it bounded
            lines.append(self._partial)
            self._partial = b""
        for line in lines:
            self._line(line)

    def _line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if self.pid is None and text.startswith(PID_MARK):
            with contextlib.suppress(ValueError):
                self.pid = int(text[len(PID_MARK) :])
                self.spawned_at = time.monotonic()
                self.spawned.set()
                self.release_write_end()
                return
        self.lines.append(text[:LINE_CHARS])
        self._write_log(text + "\n")

    def _write_log(self, text: str) -> None:
        if self.log_path is None or self._logged >= LOG_BYTES:
            return
        try:
            if self._log is None:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                # Readable by the person alone, like the transcript beside it (a server may log secrets).
                self._log = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            if self._logged + len(text) >= LOG_BYTES:
                text = text[: LOG_BYTES - self._logged] + "\n[… log cut here: more than 2 MB of stderr]\n"
            data = text.encode("utf-8", "replace")
            os.write(self._log, data)
            self._logged += len(data)
        except OSError:
            self.log_path = None  # a full or read-only disk: keep the lines in memory only

    def tail(self, count: int = 10) -> list[str]:
        return [line for line in list(self.lines)[-count:] if line.strip()]

    async def close(self) -> None:
        """Stop reading (what is in the pipe already is read first, briefly)."""
        self.release_write_end()
        if self._reading is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._reading), 0.2)
            self._reading.cancel()
        if self._transport is not None:
            self._transport.close()
        if self._log is not None:
            with contextlib.suppress(OSError):
                os.close(self._log)
            self._log = None
