"""A read pipe of our own for a child process's output.

asyncio's `Process.wait()` also waits for the pipes asyncio made to close, which a
background job (`cmd &`) that holds them can put off for ever. A pipe we make and read
ourselves has no such tie: the process can be waited for, and its output read, apart.
`CappedOutput` keeps what is read within bounds, and `stop_group` stops the child's
process group and whatever it started that left the group (Bash and the hooks both use
them; here, so that loading the hooks with the settings does not load the tools).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

PROC = Path("/proc")


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send `sig` to a process group that may be gone already."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def wait_exit(proc: asyncio.subprocess.Process, seconds: float) -> None:
    """Wait up to `seconds` for `proc` to exit."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await proc.wait()


def _descendants(root: int) -> dict[int, str]:
    """Every process below `root` (pid → name), read from /proc; empty without /proc."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir(PROC):
            if not entry.name.isdigit():
                continue
            try:
                text = (PROC / entry.name / "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            pid, ppid = int(entry.name), int(text[text.rfind(")") + 2 :].split()[1])
            names[pid] = text[text.find("(") + 1 : text.rfind(")")]
            children.setdefault(ppid, []).append(pid)
    found: dict[int, str] = {}
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            found[child] = names[child]
            stack.append(child)
    return found


def _still_running(pid: int, group: int) -> bool:
    """Alive (not a zombie) and outside `group`: a process that left the command's group."""
    try:
        state = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z" and os.getpgid(pid) != group
    except (OSError, IndexError):
        return False


async def stop_group(proc: asyncio.subprocess.Process, grace: float) -> list[str]:
    """SIGTERM the child's whole process group, then SIGKILL whatever is left, and also the
    processes it started that left the group (`setsid`, daemons), found through /proc
    before the group went. Returns those, as `pid (name)`."""
    family: dict[int, str] = {}
    escaped: list[int] = []
    try:
        family = await asyncio.to_thread(_descendants, proc.pid)
        signal_group(proc.pid, signal.SIGTERM)
        await wait_exit(proc, grace)
    finally:
        # Also when a second cancellation cuts the look or the grace short (quitting the
        # app cancels the turn, then asyncio's shutdown cancels it again): nothing survives.
        signal_group(proc.pid, signal.SIGKILL)
        escaped = [pid for pid in family if _still_running(pid, proc.pid)]
        for pid in escaped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    await wait_exit(proc, grace)
    return [f"{pid} ({family[pid]})" for pid in escaped]


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
