"""A read pipe of our own for a child process's output.

asyncio's `Process.wait()` also waits for the pipes asyncio made to close, which a
background job (`cmd &`) that holds them can put off for ever. A pipe we make and read
ourselves has no such tie: the process can be waited for, and its output read, apart.
`CappedOutput` keeps what is read within bounds, and `stop_group` stops the child's
process group and whatever it started that left the group (Bash and the hooks both use
them; here, so that loading the hooks with the settings does not load the tools; a local
MCP server's owner uses `descendants` and `stop_escaped` the same way).
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


Family = dict[int, tuple[str, str]]
"""Processes below a root: pid → (name, start time in clock ticks since boot). The start
time tells a process from a later one that got its pid back."""


def _stat(pid: int) -> tuple[str, list[str]] | None:
    """A process's name and the fields of /proc/PID/stat after it (state first), or None."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:  # gone meanwhile
        return None
    return text[text.find("(") + 1 : text.rfind(")")], text[text.rfind(")") + 2 :].split()


def start_ticks(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, as /proc says), or None when it
    is gone or cannot be read: tells a process from a later one that got its pid back."""
    stat = _stat(pid)
    return stat[1][19] if stat is not None and len(stat[1]) >= 20 else None


def process_alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped (read from /proc where there is one)."""
    if pid <= 0:  # 0 and -1 would mean our own group, or every process
        return False
    try:
        state = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # someone else's process: alive
            return True
        return True
    return state != "Z"


def descendants(root: int, known: Family | None = None) -> Family:
    """Every process below `root`, read from /proc (empty without /proc), and those of
    `known` (an earlier look) still running: a `setsid` child whose parent has exited is
    no longer below `root`. Blocking: a scan of every process; run it in a thread."""
    children: dict[int, list[int]] = {}
    found_at: Family = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir(PROC):
            if not entry.name.isdigit() or (stat := _stat(int(entry.name))) is None or len(stat[1]) < 20:
                continue
            pid, (name, fields) = int(entry.name), stat
            found_at[pid] = (name, fields[19])
            children.setdefault(int(fields[1]), []).append(pid)
    family: Family = {pid: seen for pid, seen in (known or {}).items() if found_at.get(pid) == seen}
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            family[child] = found_at[child]
            stack.append(child)
    return family


def _still_running(pid: int, started: str, group: int) -> bool:
    """The same process (alive, not a zombie) and outside `group`: one that left the group."""
    stat = _stat(pid)
    if stat is None or len(stat[1]) < 20 or stat[1][0] == "Z" or stat[1][19] != started:
        return False
    try:
        return os.getpgid(pid) != group
    except OSError:
        return False


def stop_escaped(family: Family, group: int) -> list[str]:
    """SIGKILL each process of `family` still running outside `group` (`setsid`, daemons: a
    signal to the group missed them). Returns those, as `pid (name)`."""
    escaped = [pid for pid, (_, started) in family.items() if _still_running(pid, started, group)]
    for pid in escaped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return [f"{pid} ({family[pid][0]})" for pid in escaped]


async def stop_group(proc: asyncio.subprocess.Process, grace: float) -> list[str]:
    """SIGTERM the child's whole process group, then SIGKILL whatever is left, and also the
    processes it started that left the group (`setsid`, daemons), found through /proc
    before the group went. Returns those, as `pid (name)`."""
    family: Family = {}
    escaped: list[str] = []
    try:
        family = await asyncio.to_thread(descendants, proc.pid)
        signal_group(proc.pid, signal.SIGTERM)
        await wait_exit(proc, grace)
    finally:
        # Also when a second cancellation cuts the look or the grace short (quitting the
        # app cancels the turn, then asyncio's shutdown cancels it again): nothing survives.
        signal_group(proc.pid, signal.SIGKILL)
        escaped = stop_escaped(family, proc.pid)
    await wait_exit(proc, grace)
    return escaped


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
