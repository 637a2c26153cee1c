"""What an MCP server can cost, bounded: an endless Streamable HTTP body, an endless stdio
line, a flood of `tools/list_changed`, and a child that left the server's group.

Each test reproduces the attack with a real server (the SDK-built test server over stdio,
or a small HTTP server on loopback written here) and ends in a refusal or a bound."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import Managers, alive, gone_soon, stdio_spec

from todo_agent.core.mcp.config import ServerSpec
from todo_agent.core.mcp.manager import McpManager
from todo_agent.core.mcp.remote import MAX_MESSAGE_BYTES, CallFailed
from todo_agent.core.mcp.server import FAMILY_POLL, McpServer

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="watches server processes in /proc")


async def connected(manager: McpManager) -> McpManager:
    manager.start()
    await manager.wait_settled(30)
    for server in manager.servers:
        assert server.state == "connected", server.reason
    return manager


# --- an HTTP server whose answer to a call never ends ---------------------------------------


class EndlessHttp:
    """Just enough of MCP's Streamable HTTP for a handshake and a listing; a `tools/call` is
    answered with a body that never ends: one JSON result that never closes (`json`), or
    a stream of events, each a small notification (`sse`). Counts what it managed to send."""

    def __init__(self, shape: str) -> None:
        self.shape = shape
        self.sent = 0
        self.finished = asyncio.Event()
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/mcp"

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode().split("\r\n")
                method = lines[0].split()[0]
                headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if method != "POST":
                    writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                message = json.loads(body)
                if "id" not in message:  # a notification
                    writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                if message["method"] == "tools/call":
                    await self._endless(writer, message["id"])
                    return
                writer.write(self._answer(message))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @staticmethod
    def _answer(message: dict[str, Any]) -> bytes:
        if message["method"] == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "endless", "version": "1"},
            }
        else:
            result = {"tools": [{"name": "endless", "inputSchema": {"type": "object"}}]}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        return head.encode() + body

    async def _endless(self, writer: asyncio.StreamWriter, call_id: int) -> None:
        kind = "application/json" if self.shape == "json" else "text/event-stream"
        writer.write(f"HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ntransfer-encoding: chunked\r\n\r\n".encode())
        if self.shape == "json":
            start = json.dumps({"jsonrpc": "2.0", "id": call_id, "result": {"content": [{"type": "text"}]}})
            self._chunk(writer, start[: -len("}]}}")].encode() + b', "text": "')
            piece = b"x" * 65_536
        else:
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "x" * 60_000},
            }
            piece = b"data: " + json.dumps(note).encode() + b"\n\n"
        try:
            while True:
                self._chunk(writer, piece)
                await writer.drain()
        except ConnectionError:
            self.finished.set()

    def _chunk(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.sent += len(data)


@pytest.mark.parametrize("shape", ["json", "sse"])
async def test_an_endless_http_answer_fails_the_call_at_the_cap(managers: Managers, shape: str) -> None:
    endless = EndlessHttp(shape)
    async with endless as url:
        spec = ServerSpec("endless", "user", "test", "http", url=url, tool_timeout=120)
        manager = await connected(managers(spec))
        started = time.monotonic()
        with pytest.raises(CallFailed) as failed:
            await manager.call("mcp__endless__endless", {})
        assert str(failed.value) == (
            f"the server's answer was longer than the most todo-agent reads of one MCP message "
            f"({MAX_MESSAGE_BYTES:,} bytes): the call failed"
        )
        assert time.monotonic() - started < 30, "the call waited for its timeout instead of failing at the cap"
        # Memory stays bounded: the client stopped reading at the cap and dropped the
        # connection, so the server could write no more than the cap and the sockets' buffers.
        await asyncio.wait_for(endless.finished.wait(), 30)
        assert endless.sent < MAX_MESSAGE_BYTES + 16_000_000, f"{endless.sent:,} bytes were sent"
        assert manager.servers[0].state == "connected"  # one call failed, not the connection


async def test_an_answer_compressed_against_our_asking_is_refused(managers: Managers) -> None:
    """A gzip body is small on the wire and huge in memory: it is asked not to come, and
    refused if it comes anyway."""

    class Gzipping(EndlessHttp):
        async def _endless(self, writer: asyncio.StreamWriter, call_id: int) -> None:
            import gzip

            body = gzip.compress(json.dumps({"jsonrpc": "2.0", "id": call_id, "result": {"content": []}}).encode())
            head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
            writer.write(f"{head}content-length: {len(body)}\r\n\r\n".encode() + body)
            await writer.drain()

    async with Gzipping("json") as url:
        manager = await connected(managers(ServerSpec("endless", "user", "test", "http", url=url)))
        with pytest.raises(CallFailed, match=r"compressed its answer \(gzip\) though asked not to"):
            await manager.call("mcp__endless__endless", {})


# --- a local server whose line never ends -------------------------------------------------------


async def test_an_endless_stdio_line_is_cut_and_ends_the_connection(managers: Managers, notes: Path) -> None:
    manager = await connected(managers(stdio_spec("t", notes, tool_timeout=120)))
    server = manager.servers[0]
    pid = server.stderr.pid
    started = time.monotonic()
    with pytest.raises(CallFailed) as failed:
        await manager.call("mcp__t__endless_line", {})
    assert str(failed.value) == (
        f"the server's line on stdout was longer than the most todo-agent reads of one MCP message "
        f"({MAX_MESSAGE_BYTES:,} bytes): the connection was closed"
    )
    assert time.monotonic() - started < 30, "the call waited for its timeout instead of failing at the cap"
    assert pid is not None and await gone_soon([pid]) == [], "the server writing the endless line still runs"
    await server.wait_settled(10)
    assert server.state == "failed" and "line on stdout was longer" in server.reason


# --- a flood of tools/list_changed --------------------------------------------------------------


async def test_a_flood_of_list_changed_is_coalesced(managers: Managers, notes: Path) -> None:
    manager = await connected(managers(stdio_spec("t", notes)))
    listings: list[float] = []
    manager.listeners.append(lambda server: listings.append(time.monotonic()) if server.state == "connected" else None)
    seconds = 2.0
    sent = int((await manager.call("mcp__t__flood", {"seconds": seconds})).parts[0].text)
    assert sent > 100, "the flood was not a flood"
    server = manager.servers[0]
    for _ in range(200):  # the last change is listed, however many came before it
        if "mcp__t__after_flood" in server.tools:
            break
        await asyncio.sleep(0.05)
    assert "mcp__t__after_flood" in server.tools
    # at most one listing per half second, over the flood and the listing after it (counted,
    # not timed: a listing is seen when the server answers it, which the load shifts)
    assert len(listings) <= seconds / 0.5 + 3, f"{len(listings)} listings for {sent} notifications"


# --- a child that left the server's group -------------------------------------------------------


async def wait_in_family(server: McpServer, child: int) -> None:
    for _ in range(int((FAMILY_POLL * 10) / 0.05)):
        if child in server.family:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the owner never saw child {child}")


async def test_a_setsid_child_is_stopped_with_the_server(managers: Managers, notes: Path) -> None:
    manager = await connected(managers(stdio_spec("t", notes)))
    child = int((await manager.call("mcp__t__spawn_child", {"setsid": True})).parts[0].text)
    assert alive(child)
    await manager.stop()
    assert await gone_soon([child]) == [], "the server's setsid child outlived the server's stop"


async def test_a_crashed_servers_setsid_child_is_stopped_with_it(managers: Managers, notes: Path) -> None:
    """Once the server has died its setsid child is no longer below it in /proc: the owner
    saw it there while the server ran."""
    manager = await connected(managers(stdio_spec("t", notes)))
    child = int((await manager.call("mcp__t__spawn_child", {"setsid": True})).parts[0].text)
    await wait_in_family(manager.servers[0], child)
    with pytest.raises(CallFailed):
        await manager.call("mcp__t__crash", {})
    assert await gone_soon([child]) == [], "the crashed server's setsid child outlived it"
