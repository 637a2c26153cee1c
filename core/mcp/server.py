"""One MCP server, owned by one asyncio task from start to end.

The owner task runs the adapter's `Runner` (the SDK's task groups are entered and left
there); calls come from the turn's task. States: `disabled` (by the settings or `/mcp
disable`), `untrusted` (a project server waiting for the person's yes), `starting`,
`connected`, `failed` (why, and its last stderr lines), `stopped` (the session ended).

No orphans: a local server runs in a process group of its own, and that whole group is
stopped when the server ends however it ends: stopped by us (quit, `/new`, a closed
terminal, SIGTERM, the end of `-p`), crashed, or failed to start. So are the processes it
started that left the group (`setsid`, daemons), as Bash's are: the owner looks for them
through /proc every `FAMILY_POLL` while the server runs, and again just before stopping it. `kill_now()` is the last
resort, synchronous, for a process that is leaving without its event loop.
A server that dies during a call gives the model an error and is restarted once, at the
next call; after that, `/mcp reconnect`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..pipes import Family, descendants, process_alive, signal_group, stop_escaped
from .config import ServerSpec
from .names import unique_tool_names
from .remote import CallFailed, CallResult, ConnectFailed, RemoteTool, Target
from .stderr import LAUNCHER, StderrLog

if TYPE_CHECKING:
    from .adapter import Runner

State = Literal["disabled", "untrusted", "starting", "connected", "failed", "stopped"]

STOP_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL for a server's process group."""
EXIT_POLL = 0.25
"""Seconds between looks at whether a local server's process still runs."""
FAMILY_POLL = 1.0
"""Seconds between looks through /proc for what a local server started (a child it
`setsid`s is no longer found below it once the server has died)."""
CALL_SLACK = 5.0
"""Seconds past `tool_timeout_sec` after which a call is abandoned even if the SDK has not
given up (its own timeout sends the server a cancel first)."""
SDK_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
"""The MCP SDK's allow-list of variables a local server inherits (`mcp.client.stdio`); the
adapter's transport passes the server exactly this environment, plus its own `env`."""


class McpServer:
    """One configured server and its state; `start()`, `call()`, `stop()`."""

    def __init__(
        self,
        spec: ServerSpec,
        *,
        part: str,
        workspace: Path,
        hidden_env: frozenset[str] = frozenset(),
        log_path: Path | None = None,
        on_change: Callable[[McpServer], None] = lambda server: None,
    ) -> None:
        self.spec = spec
        self.part = part
        """The server's part of its tools' names (`names.unique_parts`)."""
        self.workspace = workspace
        self.hidden_env = hidden_env
        self.log_path = log_path
        self.on_change = on_change
        self.state: State = "disabled" if not spec.enabled else "starting"
        self.reason = ""
        """Why it failed (or is disabled, or waits)."""
        self.tools: dict[str, RemoteTool] = {}
        """Model-facing name → the tool as the server lists it (`enabled_tools` applied)."""
        self.stderr = StderrLog(log_path)
        self.started_at = 0.0
        self.ready_at = 0.0
        """When the server's process was ready (its pid line), and when its tools were listed."""
        self._runner: Runner | None = None
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._lost = False
        """The connection broke (not stopped by us): the next call restarts it once."""
        self._restarts = 0
        self._stopping = False
        self._timed_out = False
        self._exited = False
        self.family: Family = {}
        """What the server started, as last seen (`core/pipes.py`): stopped with it."""
        if spec.problem:
            self.state, self.reason = "failed", spec.problem

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def settled(self) -> bool:
        """Not starting: connected, failed, disabled, untrusted or stopped."""
        return self.state != "starting"

    @property
    def lost(self) -> bool:
        """Its connection died: the next call starts it again."""
        return self._lost

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Connect in the background (a task of its own); returns at once."""
        if self.running or self.spec.problem:
            return
        self._stopping = False
        self._settled = asyncio.Event()
        self.stderr = StderrLog(self.log_path)
        self._set("starting", "")
        self._task = asyncio.create_task(self._own(), name=f"mcp-server-{self.name}")

    async def wait_settled(self, within: float | None = None) -> bool:
        if self.settled:
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await self._settled.wait()
        return self.settled

    def _set(self, state: State, reason: str) -> None:
        self.state, self.reason = state, reason
        if state != "starting":
            self._settled.set()
        self.on_change(self)

    # --- the owner task ----------------------------------------------------------------

    async def _own(self) -> None:
        from .adapter import Runner  # the SDK: only now that a server starts

        self.started_at = time.monotonic()
        self._lost = False
        self._timed_out = False
        self._exited = False
        self.family = {}
        try:
            target = await self._target()
            runner = Runner(target, on_tools=self._listed)
            self._runner = runner
            if self._stopping:
                runner.stop()
            watchdogs = [asyncio.create_task(self._watch_start(runner)), asyncio.create_task(self._watch_exit(runner))]
            try:
                why = await runner.run()
            finally:
                for watchdog in watchdogs:
                    watchdog.cancel()
            if runner.broken:  # todo-agent cut it: that is why, even if the exit was seen first
                why = runner.broken
            elif self._exited and not self._stopping:
                why = "the server exited"
            if self._timed_out:
                self._set(
                    "failed", f"it did not finish starting within {self.spec.startup_timeout:g} s (startup_timeout_sec)"
                )
            elif self._stopping:
                self._set("stopped", why)
            else:
                self._lost = True
                self._set("failed", why)
        except ConnectFailed as exc:
            self._set("stopped" if self._stopping else "failed", await self._start_failure(str(exc)))
        except Exception as exc:  # a bug or a transport nobody foresaw: the server fails, the app goes on
            self._set("failed", f"{type(exc).__name__}: {exc}")
        finally:
            self._runner = None
            await self._stop_group()
            await self.stderr.close()
            self._settled.set()

    async def _target(self) -> Target:
        spec = self.spec
        if spec.transport == "http":
            return Target("http", url=spec.url, headers=spec.headers, startup_timeout=spec.startup_timeout)
        env = {k: v for k in SDK_ENV if (v := os.environ.get(k)) is not None and k not in self.hidden_env}
        env |= dict(spec.env)  # a variable the server's own env names is passed, hidden or not
        cwd = self.workspace / spec.cwd if spec.cwd else self.workspace
        program = shutil.which(spec.command, path=env.get("PATH")) if os.sep not in spec.command else spec.command
        if program is None:
            raise ConnectFailed(f"command not found: {spec.command}")
        errlog = await self.stderr.open()
        # Through sh, which tells the pid first (see `stderr.py`), then becomes the server.
        return Target(
            "stdio",
            command="/bin/sh",
            args=("-c", LAUNCHER, program, *spec.args),
            env=env,
            cwd=str(cwd),
            errlog=errlog,
            startup_timeout=spec.startup_timeout,
        )

    async def _start_failure(self, why: str) -> str:
        """Why it never came up, with its last stderr line when it wrote one (the SDK only
        saw the connection close: a server that stops at once says why on stderr)."""
        if self.stderr.pid is None:  # never ran (a bad command, an HTTP server not there)
            return why
        await self.stderr.close()  # what it wrote last is in the pipe still
        last = self.stderr.tail(1)
        return (
            f"it did not complete the MCP handshake: {last[0]}"
            if last
            else f"it did not complete the MCP handshake ({why})"
        )

    async def _watch_start(self, runner: Runner) -> None:
        """At `startup_timeout_sec`, a server still not up is stopped: its group first, so the
        transport's own shutdown (which waits for the process) does not wait in vain."""
        await asyncio.sleep(self.spec.startup_timeout)
        if not runner.connected:
            self._timed_out = True
            if self.stderr.pid is not None:
                await self._look_for_family()
                signal_group(self.stderr.pid, signal.SIGTERM)
            runner.stop()

    async def _watch_exit(self, runner: Runner) -> None:
        """Notice the server's own process exiting. Its pipes may not tell: a child it
        started holds them open (then the transport would wait for ever, and the child live on)."""
        await self.stderr.spawned.wait()
        pid = self.stderr.pid
        looked = time.monotonic()
        while pid is not None:
            await asyncio.sleep(EXIT_POLL)
            if not process_alive(pid):
                self._exited = True
                runner.stop()
                return
            if time.monotonic() - looked >= FAMILY_POLL:
                await self._look_for_family()
                looked = time.monotonic()

    async def _look_for_family(self) -> None:
        """What the server started, while it runs (in a thread: it reads all of /proc)."""
        pid = self.stderr.pid
        if pid is not None and process_alive(pid):
            self.family = await asyncio.to_thread(descendants, pid, self.family)

    def _listed(self, tools: list[RemoteTool]) -> None:
        offered = [t for t in tools if self.spec.wants_tool(t.name)]
        by_own_name = {t.name: t for t in offered}
        named = unique_tool_names(self.name, self.part, [t.name for t in offered])
        self.tools = {name: by_own_name[own] for name, own in named.items()}
        if self.state != "connected":
            self.ready_at = time.monotonic()
        self._set("connected", "")

    async def _stop_group(self) -> None:
        """SIGTERM the server's process group, then SIGKILL what is left of it, and what it
        started that left the group."""
        pgid = self.stderr.pid
        if pgid is None:
            return
        await self._look_for_family()
        signal_group(pgid, signal.SIGTERM)
        for _ in range(int(STOP_GRACE / 0.02)):
            if not _group_alive(pgid):
                break
            await asyncio.sleep(0.02)
        signal_group(pgid, signal.SIGKILL)
        stop_escaped(self.family, pgid)

    # --- from other tasks --------------------------------------------------------------

    async def stop(self) -> None:
        """Stop the server and its whole process group; returns once it is gone."""
        self._stopping = True
        task = self._task
        if task is None or task.done():
            return
        if self.stderr.pid is not None:
            await self._look_for_family()  # while it runs: once it is gone, its setsid children are not below it
            signal_group(self.stderr.pid, signal.SIGTERM)  # at once: the transport would wait 2 s first
        if self._runner is not None:
            self._runner.stop()
        done, _ = await asyncio.wait([task], timeout=STOP_GRACE + 1)
        if not done:  # the transport's shutdown hangs: nothing of the server may outlive us
            self.kill_now()
            task.cancel()
            await asyncio.wait([task], timeout=1.0)

    def kill_now(self) -> None:
        """SIGKILL the server's process group: the last resort, from anywhere. Only while
        its owner has not finished: once it has, the group is gone and its number may
        already be another's."""
        if self.stderr.pid is not None and self.running:
            family = descendants(self.stderr.pid, self.family)  # blocking, but the process is leaving
            signal_group(self.stderr.pid, signal.SIGKILL)
            stop_escaped(family, self.stderr.pid)

    async def restart(self) -> None:
        """`/mcp reconnect`: stop, then start again (also resets the one automatic restart)."""
        await self.stop()
        self._restarts = 0
        if self.spec.enabled and not self.spec.problem:
            self.start()

    async def call(self, tool: RemoteTool, arguments: dict[str, Any]) -> CallResult:
        """Call one of this server's tools; a server that died is restarted once first.
        Raises `CallFailed` with a line for the model."""
        if self._lost:
            if self._restarts:
                raise CallFailed(f"the MCP server {self.name} stopped again after a restart: {self.reason}")
            self._restarts += 1
            if self._task is not None:  # the owner is still winding the dead connection down
                await asyncio.wait([self._task], timeout=STOP_GRACE + 1)
            self.start()
            await self.wait_settled(self.spec.startup_timeout + 1)
        runner = self._runner
        if self.state != "connected" or runner is None:
            why = f": {self.reason}" if self.reason else ""
            raise CallFailed(f"the MCP server {self.name} is {self.state}{why}")
        limit = self.spec.tool_timeout
        try:
            async with asyncio.timeout(limit + CALL_SLACK):
                result = await runner.call(tool.name, arguments, limit)
        except TimeoutError as exc:
            raise CallFailed(f"the server did not answer within {limit:g} s (tool_timeout_sec)") from exc
        except CallFailed as exc:
            if exc.lost:
                self._lost = True
            raise
        self._restarts = 0  # it works again: a later crash is restarted once more
        return result


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
