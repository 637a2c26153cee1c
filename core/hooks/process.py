"""Running one shell-command hook as a process.

The command runs with `/bin/sh -c` in its own process group (a new session), its input
in an unlinked temporary file, its stdout and stderr in pipes of ours read as they
arrive (each kept to a head and a tail). At its timeout or a cancellation the whole
group gets SIGTERM, then SIGKILL, and so does anything it started that left the group
(`setsid`, a daemon). Nothing here knows what a hook's output means:
`core/hooks/runner.py` reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..pipes import CappedOutput, open_read_pipe, stop_group

_STDOUT_HEAD, _STDOUT_TAIL = 40_000, 10_000
_STDERR_HEAD, _STDERR_TAIL = 8_000, 4_000
_KILL_GRACE = 1.0
_OUTPUT_GRACE = 0.5
_CHUNK = 65_536


@dataclass(frozen=True)
class Finished:
    """What one command did."""

    exit_code: int | None
    """None when it timed out or could not start."""
    stdout: str
    stderr: str
    elapsed: float
    timed_out: bool = False
    start_error: str = ""


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """The hook's whole process group, and what it started that left the group (`setsid`)."""
    await stop_group(proc, _KILL_GRACE)


def _stdin_file(payload: bytes) -> int:
    """The input as an unlinked temporary file: the hook may read it or not, at any pace,
    and nothing of ours waits on a pipe it never drains. Returns its descriptor."""
    fd, name = tempfile.mkstemp(prefix="todo-agent-hook-")
    try:
        os.unlink(name)
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


@dataclass
class _Pipe:
    """A read pipe of our own (`core/pipes.py` says why)."""

    reader: asyncio.StreamReader
    transport: asyncio.ReadTransport
    write_fd: int

    @classmethod
    async def open(cls) -> _Pipe:
        return cls(*await open_read_pipe())

    def release_write_end(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def close(self) -> None:
        self.release_write_end()
        self.transport.close()


@dataclass
class _Streams:
    """The hook's stdin (a file) and its stdout and stderr (pipes of ours)."""

    stdin: int
    out: _Pipe
    err: _Pipe

    def release_child_ends(self) -> None:
        """Once the hook holds them: EOF comes when it and its children let go."""
        self.out.release_write_end()
        self.err.release_write_end()


async def _read_into(reader: asyncio.StreamReader, output: CappedOutput) -> None:
    while chunk := await reader.read(_CHUNK):
        output.feed(chunk)


async def _spawn(command: str, cwd: Path, env: Mapping[str, str], streams: _Streams) -> asyncio.subprocess.Process:
    try:
        return await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            command,
            cwd=cwd,
            env=dict(env),
            stdin=streams.stdin,
            stdout=streams.out.write_fd,
            stderr=streams.err.write_fd,
            start_new_session=True,
        )
    finally:
        streams.release_child_ends()


async def _start(command: str, cwd: Path, env: Mapping[str, str], streams: _Streams) -> asyncio.subprocess.Process:
    """Spawn; if cancelled while spawning, finish starting and kill the group (asyncio's
    own clean-up would kill the shell alone and orphan what it started)."""
    spawning = asyncio.ensure_future(_spawn(command, cwd, env, streams))
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        with contextlib.suppress(OSError):
            await _kill_group(await spawning)
        raise


async def run_command(command: str, seconds: float, payload: bytes, cwd: Path, env: Mapping[str, str]) -> Finished:
    """Run `command` to its end, `seconds`, or a cancellation (which kills its group)."""
    started = time.monotonic()
    stdin = await asyncio.to_thread(_stdin_file, payload)
    pipes: list[_Pipe] = []
    try:
        pipes.append(await _Pipe.open())
        pipes.append(await _Pipe.open())
        streams = _Streams(stdin, *pipes)
        try:
            proc = await _start(command, cwd, env, streams)
        except OSError as exc:
            message = f"cannot start /bin/sh in {cwd}: {exc.strerror or exc}"
            return Finished(None, "", "", time.monotonic() - started, start_error=message)
        return await _collect(seconds, proc, streams, started)
    finally:
        os.close(stdin)
        for pipe in pipes:
            pipe.close()


async def _collect(seconds: float, proc: asyncio.subprocess.Process, streams: _Streams, started: float) -> Finished:
    stdout, stderr = CappedOutput(_STDOUT_HEAD, _STDOUT_TAIL), CappedOutput(_STDERR_HEAD, _STDERR_TAIL)
    reading = [
        asyncio.ensure_future(_read_into(streams.out.reader, stdout)),
        asyncio.ensure_future(_read_into(streams.err.reader, stderr)),
    ]
    timed_out = False
    code: int | None = None
    try:
        try:
            async with asyncio.timeout(seconds):
                code = await proc.wait()
        except TimeoutError:
            timed_out = True
            await _kill_group(proc)
        except BaseException:
            await _kill_group(proc)  # interrupted: nothing of the hook may outlive the turn
            raise
        # Output still in the pipes arrives just after the exit; a background job holding
        # them open must not make us wait for it.
        await asyncio.wait(reading, timeout=_OUTPUT_GRACE)
    finally:
        for task in reading:
            task.cancel()
    elapsed = time.monotonic() - started
    return Finished(None if timed_out else code, stdout.text(), stderr.text(), elapsed, timed_out=timed_out)
