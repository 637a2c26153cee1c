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
fetched when the server says it changed, at most once per `RELIST_GAP` (a flood of
notifications costs one listing per gap, and the last change is always listed).

Bounds: no message from a server is read past `MAX_MESSAGE_BYTES` (`remote.py`). A local
server's stdout is read by our own transport (`_stdio`), which cuts a line at the cap
before anything splits it (the SDK's re-joins its buffer per chunk: an endless line kept a
core busy); a longer line ends the connection, and says why. A Streamable HTTP answer is
read through `_CappedBody` (asked uncompressed, so what is counted is what is kept); a
longer one fails its call, and says so.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import math
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import anyio.abc
import anyio.lowlevel
import httpx2
import mcp_types as types
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from .. import __version__
from ..pipes import signal_group
from .remote import MAX_MESSAGE_BYTES, CallFailed, CallResult, ConnectFailed, Part, RemoteTool, Target

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
RELIST_GAP = 0.5
"""Seconds from one listing of a server's tools to the next, at least."""
EXIT_GRACE = 2.0
"""Seconds a local server has to exit once its stdin closes, and again after SIGTERM."""
_EXIT_POLL = 0.01
_READ_CHUNK = 65_536
TOO_LONG = "longer than the most todo-agent reads of one MCP message"
"""In every failure a message past the cap causes (the SDK passes it on in its own words)."""


def too_long(what: str) -> str:
    return f"the server's {what} was {TOO_LONG} ({MAX_MESSAGE_BYTES:,} bytes)"


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
async def _transport(
    target: Target, ended: anyio.Event, broken: Callable[[str], None]
) -> AsyncIterator[tuple[Any, Any]]:
    if target.transport == "http":
        # Uncompressed: the bytes counted on the wire are then the bytes kept (a few MB of
        # gzip unpack to gigabytes, a whole chunk at a time).
        headers = {k: v for k, v in target.headers.items() if k.lower() != "accept-encoding"}
        async with (
            httpx2.AsyncClient(
                headers={**headers, "Accept-Encoding": "identity"},
                timeout=HTTP_TIMEOUT,
                event_hooks={"response": [_cap_body]},
            ) as http,
            streamable_http_client(target.url, http_client=http, max_sse_event_size=MAX_MESSAGE_BYTES) as (
                read,
                write,
            ),
        ):
            yield _Watched(read, ended), write
        return
    async with _stdio(target, broken) as (read, write):
        yield _Watched(read, ended), write


class _AnswerTooLong(httpx2.SSEError, httpx2.StreamError):
    """A body read past the cap. Both kinds on purpose: the SDK catches `StreamError` around
    a JSON body and `SSEError` around an event stream, and turns either into the failure
    of that one request; anything else would end the whole connection."""


class _CappedBody(httpx2.AsyncByteStream):
    """A response body that stops at `MAX_MESSAGE_BYTES` (or, `refused`, at once)."""

    def __init__(self, inner: httpx2.AsyncByteStream, refused: str) -> None:
        self._inner = inner
        self._refused = refused

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._refused:
            raise _AnswerTooLong(self._refused)
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > MAX_MESSAGE_BYTES:
                raise _AnswerTooLong(too_long("answer"))
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _cap_body(response: httpx2.Response) -> None:
    """Every answer to a request is read through `_CappedBody`, before anyone reads it. The
    GET is the server's own event stream, open as long as the session: there each event is
    capped instead (`max_sse_event_size`), as its events are taken one at a time."""
    if response.request.method == "GET":
        return
    encoding = response.headers.get("content-encoding", "").strip().lower()
    refused = ""
    if encoding not in ("", "identity"):
        refused = f"the server compressed its answer ({encoding}) though asked not to, so its size has no bound"
    response.stream = _CappedBody(response.stream, refused)  # type: ignore[arg-type]  # the async stream it wraps


class _LineTooLong(Exception):
    pass


class _Lines:
    """A byte stream cut into lines of at most `cap` bytes each. The pieces of a line are
    kept apart until its end arrives, so each byte is looked at once, however long it is."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._pieces: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        lines = []
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if self._size + end - start > self._cap:
                raise _LineTooLong
            lines.append(b"".join([*self._pieces, chunk[start:end]]))
            self._pieces, self._size = [], 0
            start = end + 1
        if start < len(chunk):
            self._size += len(chunk) - start
            if self._size > self._cap:
                raise _LineTooLong
            self._pieces.append(chunk[start:])
        return lines


def _message(line: bytes) -> SessionMessage | Exception:
    """One line of stdout as a message, or the reason it is not one (the session hears it)."""
    try:
        # A stray byte must not end the session: it is read as U+FFFD.
        return SessionMessage(
            types.jsonrpc_message_adapter.validate_json(line.decode("utf-8", "replace"), by_name=False)
        )
    except ValueError as exc:
        return exc


@asynccontextmanager
async def _stdio(target: Target, broken: Callable[[str], None]) -> AsyncIterator[tuple[Any, Any]]:
    """A local server over its stdin and stdout, newline-delimited JSON-RPC as the spec
    says, in a session of its own (its group is stopped whole, `server.py`), with exactly
    `target.env` as its environment. A line past `MAX_MESSAGE_BYTES` ends the connection:
    `broken` hears why, and the server is stopped without waiting for it."""
    assert target.errlog is not None, "a local server's stderr always goes to its own pipe"
    process = await anyio.open_process(
        [target.command, *target.args],
        env=dict(target.env),
        cwd=target.cwd,
        stderr=target.errlog,
        start_new_session=True,
    )
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    cut = False

    async def read() -> None:
        nonlocal cut
        assert process.stdout is not None
        lines = _Lines(MAX_MESSAGE_BYTES)
        async with to_session:
            try:
                while True:
                    for line in lines.feed(await process.stdout.receive(_READ_CHUNK)):
                        if line.strip():
                            await to_session.send(_message(line))
            except _LineTooLong:
                cut = True
                broken(too_long("line on stdout"))
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass  # the server closed its stdout, or the session went away

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with from_session:
                async for message in from_session:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((text + "\n").encode("utf-8", "replace"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # It no longer reads: the session hears the end rather than wait for an answer.
            await to_session.aclose()

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield from_server, to_server
        finally:
            # Bounded and shielded: a cancelled caller must neither leave the server running
            # nor hang on it.
            with anyio.CancelScope(shield=True):
                to_server.close()
                from_server.close()
                await _end(process, 0.0 if cut else EXIT_GRACE)
            group.cancel_scope.cancel()


async def _end(process: anyio.abc.Process, grace: float) -> None:
    """Close its stdin and give it `grace` seconds to exit (the spec's shutdown), then
    SIGTERM its group and, `EXIT_GRACE` later, SIGKILL it."""
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        if process.stdin is not None:
            await process.stdin.aclose()
    for sig, within in ((None, grace), (signal.SIGTERM, EXIT_GRACE), (signal.SIGKILL, EXIT_GRACE)):
        if sig is not None:
            signal_group(process.pid, sig)  # its pid is its group's: a session of its own
        for _ in range(math.ceil(within / _EXIT_POLL)):  # not `wait()`: it also waits for the pipes
            if process.returncode is not None:
                break
            await anyio.sleep(_EXIT_POLL)
        if process.returncode is not None:
            break
    # anyio keeps the asyncio transport to itself; closing it closes our pipe ends (a child
    # that outlived the server may hold the other ends), as the SDK's own transport does.
    close = getattr(getattr(process, "_transport", None), "close", None)
    if callable(close):
        with contextlib.suppress(OSError):
            close()


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
        """Set when the server says its tools changed."""
        self._stop_asked = anyio.Event()
        self._ended = anyio.Event()
        self._changed = False
        self._stopping = False
        self._broken = ""
        """Why the transport ended the connection itself (a message past the cap)."""

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
            _TransportFactory(self.target, ended, self._break),
            mode="legacy",
            cache=None,
            message_handler=self._message,
            client_info=types.Implementation(name="todo-agent", version=__version__),
        )
        async with client:
            tools = await _list_tools(client)
            listed_at = anyio.current_time()
            self._client = client
            scope.deadline = math.inf  # up: the start-up limit no longer applies
            self._on_tools(tools)
            while True:
                if self._stopping:
                    return "stopped"
                if ended.is_set():
                    return self._broken or "the server closed the connection"
                if self._changed:
                    if (rest := listed_at + RELIST_GAP - anyio.current_time()) > 0:
                        await self._wait(changes=False, within=rest)  # what changes meanwhile joins it
                        continue
                    self._changed = False
                    listed_at = anyio.current_time()
                    self._on_tools(await _list_tools(client))
                    continue
                await self._wait()

    async def _wait(self, *, changes: bool = True, within: float = math.inf) -> None:
        """Until the connection ends, `stop()`, `within` seconds, or (`changes`) the server
        says its tools changed."""
        self._wake = anyio.Event()
        with anyio.move_on_after(within):
            async with anyio.create_task_group() as group:

                async def until(event: anyio.Event) -> None:
                    await event.wait()
                    group.cancel_scope.cancel()

                group.start_soon(until, self._ended)
                group.start_soon(until, self._stop_asked)
                if changes:
                    group.start_soon(until, self._wake)

    async def _message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._changed = True
            self._wake.set()
        await anyio.lowlevel.checkpoint()

    @property
    def broken(self) -> str:
        """Why todo-agent cut the connection itself (a line past the cap), or ""."""
        return self._broken

    def _break(self, why: str) -> None:
        self._broken = why

    def stop(self) -> None:
        """End `run()` soon, from any task of the loop (the transport then stops the server)."""
        self._stopping = True
        self._stop_asked.set()
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
            if self._broken:
                raise CallFailed(f"{self._broken}: the connection was closed", lost=True) from exc
            if TOO_LONG in exc.error.message:  # the SDK calls an event stream cut short a closed connection
                raise CallFailed(f"{too_long('answer')}: the call failed") from exc
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

    def __init__(self, target: Target, ended: anyio.Event, broken: Callable[[str], None]) -> None:
        self._context = _transport(target, ended, broken)

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
