"""The Bash tool: one shell command in its own process group, output capped, killable.

The command runs in a new session, so a timeout or an interrupt can kill everything it
started (pipelines, background jobs, test runners' workers), not just the shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from asyncio.subprocess import DEVNULL, PIPE, STDOUT, Process
from pathlib import Path
from typing import Any

from ..context import ToolContext
from .base import Tool, ToolError, ToolResult, load_description, object_schema, optional_int, require_str, short

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600
HEAD_BYTES = 15_000
TAIL_BYTES = 15_000
_CHUNK = 65_536
_KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL: long enough for a test runner to clean up."""

# Plain, uncoloured, non-paging output: nobody is at a terminal to press `q`.
_ENV_OVERRIDES = {"TERM": "dumb", "NO_COLOR": "1", "PAGER": "cat", "GIT_PAGER": "cat"}


class CappedOutput:
    """Keeps the first and last bytes of a stream of any length; counts what falls between."""

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
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


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _drain_and_wait(proc: Process, seconds: float) -> None:
    """Wait up to `seconds` for the group to let go of the pipe and the shell to exit.

    Keeps reading meanwhile: with a full pipe buffer asyncio would never see the exit.
    """
    assert proc.stdout is not None
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            while await proc.stdout.read(_CHUNK):
                pass
            await proc.wait()


async def _kill_group(proc: Process) -> None:
    """SIGTERM the command's whole process group, then SIGKILL whatever is left."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        await _drain_and_wait(proc, _KILL_GRACE)
    finally:
        # Also runs when a second interrupt cuts the grace short: nothing may survive.
        _signal_group(proc.pid, signal.SIGKILL)
    await _drain_and_wait(proc, _KILL_GRACE)


async def _spawn(command: str, cwd: Path) -> Process:
    try:
        return await asyncio.create_subprocess_exec(
            "/bin/bash",
            "-c",
            command,
            cwd=cwd,
            env={**os.environ, **_ENV_OVERRIDES},
            stdin=DEVNULL,
            stdout=PIPE,
            stderr=STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"Cannot start /bin/bash in {cwd}: {exc.strerror or exc}") from exc


async def _start(command: str, cwd: Path) -> Process:
    """Spawn the shell. Starting takes several event-loop steps, and the shell may already
    be running when an interrupt arrives; finish starting it then, so its group can be
    killed (asyncio's own clean-up would kill the shell alone and orphan its children)."""
    spawning = asyncio.ensure_future(_spawn(command, cwd))
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        with contextlib.suppress(ToolError):
            await _kill_group(await spawning)
        raise


def _exit_note(code: int) -> str:
    if code >= 0:
        return f"Exit code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"Exit code {code} (killed by {name})"


def _with_note(output: str, note: str) -> str:
    output = output.rstrip("\n")
    return f"{output}\n{note}" if output else note


async def run_command(command: str, cwd: Path, time_limit: float) -> ToolResult:
    """Run `command` with bash in its own process group and collect capped output."""
    proc = await _start(command, cwd)
    assert proc.stdout is not None
    output = CappedOutput()
    try:
        async with asyncio.timeout(time_limit):
            # Read as it arrives: the pipe never fills and memory stays bounded.
            while chunk := await proc.stdout.read(_CHUNK):
                output.feed(chunk)
            code = await proc.wait()
    except TimeoutError:
        await _kill_group(proc)
        note = f"Command timed out after {time_limit:g} s; it and everything it started were killed."
        return ToolResult(_with_note(output.text(), note), is_error=True)
    except BaseException:
        # Interrupted (CancelledError) or anything unexpected: never leave the group running.
        await _kill_group(proc)
        raise
    if code != 0:
        return ToolResult(_with_note(output.text(), _exit_note(code)), is_error=True)
    return ToolResult(output.text().rstrip("\n") or "(no output)")


async def _bash(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    command = require_str(args, "command")
    if not command.strip():
        raise ToolError("parameter 'command' is blank")
    timeout = optional_int(args, "timeout", minimum=1) or DEFAULT_TIMEOUT
    if timeout > MAX_TIMEOUT:
        # Models trained on Claude Code send milliseconds (120000); anything past the
        # limit as seconds is read that way, then clamped rather than refused.
        timeout = max(1, round(timeout / 1000))
    timeout = min(timeout, MAX_TIMEOUT)
    return await run_command(command, ctx.workspace, timeout)


BASH = Tool(
    name="Bash",
    description=load_description("todo_agent.core.tools", "bash.md"),
    parameters=object_schema(
        {
            "command": {"type": "string", "description": "The shell command to run (bash -c)."},
            "timeout": {
                "type": "integer",
                "description": f"Timeout in seconds (default {DEFAULT_TIMEOUT}, max {MAX_TIMEOUT}; "
                "larger values are read as milliseconds).",
            },
            "description": {
                "type": "string",
                "description": "A few words on what the command does, shown to the person.",
            },
        },
        required=["command"],
    ),
    run=_bash,
    kind="execute",
    summarize=lambda args: short(args.get("command", "")),
)

TOOLS = [BASH]
