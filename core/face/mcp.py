"""`runtime.mcp`: the MCP servers as the front ends drive them: started in the background
(the TUI) or waited for (headless), restarted with a session, stopped; listed and counted;
the project's servers accepted or declined by the person."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..mcp.server import McpServer

if TYPE_CHECKING:
    from ..runtime import Runtime


class Mcp:
    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    @property
    def configured(self) -> bool:
        """Whether any server is configured (enabled or not)."""
        return self._rt.mcp_manager.configured

    @property
    def servers(self) -> list[McpServer]:
        return self._rt.mcp_manager.servers

    def find(self, name: str) -> McpServer | None:
        return self._rt.mcp_manager.find(name)

    def listen(self, listener: Callable[[McpServer], None]) -> None:
        """Call `listener` with a server whenever its state changes (in its owner task)."""
        self._rt.mcp_manager.listeners.append(listener)

    def counts(self) -> tuple[int, int]:
        """Servers connected, and servers enabled."""
        return self._rt.mcp_manager.counts()

    def start(self) -> None:
        """Connect the configured servers in the background (on the running loop); returns at
        once. Project servers the person has not accepted wait."""
        self._rt.mcp_manager.start()

    async def connect(self) -> list[McpServer]:
        """Headless: start the servers and wait for them, at most their `startup_timeout_sec`;
        returns those that are not up (failed, or project servers not accepted)."""
        manager = self._rt.mcp_manager
        manager.start()
        await manager.wait_settled(manager.startup_limit())
        return [s for s in manager.servers if s.state not in ("connected", "disabled")]

    async def stop(self) -> None:
        """Stop every server and its process group."""
        await self._rt.mcp_manager.stop()

    async def restart(self) -> None:
        """A new or resumed session: the servers start again, logging beside it."""
        manager = self._rt.mcp_manager
        manager.set_log_dir(self._rt.mcp_log_dir())
        await manager.restart_all()

    def report(self) -> list[dict[str, Any]]:
        """Each server for JSON output: name, where it came from, state, why, tool count."""
        return [
            {"name": s.name, "source": s.spec.source, "state": s.state, "reason": s.reason, "tools": len(s.tools)}
            for s in self._rt.mcp_manager.servers
        ]

    def untrusted(self) -> list[McpServer]:
        """Project servers waiting for the person's yes."""
        return self._rt.mcp_manager.untrusted()

    def accept(self, servers: list[McpServer], *, remember: bool = True) -> str | None:
        """The person accepted these project servers: they start. A warning when the
        acceptance could not be saved."""
        return self._rt.mcp_manager.accept(servers, remember=remember)

    def decline(self, servers: list[McpServer]) -> None:
        self._rt.mcp_manager.decline(servers)

    async def reconnect(self, server: McpServer) -> None:
        """`/mcp reconnect NAME` (a project server whose code changed waits to be accepted again)."""
        await self._rt.mcp_manager.reconnect(server)

    async def set_enabled(self, server: McpServer, enabled: bool) -> None:
        """`/mcp enable|disable NAME`."""
        await self._rt.mcp_manager.set_enabled(server, enabled)
