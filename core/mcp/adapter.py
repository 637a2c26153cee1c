"""The one module that imports the MCP SDK (`mcp` v2), imported only once a server is
configured: it pulls in anyio, httpx2, starlette, pydantic models and more (~0.7 s).

`Runner` connects to one server in its owner task (`run()`: the SDK's task groups are
entered and left there), and answers calls from any task of the same loop (`call()`).
Nothing the SDK defines leaves this module: tools, results and failures are turned into
the plain values of `remote.py`.

Protocol: the initialize handshake (the SDK's `mode="legacy"`). Every server in use today
speaks it, change notifications (`tools/list_changed`) and `notifications/cancelled` ride
the connection itself, and the SDK's `server/discover` probe would only add a round trip
that older servers answer with an error. The SDK's response cache is off: a listing is
fetched when the server says it changed.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import anyio.lowlevel
import httpx2
import mcp_types as types
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import ValidationError

from .. import __version__
from .remote import CallFailed, CallResult, ConnectFailed, Part, RemoteTool, Target

# The SDK logs what a server got wrong (a line of stdout that is not JSON-RPC, with the
# line in it) at ERROR: with no handler, Python would print it on stderr, over the app or
# into `-p`'s output. What matters reaches the person as the server's state and reason.
for _name in ("mcp", "mcp_types", "httpx2"):
    logging.getLogger(_name).addHandler(logging.NullHandler())

MAX_LIST_PAGES = 50
"""Pages of a tool listing read at most: a server whose cursor never ends cannot hang us."""
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
BACKSTOP = 5.0
"""Seconds past `startup_timeout_sec` after which `run()` gives up on its own."""


class _Watched:
    """The transport's read stream, telling `ended` when it ends: a server that exits
    (or whose connection drops) closes it, and nothing else in the SDK says so."""

    def __init__(self, inner: Any, ended: anyio.Event) -> None:
        self._inner = inner
        self._ended = ended

    def __getattr__(self, name: str) -> Any:  # `last_context`, read by the dispatcher
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Watched:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@asynccontextmanager
async def _transport(target: Target, ended: anyio.Event) -> AsyncIterator[tuple[Any, Any]]:
    if target.transport == "http":
        async with (
            httpx2.AsyncClient(headers=dict(target.headers), timeout=HTTP_TIMEOUT) as http,
            streamable_http_client(target.url, http_client=http) as (read, write),
        ):
            yield _Watched(read, ended), write
        return
    params = StdioServerParameters(
        command=target.command,
        args=list(target.args),
        env=dict(target.env),
        cwd=target.cwd,
        encoding_error_handler="replace",  # a stray byte must not end the session
    )
    assert target.errlog is not None, "a local server's stderr always goes to its own pipe"
    async with stdio_client(params, errlog=target.errlog) as (read, write):
        yield _Watched(read, ended), write


class Runner:
    """One connection to one server, from start to end, in its owner task."""

    def __init__(
        self,
        target: Target,
        *,
        on_tools: Callable[[list[RemoteTool]], None],
    ) -> None:
        """`on_tools` gets the tool listing once connected, and again after each
        `tools/list_changed` (called in the owner task)."""
        self.target = target
        self._on_tools = on_tools
        self._client: Client | None = None
        self._scope: anyio.CancelScope | None = None
        self._wake = anyio.Event()
        self._ended = anyio.Event()
        self._changed = False
        self._stopping = False

    @property
    def connected(self) -> bool:
        return self._client is not None

    async def run(self) -> str:
        """Connect, list the tools, then serve until `stop()` or the connection ends;
        returns why it ended. Raises `ConnectFailed` when it never connected."""
        started = anyio.current_time()
        # A backstop: the owner stops a server that is not up in time (`McpServer._watch_start`).
        with anyio.CancelScope(deadline=started + self.target.startup_timeout + BACKSTOP) as scope:
            self._scope = scope
            if self._stopping:
                scope.cancel()
            try:
                return await self._serve(scope)
            except ConnectFailed:
                raise
            except Exception as exc:
                if self._client is not None:  # it was up: the connection broke
                    return f"the connection failed ({_reason(exc)})"
                raise ConnectFailed(_reason(exc)) from exc
            finally:
                self._client = None
        if self._stopping:
            return "stopped"
        raise ConnectFailed(
            f"it did not finish starting within {self.target.startup_timeout:g} s (startup_timeout_sec)"
        )

    async def _serve(self, scope: anyio.CancelScope) -> str:
        ended = self._ended
        client = Client(
            _TransportFactory(self.target, ended),
            mode="legacy",
            cache=None,
            message_handler=self._message,
            client_info=types.Implementation(name="todo-agent", version=__version__),
        )
        async with client:
            tools = await _list_tools(client)
            self._client = client
            scope.deadline = math.inf  # up: the start-up limit no longer applies
            self._on_tools(tools)
            while True:
                if self._stopping:
                    return "stopped"
                if ended.is_set():
                    return "the server closed the connection"
                if self._changed:
                    self._changed = False
                    self._on_tools(await _list_tools(client))
                    continue
                await self._wait()

    async def _wait(self) -> None:
        self._wake = anyio.Event()
        async with anyio.create_task_group() as group:

            async def ended() -> None:
                await self._ended.wait()
                group.cancel_scope.cancel()

            async def woken() -> None:
                await self._wake.wait()
                group.cancel_scope.cancel()

            group.start_soon(ended)
            group.start_soon(woken)

    async def _message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._changed = True
            self._wake.set()
        await anyio.lowlevel.checkpoint()

    def stop(self) -> None:
        """End `run()` soon, from any task of the loop (the SDK then stops the server)."""
        self._stopping = True
        self._wake.set()
        if self._scope is not None and self._client is None:  # still starting: cut it short
            self._scope.cancel()

    async def call(self, tool: str, arguments: dict[str, Any], limit: float) -> CallResult:
        """Call `tool` (the server's own name). Cancelling the caller cancels the call on
        the server too (the SDK sends `notifications/cancelled`). Raises `CallFailed`."""
        client = self._client
        if client is None:
            raise CallFailed("the server is not connected", lost=True)
        try:
            result = await client.call_tool(tool, arguments, read_timeout_seconds=limit)
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                raise CallFailed(f"the server did not answer within {limit:g} s (tool_timeout_sec)") from exc
            if exc.code == types.CONNECTION_CLOSED or self._ended.is_set():
                raise CallFailed("the server closed the connection during the call", lost=True) from exc
            raise CallFailed(f"the server refused the call: {exc.error.message}") from exc
        except (ValidationError, RuntimeError) as exc:
            raise CallFailed(f"the server's answer could not be read ({_reason(exc)})") from exc
        except (OSError, httpx2.TransportError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise CallFailed(f"the connection failed ({_reason(exc)})", lost=True) from exc
        return _result(result)


class _TransportFactory:
    """A `Transport` for `Client`: the SDK's stdio or Streamable HTTP client, watched."""

    def __init__(self, target: Target, ended: anyio.Event) -> None:
        self._context = _transport(target, ended)

    async def __aenter__(self) -> tuple[Any, Any]:
        return await self._context.__aenter__()

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._context.__aexit__(*exc)


async def _list_tools(client: Client) -> list[RemoteTool]:
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += [
            RemoteTool(t.name, t.description or t.title or "", dict(t.input_schema or {"type": "object"}))
            for t in page.tools
        ]
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data) * 3 // 4


def _part(block: Any) -> Part:
    if isinstance(block, types.TextContent):
        return Part("text", text=block.text)
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind: Literal["image", "audio"] = "image" if isinstance(block, types.ImageContent) else "audio"
        return Part(kind, mime=block.mime_type, data=block.data, size=_decoded_size(block.data))
    if isinstance(block, types.ResourceLink):
        return Part("link", uri=str(block.uri), mime=block.mime_type or "", text=block.name or "")
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return Part("text", text=resource.text, uri=str(resource.uri), mime=resource.mime_type or "")
        blob = getattr(resource, "blob", "")
        return Part("link", uri=str(resource.uri), mime=resource.mime_type or "", size=_decoded_size(blob))
    return Part("text", text=json.dumps(_dump(block), ensure_ascii=False))


def _dump(block: Any) -> Any:
    dump = getattr(block, "model_dump", None)
    return dump(mode="json", by_alias=True, exclude_none=True) if callable(dump) else str(block)


def _result(result: types.CallToolResult) -> CallResult:
    return CallResult(tuple(_part(b) for b in result.content), result.structured_content, bool(result.is_error))


def _reason(exc: BaseException) -> str:
    """One line for a failure, however the SDK wrapped it (exception groups included)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.message
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
