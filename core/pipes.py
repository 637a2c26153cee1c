"""A read pipe of our own for a child process's output.

asyncio's `Process.wait()` also waits for the pipes asyncio made to close, which a
background job (`cmd &`) that holds them can put off for ever. A pipe we make and read
ourselves has no such tie: the process can be waited for, and its output read, apart.
`CappedOutput` keeps what is read within bounds, and `signal_group` / `wait_exit` stop
the child's process group (Bash and the hooks both use them; here, so that loading the
hooks with the settings does not load the tools).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send `sig` to a process group that may be gone already."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def wait_exit(proc: asyncio.subprocess.Process, seconds: float) -> None:
    """Wait up to `seconds` for `proc` to exit."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await proc.wait()


async def open_read_pipe() -> tuple[asyncio.StreamReader, asyncio.ReadTransport, int]:
    """A new pipe: a reader of its read end, the transport feeding it (close it when done)
    and the write end's descriptor, to hand to the child (close it once the child has it)."""
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    reader = asyncio.StreamReader()
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0)
        )
    except BaseException:
        os.close(write_fd)
        raise
    return reader, transport, write_fd


class CappedOutput:
    """Keeps the first and last bytes of a stream of any length; counts what falls between."""

    def __init__(self, head: int, tail: int) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self._head = bytearray()
        self._tail = bytearray()
        self.omitted = 0

    def feed(self, chunk: bytes) -> None:
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        self._tail += chunk
        excess = len(self._tail) - self._tail_limit
        if excess > 0:
            del self._tail[:excess]
            self.omitted += excess

    def text(self) -> str:
        if not self.omitted:
            return bytes(self._head + self._tail).decode("utf-8", errors="replace")
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        return f"{head}\n… [{self.omitted} bytes omitted] …\n{tail}"
