"""The sandbox's domain proxy: `[sandbox] network = ["pypi.org", …]` lets a sandboxed
command reach those domains (and their subdomains) and nothing else.

The sandbox has no network of its own. todo-agent serves this proxy on the host, on a Unix
socket that is bound into the sandbox; inside, `netrelay.py` listens on `127.0.0.1:PORT`
and `HTTP_PROXY`/`HTTPS_PROXY` point there. `CONNECT host:port` (HTTPS) and plain
`http://` requests to an allowed host are passed on; any other host gets one `403` line
naming the setting. The proxy resolves and connects on the host, so what "allowed" means
is the domain name, as the person wrote it.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

Connect = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
MAX_HEAD = 16_384
RELAY_PORT = 3128
"""Where the relay listens inside (the sandbox's own loopback: no clash with the host's)."""


def allowed(host: str, domains: Sequence[str]) -> bool:
    """`host` is one of `domains` or below one (`files.pythonhosted.org` under `pythonhosted.org`)."""
    host = host.lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in (d.lower().strip(".") for d in domains) if d)


class DomainProxy:
    """One per session, started when the first sandboxed command needs it."""

    def __init__(self, domains: Sequence[str], connect: Connect | None = None) -> None:
        self.domains = tuple(domains)
        self._connect: Connect = connect or asyncio.open_connection
        self._folder = tempfile.TemporaryDirectory(prefix="todo-agent-proxy-")
        self.path = Path(self._folder.name) / "proxy.sock"
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> Path:
        if self._server is None:
            self._server = await asyncio.start_unix_server(self._serve, path=str(self.path))
        return self.path

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self._folder.cleanup()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:  # the reader's limit (64 KiB): a head that never ends
            await _answer(writer, 400, "todo-agent sandbox proxy: the request head is over 64 KiB")
            writer.close()
            return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        try:
            await self._handle(head[:MAX_HEAD], reader, writer)
        except (OSError, ValueError) as exc:
            await _answer(writer, 502, f"todo-agent sandbox proxy: {exc}")
        finally:
            with contextlib.suppress(OSError):
                writer.close()

    async def _handle(self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line, _, rest = head.partition(b"\r\n")
        method, target, version = line.decode("latin-1").split(" ", 2)
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            host, number, forward = host.strip("[]"), int(port or 443), b""
        else:
            if not target.startswith("http://"):
                raise ValueError("only CONNECT and http:// requests go through the proxy")
            hostport, _, path = target.removeprefix("http://").partition("/")
            host, _, port = hostport.partition(":")
            number = int(port or 80)
            forward = f"{method} /{path} {version}\r\n".encode("latin-1") + rest
        if not allowed(host, self.domains):
            names = ", ".join(self.domains)
            await _answer(writer, 403, f"todo-agent sandbox: {host} is not in [sandbox] network ({names})")
            return
        upstream_reader, upstream_writer = await self._connect(host, number)
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
        else:
            upstream_writer.write(forward)
        await asyncio.gather(_pump(reader, upstream_writer), _pump(upstream_reader, writer))


async def _pump(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65_536):
            target.write(data)
            await target.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(OSError):
            if target.can_write_eof():
                target.write_eof()


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = (text + "\n").encode()
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with contextlib.suppress(OSError):
        writer.write(head.encode() + body)
        await writer.drain()
