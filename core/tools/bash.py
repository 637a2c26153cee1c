"""The Bash tool: one shell command in its own process group, output capped, killable.

The command runs in a new session, so a timeout or an interrupt can kill everything it
started (pipelines, background jobs, test runners' workers), not just the shell. A
command that finishes normally leaves its background jobs running.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from asyncio.subprocess import DEVNULL, STDOUT, Process
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from ..events import Event, ToolOutput
from ..pipes import PROC, CappedOutput, open_read_pipe, stop_group
from ..sandbox import Sandbox, SandboxUnavailable, failure_note
from .arguments import Arguments, Count, Flag, Hint, Text
from .base import declare, short
from .context import HIDDEN_ENV, ToolContext
from .results import ToolError, ToolResult

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600
_MILLISECONDS_FROM = 1000
"""Timeouts this large are milliseconds; smaller ones are seconds."""
HEAD_BYTES = 15_000
TAIL_BYTES = 15_000
_CHUNK = 65_536
_KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL: long enough for a test runner to clean up."""
_OUTPUT_GRACE = 0.5
"""Seconds to keep reading after the shell has exited, for output still in the pipe."""

# Plain, uncoloured, non-paging output: nobody is at a terminal to press `q`.
_ENV_OVERRIDES = {"TERM": "dumb", "NO_COLOR": "1", "PAGER": "cat", "GIT_PAGER": "cat"}
HIDDEN_ENV_DEFAULT = HIDDEN_ENV


def child_env(hidden: frozenset[str] = HIDDEN_ENV_DEFAULT) -> dict[str, str]:
    """The environment a command runs with: ours, less the API key variables, plus overrides."""
    return {**{k: v for k, v in os.environ.items() if k not in hidden}, **_ENV_OVERRIDES}


@dataclass
class _Shell:
    """The running shell and the read end of its combined stdout/stderr.

    The pipe is ours, not asyncio's: asyncio's `Process.wait()` waits for its pipes to
    close as well, which a background job (`cmd &`) holding them can put off for ever.
    """

    proc: Process
    output: asyncio.StreamReader
    pipe: asyncio.ReadTransport

    def close(self) -> None:
        self.pipe.close()


async def kill_group(proc: Process) -> list[str]:
    return await stop_group(proc, _KILL_GRACE)


def _timeout_note(seconds: float, escaped: list[str]) -> str:
    note = f"Command timed out after {seconds:g} s; "
    if escaped:
        return note + (
            f"its process group was killed, and so were {len(escaped)} process(es) it started that had left "
            f"its process group (setsid, daemons): {', '.join(escaped)}."
        )
    if not PROC.is_dir():
        return note + (
            "its process group was killed; processes that left the group (setsid, daemons) cannot be seen "
            "here and may still run."
        )
    return note + "it and everything it started were killed."


async def _spawn(argv: list[str], cwd: Path, env: dict[str, str]) -> _Shell:
    output, pipe, write_fd = await open_read_pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=DEVNULL,
            stdout=write_fd,
            stderr=STDOUT,
            start_new_session=True,
        )
    except BaseException as exc:
        pipe.close()
        if isinstance(exc, OSError):
            raise ToolError(f"Cannot start {argv[0]} in {cwd}: {exc.strerror or exc}") from exc
        raise
    finally:
        # The command holds the write end now; EOF comes when it and its children let go.
        os.close(write_fd)
    return _Shell(proc, output, pipe)


async def start_shell(argv: list[str], cwd: Path, env: dict[str, str]) -> _Shell:
    """Spawn the shell. Starting takes several event-loop steps, and the shell may already
    be running when an interrupt arrives; finish starting it then, so its group can be
    killed (asyncio's own clean-up would kill the shell alone and orphan its children)."""
    spawning = asyncio.ensure_future(_spawn(argv, cwd, env))
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        with contextlib.suppress(ToolError):
            shell = await spawning
            shell.close()
            await kill_group(shell.proc)
        raise


async def _read_into(stream: asyncio.StreamReader, output: CappedOutput) -> None:
    # Read as it arrives: the pipe never fills and memory stays bounded.
    while chunk := await stream.read(_CHUNK):
        output.feed(chunk)


def exit_note(code: int) -> str:
    if code >= 0:
        return f"Exit code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"Exit code {code} (killed by {name})"


def with_note(output: str, note: str) -> str:
    output = output.rstrip("\n")
    return f"{output}\n{note}" if output else note


class LiveOutput(CappedOutput):
    """Collects as `CappedOutput` does, and shows what arrives while the command runs
    (`ToolOutput` through `show`): at most every `SHOW_EVERY` seconds, the first
    `SHOW_LIMIT` bytes (the rest is in the result), decoded as UTF-8 across chunks."""

    SHOW_EVERY = 0.1
    SHOW_LIMIT = 256 * 1024

    def __init__(self, call_id: str, show: Callable[[Event], None]) -> None:
        super().__init__(HEAD_BYTES, TAIL_BYTES)
        self._call_id, self._show = call_id, show
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []
        self._shown = 0
        self._flush: asyncio.TimerHandle | None = None

    def feed(self, chunk: bytes) -> None:
        super().feed(chunk)
        room = self.SHOW_LIMIT - self._shown
        if room <= 0:
            return
        self._shown += min(len(chunk), room)
        if text := self._decoder.decode(chunk[:room]):
            self._pending.append(text)
        if self._flush is None and self._pending:
            self._flush = asyncio.get_running_loop().call_later(self.SHOW_EVERY, self.flush)

    def flush(self) -> None:
        self._flush = None
        if self._pending:
            text, self._pending = "".join(self._pending), []
            self._show(ToolOutput(self._call_id, text))

    def close(self) -> None:
        """The command ended: no flush is left waiting (its result shows it all)."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None


def capped_output() -> CappedOutput:
    """What `run_command` collects a command's output in: its head and tail, within bounds."""
    return CappedOutput(HEAD_BYTES, TAIL_BYTES)


@dataclass(frozen=True)
class Ran:
    """How a command ended: its exit status (None: timed out and killed) and its output,
    with the note a person reads (`Exit code 1`, the timeout's)."""

    code: int | None
    output: str

    @property
    def result(self) -> ToolResult:
        if self.code == 0:
            return ToolResult(self.output.rstrip("\n") or "(no output)")
        return ToolResult(self.output, is_error=True)


async def run_command(
    command: str,
    cwd: Path,
    time_limit: float,
    env: dict[str, str] | None = None,
    output: CappedOutput | None = None,
    *,
    sandbox: Sandbox | None = None,
) -> ToolResult:
    """Run `command` with bash in its own process group and collect capped output.

    Returns when the shell exits. Background jobs it started keep running, and what they
    write after the short grace is not collected. `env` defaults to `child_env()`.
    `output`: collect into this one, so a caller whose run is interrupted (esc, which
    kills the command) still has what it printed until then. `sandbox`: run it inside
    (`core/sandbox.py`) when that is on.
    """
    return (await run_shell(command, cwd, time_limit, env, output, sandbox=sandbox)).result


async def run_shell(
    command: str,
    cwd: Path,
    time_limit: float,
    env: dict[str, str] | None = None,
    output: CappedOutput | None = None,
    *,
    started: Callable[[int], Awaitable[None]] | None = None,
    sandbox: Sandbox | None = None,
) -> Ran:
    """`run_command`, saying how it ended. `started(pgid)` is awaited once the shell runs,
    before its exit is waited for (a task's check records its process group there)."""
    argv = ["/bin/bash", "-c", command]
    box = sandbox if sandbox is not None and sandbox.active != "off" else None
    try:
        if box is not None:
            await box.prepare()
            argv = box.wrap(argv, cwd)
    except SandboxUnavailable as exc:
        raise ToolError(str(exc)) from exc
    shell = await start_shell(argv, cwd, child_env() if env is None else env)
    proc = shell.proc
    output = capped_output() if output is None else output
    reading = asyncio.ensure_future(_read_into(shell.output, output))
    try:
        try:
            if started is not None:
                await started(proc.pid)
            async with asyncio.timeout(time_limit):
                code = await proc.wait()
        except TimeoutError:
            escaped = await kill_group(proc)
            await asyncio.wait([reading], timeout=_OUTPUT_GRACE)
            return Ran(None, with_note(output.text(), _timeout_note(time_limit, escaped)))
        except BaseException:
            # Interrupted (CancelledError) or anything unexpected: never leave the group running.
            await kill_group(proc)
            raise
        # Output still in the pipe arrives just after the exit; a background job holding
        # the pipe open would make waiting for EOF wait for the job.
        await asyncio.wait([reading], timeout=_OUTPUT_GRACE)
    finally:
        reading.cancel()
        shell.close()
    if code != 0:
        text = with_note(output.text(), exit_note(code))
        note = failure_note(text, box) if box is not None else ""
        return Ran(code, with_note(text, note) if note else text)
    return Ran(0, output.text())


def _sandbox_flag(value: Any) -> bool:
    """True unless the model asked for false (`false`, `"false"`): left out is sandboxed."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value is not False


class BashArgs(Arguments):
    command: Text = Field(description="The shell command to run (bash -c).")
    timeout: Count = Field(
        None,
        ge=1,
        description=f"Timeout in seconds (default {DEFAULT_TIMEOUT}, max {MAX_TIMEOUT}); "
        f"values of {_MILLISECONDS_FROM} or more are read as milliseconds.",
    )
    description: Hint = Field(None, description="A few words on what the command does, shown to the person.")
    sandbox: Annotated[bool, BeforeValidator(_sandbox_flag)] = Field(
        True, description="false: run outside the sandbox (when it is on); always asks, so say why in description."
    )
    run_in_background: Flag = Field(
        False, description="true: start it and return at once with a shell id (a server, a watcher); see BashOutput."
    )


async def _bash(args: BashArgs, ctx: ToolContext) -> ToolResult:
    if not args.command.strip():
        raise ToolError("parameter 'command' is blank")
    timeout = args.timeout or DEFAULT_TIMEOUT
    if timeout >= _MILLISECONDS_FROM:
        # Models trained on Claude Code send milliseconds (120000); nobody means 1000 s+
        # when the limit is 600, so such values are read that way.
        timeout = round(timeout / 1000)
    timeout = min(max(timeout, 1), MAX_TIMEOUT)  # clamped rather than refused
    # Outside only as asked, and only after the gate asked the person (`PermissionPolicy._unsandboxed`).
    sandbox = ctx.sandbox if args.sandbox else None
    if args.run_in_background:
        if ctx.shells is None:
            raise ToolError("background commands are not available here")
        return ToolResult(await ctx.shells.start(args.command, ctx, sandbox))
    if ctx.live is None:
        return await run_command(args.command, ctx.workspace, timeout, child_env(ctx.hidden_env), sandbox=sandbox)
    output = LiveOutput(ctx.call_id, ctx.live)
    try:
        return await run_command(
            args.command, ctx.workspace, timeout, child_env(ctx.hidden_env), output, sandbox=sandbox
        )
    finally:
        output.close()


BASH = declare(
    "Bash", BashArgs, _bash, kind="execute", summarize=lambda args: short(args.get("command", "")), live=True
)

TOOLS = [BASH]
