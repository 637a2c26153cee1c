"""Commands in the background: `Bash(run_in_background=true)`, `BashOutput`, `KillShell`.

A background command runs as any Bash command does (the same gate before it, the sandbox
when that is on, its own process group, the same environment), but the call returns at
once with a shell id. What it prints is read as it comes into a buffer of at most
`OUTPUT_CAP` bytes (the oldest dropped, and said so); `BashOutput` returns what arrived
since the agent last looked (cut to Bash's own head and tail) and whether it still runs;
`KillShell` stops it and everything it started. An agent sees and stops its own shells
only (the main agent also its sub-agents'); neither tool asks (`kind="read"`: it reads or
ends what the agent itself started, after the gate let the command run).

At most `MAX_SHELLS` run at once per session, a sub-agent's counted; a sub-agent's shells
end with it. All are stopped when todo-agent quits, at the end of `-p`, on `/new` and on
`/resume`. The session records each start and end (`shell` lines), so a session resumed
later says which were still running when it last ended: they were stopped then.

Each shell remembers the task in progress when it started (`task_id`, shown by `/shells`);
the files it changes later are not attributed to a task (the change scan runs around a
call, and a background command outlives its call).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from ..pipes import CappedOutput, signal_group
from ..sandbox import SandboxUnavailable
from ..session.directory import SHELL_RECORD
from .arguments import Arguments, Hint, Text
from .base import declare
from .bash import HEAD_BYTES, TAIL_BYTES, child_env, exit_note, kill_group, start_shell
from .results import ToolError

if TYPE_CHECKING:
    from asyncio.subprocess import Process

    from ..sandbox import Sandbox
    from ..tasks.model import AgentRef
    from .context import ToolContext

MAX_SHELLS = 8
OUTPUT_CAP = 10 * 1024 * 1024
"""Bytes of a shell's output kept; past it the oldest go."""
_CHUNK = 65_536


def _now() -> float:
    return time.time()  # read at each call: a test may set the module's `time`


@dataclass
class Shell:
    """One background command and what it printed."""

    id: str
    command: str
    owner: AgentRef | None
    task_id: str | None
    """The task in progress when it started (the owner's)."""
    started: float = field(default_factory=_now)
    proc: Process | None = None
    code: int | None = None
    """Its exit status once it ended (negative: killed by that signal)."""
    killed: bool = False
    with_session: bool = False
    """Stopped because the session ended (quit, `/new`, the end of `-p`), not by the agent."""
    ended: float | None = None
    recorded: bool = False
    """Its end is in the session already (`Shells.kill_now` writes it before the session closes)."""
    total: int = 0
    """Bytes it printed in all."""
    seen: int = 0
    """Of `total`, how far the agent has looked (`BashOutput`)."""
    _chunks: deque[bytes] = field(default_factory=deque, repr=False)
    _kept: int = 0
    _tasks: list[asyncio.Task[Any]] = field(default_factory=list, repr=False)

    @property
    def running(self) -> bool:
        return self.ended is None

    @property
    def dropped(self) -> int:
        """Bytes no longer kept (the oldest, past `OUTPUT_CAP`)."""
        return self.total - self._kept

    def feed(self, chunk: bytes, cap: int) -> None:
        self._chunks.append(chunk)
        self._kept += len(chunk)
        self.total += len(chunk)
        while self._kept > cap and self._chunks:
            oldest = self._chunks.popleft()
            over = self._kept - cap
            if len(oldest) > over:  # keep the part of it that fits
                self._chunks.appendleft(oldest[over:])
                self._kept -= over
            else:
                self._kept -= len(oldest)

    def since(self, offset: int) -> bytes:
        """What it printed from byte `offset` on, as far as it is still kept."""
        data = b"".join(self._chunks)
        return data[max(0, offset - self.dropped) :]

    def state(self, now: float | None = None) -> str:
        """`running · 12 s`, `exited with code 0 after 3.2 s`, `killed after 40 s`."""
        end = self.ended if self.ended is not None else (time.time() if now is None else now)
        took = _duration(end - self.started)
        if self.running:
            return f"running · {took}"
        if self.killed:
            return f"killed after {took}"
        return f"ended after {took}: {exit_note(self.code if self.code is not None else -1)}"

    def last_line(self) -> str:
        tail = self.since(max(0, self.total - 4096)).decode("utf-8", errors="replace")
        lines = [line for line in tail.splitlines() if line.strip()]
        return lines[-1] if lines else ""


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


Record = Callable[[dict[str, Any]], None]


class Shells:
    """The session's background commands (see the module docstring)."""

    def __init__(self, record: Record | None = None, limit: int = MAX_SHELLS, cap: int = OUTPUT_CAP) -> None:
        self.record = record or (lambda line: None)
        self.limit = limit
        self.cap = cap
        self.shells: dict[str, Shell] = {}
        self.next_number = 1
        self.listeners: list[Callable[[], None]] = []
        """Told when a shell starts or ends (on the loop): the status line's count."""

    def running(self) -> list[Shell]:
        return [s for s in self.shells.values() if s.running]

    async def start(self, command: str, ctx: ToolContext, sandbox: Sandbox | None) -> str:
        """Start `command` in the background for the calling agent; the call's result."""
        if len(self.running()) >= self.limit:
            names = ", ".join(s.id for s in self.running())
            raise ToolError(f"{self.limit} background commands already run ({names}): stop one with KillShell first")
        argv = ["/bin/bash", "-c", command]
        box = sandbox if sandbox is not None and sandbox.active != "off" else None
        try:
            if box is not None:
                await box.prepare()
                argv = box.wrap(argv, ctx.workspace)
        except SandboxUnavailable as exc:
            raise ToolError(str(exc)) from exc
        task = ctx.tasks.current(ctx.agent) if ctx.tasks is not None else None
        shell = Shell(f"bash_{self.next_number}", command, ctx.agent, task.id if task is not None else None)
        self.next_number += 1
        started = await start_shell(argv, ctx.workspace, child_env(ctx.hidden_env))
        shell.proc = started.proc
        self.shells[shell.id] = shell
        with contextlib.suppress(Exception):
            self.record({"type": SHELL_RECORD, "event": "started", "id": shell.id, "command": command})
        reading = asyncio.ensure_future(self._read(shell, started.output))
        shell._tasks = [reading, asyncio.ensure_future(self._wait(shell, reading, started.close))]
        self._tell()
        sandboxed = " (sandboxed)" if box is not None else ""
        return (
            f"Started in the background{sandboxed} as {shell.id}. "
            f'BashOutput(shell_id="{shell.id}") shows what it prints; KillShell(shell_id="{shell.id}") stops it.'
        )

    async def _read(self, shell: Shell, stream: asyncio.StreamReader) -> None:
        with contextlib.suppress(Exception):  # a broken pipe ends the reading, never the app
            while chunk := await stream.read(_CHUNK):
                shell.feed(chunk, self.cap)

    async def _wait(self, shell: Shell, reading: asyncio.Task[None], close: Callable[[], None]) -> None:
        assert shell.proc is not None
        try:
            shell.code = await shell.proc.wait()
            # What is still in the pipe arrives just after the exit (a job it left behind may hold it).
            await asyncio.wait([reading], timeout=0.5)
        finally:
            reading.cancel()
            close()
            shell.ended = time.time()
            self._record_end(shell)
            self._tell()

    def _tell(self) -> None:
        for listener in self.listeners:
            with contextlib.suppress(Exception):  # a listener's failure is not the shell's
                listener()

    def _record_end(self, shell: Shell) -> None:
        if shell.recorded:
            return
        shell.recorded = True
        line = {"type": SHELL_RECORD, "event": "ended", "id": shell.id, "code": shell.code}
        with contextlib.suppress(Exception):  # a session that cannot be written to loses a line, not the app
            self.record(line | ({"stopped": "ended with the session"} if shell.with_session else {}))

    def find(self, shell_id: str, by: AgentRef | None) -> Shell:
        """The agent's own shell `shell_id` (the main agent may also reach its sub-agents')."""
        shell = self.shells.get(str(shell_id).strip())
        if shell is None or (by is not None and shell.owner != by):
            mine = [s.id for s in self.shells.values() if by is None or s.owner == by]
            raise ToolError(f"no background shell {str(shell_id)[:40]!r} (yours: {', '.join(mine) or 'none'})")
        return shell

    async def kill(self, shell: Shell) -> str:
        if not shell.running or shell.proc is None:
            return f"{shell.id} had already ended: {shell.state()}"
        shell.killed = True
        escaped = await kill_group(shell.proc)
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            async with asyncio.timeout(2):
                await asyncio.gather(*shell._tasks, return_exceptions=True)
        more = f", and {len(escaped)} process(es) that had left its group" if escaped else ""
        return f"Killed {shell.id} and everything it started{more}: {shell.command[:80]}"

    async def stop_all(self, owner: AgentRef | None = None, *, everyone: bool = True) -> None:
        """Stop every running shell as the session ends (or only `owner`'s, a sub-agent's
        as it ends, with `everyone=False`)."""
        chosen = [s for s in self.running() if everyone or s.owner == owner]
        for shell in chosen:
            shell.with_session = everyone
        await asyncio.gather(*(self.kill(s) for s in chosen), return_exceptions=True)

    def continue_from(self, known: Mapping[str, Any]) -> None:
        """Number new shells after those a resumed session already had (`bash_3` → `bash_4`)."""
        numbers = [int(name[5:]) for name in known if name.startswith("bash_") and name[5:].isdigit()]
        self.next_number = max([self.next_number - 1, *numbers]) + 1

    def kill_now(self) -> None:
        """SIGKILL every running shell's group, its end written at once (the session is
        about to close, or the process is leaving without its loop)."""
        for shell in self.running():
            if shell.proc is not None:
                shell.killed = shell.with_session = True
                signal_group(shell.proc.pid, signal.SIGKILL)
                self._record_end(shell)


# --- the tools -----------------------------------------------------------------------


class BashOutputArgs(Arguments):
    aliases: ClassVar[Mapping[str, str]] = {"bash_id": "shell_id", "id": "shell_id"}
    shell_id: Text = Field(description="The id Bash(run_in_background) gave, e.g. bash_1.")
    filter: Hint = Field(None, description="A regular expression: only matching lines (the rest are dropped).")


class KillShellArgs(Arguments):
    aliases: ClassVar[Mapping[str, str]] = {"bash_id": "shell_id", "id": "shell_id"}
    shell_id: Text = Field(description="The id of the shell to stop.")


def _shells(ctx: ToolContext) -> Shells:
    if ctx.shells is None:
        raise ToolError("background commands are not available here")
    return ctx.shells


async def _output(args: BashOutputArgs, ctx: ToolContext) -> str:
    shells = _shells(ctx)
    shell = shells.find(args.shell_id, ctx.agent)
    pattern = None
    if args.filter:
        try:
            pattern = re.compile(args.filter)
        except re.error as exc:
            raise ToolError(f"parameter 'filter' is not a regular expression: {exc}") from exc
    start, end = shell.seen, shell.total
    data = shell.since(start)[: end - start]
    lines = [f"{shell.id}: {shell.state()}"]
    if start < shell.dropped:
        kept = f"{shells.cap // 1_048_576} MB" if shells.cap >= 1_048_576 else f"{shells.cap:,} bytes"
        lines.append(f"({shell.dropped - start:,} bytes not kept: only the last {kept} are)")
    text = data.decode("utf-8", errors="replace")
    if pattern is not None and text:
        text = await _matching_lines(args.filter or "", text)  # a refusal leaves it unread
    shell.seen = end
    capped = CappedOutput(HEAD_BYTES, TAIL_BYTES)
    capped.feed(text.encode("utf-8"))
    lines.append(capped.text().rstrip("\n") or "(no new output)")
    return "\n".join(lines)


FILTER_TIMEOUT = 10.0
_FILTER = (
    "import re, sys\n"
    "pattern = re.compile(sys.argv[1])\n"
    "text = sys.stdin.buffer.read().decode('utf-8', 'replace')\n"
    "out = [line for line in text.splitlines() if pattern.search(line)]\n"
    "sys.stdout.buffer.write('\\n'.join(out).encode('utf-8', 'replace'))\n"
)
"""The filter, run in a process of its own: a catastrophic pattern (`(a+)+b` on a line of
a's) holds `re` for ever and cannot be interrupted in this one (the Grep tool does the same)."""


async def _matching_lines(pattern: str, text: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _FILTER, pattern,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with asyncio.timeout(FILTER_TIMEOUT):
            out, _ = await proc.communicate(text.encode("utf-8", "replace"))
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        if isinstance(exc, TimeoutError):
            raise ToolError(
                f"the filter took over {FILTER_TIMEOUT:g} s on this output and was stopped: give a simpler "
                "pattern (the output is still unread)"
            ) from None
        raise
    return out.decode("utf-8", "replace")


async def _kill(args: KillShellArgs, ctx: ToolContext) -> str:
    shells = _shells(ctx)
    return await shells.kill(shells.find(args.shell_id, ctx.agent))


BASH_OUTPUT = declare(
    "BashOutput",
    BashOutputArgs,
    _output,
    kind="read",
    paths={},
    summarize=lambda args: str(args.get("shell_id", ""))[:40],
)
KILL_SHELL = declare(
    "KillShell", KillShellArgs, _kill, kind="read", paths={}, summarize=lambda args: str(args.get("shell_id", ""))[:40]
)

TOOLS = [BASH_OUTPUT, KILL_SHELL]
