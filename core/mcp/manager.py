"""All configured MCP servers of one runtime: start them in the background, say how they
are doing, find and call their tools, stop them all.

`start()` returns at once: the SDK is imported in a thread (~0.7 s of CPU the event loop
must not spend) and each server connects in a task of its own, so the prompt works
meanwhile and a server's tools join the next request once it is up. Nothing here runs
when no server is configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Callable
from pathlib import Path

from ..tools.images import Image
from .config import ServerSpec
from .names import unique_parts
from .remote import CallFailed, CallResult, RemoteTool
from .server import McpServer
from .trust import is_trusted, trust

Listener = Callable[[McpServer], None]


class McpManager:
    def __init__(
        self,
        specs: list[ServerSpec],
        *,
        workspace: Path,
        hidden_env: frozenset[str] = frozenset(),
        log_dir: Path | None = None,
        allow_project: bool = False,
        images: bool = False,
    ) -> None:
        """`allow_project`: start project servers without asking (`--allow-project-mcp`);
        `images`: the model accepts images (an MCP tool's images follow its result)."""
        self.workspace = workspace
        self.allow_project = allow_project
        self.images = images
        self.pending_images: list[Image] = []
        """Images that MCP calls returned, for the next request (`images.py`)."""
        self.listeners: list[Listener] = []
        self.loaded: set[str] = set()
        """MCP tools the model loaded with MCPSearch (when not all are sent)."""
        # The person's own servers get their parts first: when a project's server cleans to
        # the same part (`my.srv` beside their `my_srv`), the project's is the one told apart
        # by a hash, so a rule naming theirs (`mcp__my_srv`) never covers it.
        # A project server's trust covers the workspace code it runs: hashed here (the
        # runtime is built off the event loop), and again before each start (`_code_changed`).
        specs = [spec.with_code(workspace) if spec.from_project else spec for spec in specs]
        parts = unique_parts([s.name for s in sorted(specs, key=lambda spec: spec.from_project)])
        self.servers = [
            McpServer(
                spec,
                part=parts[spec.name],
                workspace=workspace,
                hidden_env=hidden_env,
                log_path=self._log_path(log_dir, spec.name),
                on_change=self._changed,
            )
            for spec in specs
        ]
        for server in self.servers:
            spec = server.spec
            waits = spec.from_project and spec.enabled and not spec.problem and not allow_project
            if waits and not is_trusted(workspace, spec):
                server.state, server.reason = "untrusted", "a project server, not accepted yet"
        self._starting: asyncio.Task[None] | None = None

    @staticmethod
    def _log_path(log_dir: Path | None, name: str) -> Path | None:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        return log_dir / f"{safe}.log" if log_dir is not None else None

    def set_log_dir(self, log_dir: Path | None) -> None:
        """The session changed (`/new`, resume): later runs log beside the new one."""
        for server in self.servers:
            server.log_path = self._log_path(log_dir, server.name)

    @property
    def configured(self) -> bool:
        return bool(self.servers)

    def _changed(self, server: McpServer) -> None:
        for listener in list(self.listeners):
            listener(server)

    # --- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        """Connect every enabled, accepted server in the background; returns at once."""
        if not any(s.state == "starting" and not s.running for s in self.servers):
            return
        self._starting = asyncio.create_task(self._start_all(self._starting), name="mcp-start")

    async def _start_all(self, previous: asyncio.Task[None] | None) -> None:
        if previous is not None and not previous.done():
            await asyncio.wait([previous])
        await self.ensure_adapter()
        for server in self.servers:
            if server.state == "starting" and not server.running:
                if await self._code_changed(server):
                    self._wait_again(server)
                else:
                    server.start()

    async def _code_changed(self, server: McpServer) -> bool:
        """Whether an accepted project server's workspace code changed since it was looked
        at (the model may have rewritten its script): then it waits for the person's yes
        again, the question showing the code as it is now."""
        spec = server.spec
        if spec.code is None or not spec.code.paths or self.allow_project:
            return False
        now = await asyncio.to_thread(spec.with_code, self.workspace)
        if now.code == spec.code:
            return False
        server.spec = now
        return True

    def _wait_again(self, server: McpServer) -> None:
        server.state, server.reason = "untrusted", "its code changed since you accepted it"
        self._changed(server)

    async def wait_settled(self, within: float | None = None) -> None:
        """Until every server is up or has failed (headless waits for this, bounded)."""
        if self._starting is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(within):
                    await asyncio.shield(self._starting)
        await asyncio.gather(*(s.wait_settled(within) for s in self.servers))

    def startup_limit(self) -> float:
        """The longest any server may take to start (headless waits this long at most)."""
        return max((s.spec.startup_timeout for s in self.servers if s.state == "starting"), default=0.0) + 1.0

    async def stop(self) -> None:
        """Stop every server (their whole process groups), at once; returns when all are gone."""
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._starting
        await asyncio.gather(*(s.stop() for s in self.servers))

    def kill_now(self) -> None:
        """SIGKILL every server's process group (the process is leaving without its loop)."""
        for server in self.servers:
            server.kill_now()

    async def restart_all(self) -> None:
        """A new session: every running server is stopped and started again."""
        await self.stop()
        self.loaded.clear()
        for server in self.servers:
            if server.state in ("connected", "failed", "stopped") and server.spec.enabled and not server.spec.problem:
                server.state = "starting"
        self.start()

    # --- what the person does in /mcp --------------------------------------------------

    def find(self, name: str) -> McpServer | None:
        return next((s for s in self.servers if s.name == name), None)

    async def reconnect(self, server: McpServer) -> None:
        if server.state in ("untrusted", "disabled"):
            return
        await self.ensure_adapter()
        if await self._code_changed(server):
            await server.stop()
            self._wait_again(server)
            return
        await server.restart()

    async def set_enabled(self, server: McpServer, enabled: bool) -> None:
        if not enabled:
            await server.stop()
            server.state, server.reason = "disabled", "disabled with /mcp"
            self._changed(server)
        elif server.state == "disabled" and not server.spec.problem:
            await self.ensure_adapter()
            server.start()

    async def ensure_adapter(self) -> None:
        await asyncio.to_thread(importlib.import_module, f"{__package__}.adapter")

    def untrusted(self) -> list[McpServer]:
        return [s for s in self.servers if s.state == "untrusted"]

    def accept(self, servers: list[McpServer], *, remember: bool = True) -> str | None:
        """The person accepted these project servers: start them. Returns a warning when
        the acceptance could not be saved (they still start this time)."""
        warning = None
        if remember:
            try:
                trust(self.workspace, [s.spec for s in servers])
            except OSError as exc:
                warning = str(exc)
        for server in servers:
            server.state = "starting"
        self.start()
        return warning

    def decline(self, servers: list[McpServer]) -> None:
        for server in servers:
            server.reason = "not accepted this session; you are asked again next time"
            self._changed(server)

    # --- tools -------------------------------------------------------------------------

    def counts(self) -> tuple[int, int]:
        """(connected, enabled): the status line's `mcp 2/3`."""
        active = [s for s in self.servers if s.state != "disabled"]
        return sum(s.state == "connected" for s in active), len(active)

    def tools(self) -> list[tuple[str, McpServer, RemoteTool]]:
        """Every tool of every server that has listed its tools (a server that died keeps
        them: its next call restarts it)."""
        return [
            (name, server, tool)
            for server in self.servers
            if server.state in ("connected", "failed") and server.tools
            for name, tool in server.tools.items()
        ]

    def lookup(self, name: str) -> tuple[McpServer, RemoteTool] | None:
        for server in self.servers:
            if (tool := server.tools.get(name)) is not None:
                return server, tool
        return None

    async def call(self, name: str, arguments: dict[str, object]) -> CallResult:
        found = self.lookup(name)
        if found is None:
            raise CallFailed(f"no MCP tool {name} (its server may have been disabled)")
        server, tool = found
        if server.state in ("disabled", "untrusted"):
            raise CallFailed(f"the MCP server {server.name} is {server.state}")
        if server.lost and await self._code_changed(server):  # the call would start it again
            await server.stop()
            self._wait_again(server)
            raise CallFailed(f"the MCP server {server.name} is untrusted: {server.reason}")
        return await server.call(tool, dict(arguments))
