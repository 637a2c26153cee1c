"""A real MCP server for the tests, written with the SDK's own server side.

`python test_server.py stdio` serves on stdin/stdout; `python test_server.py http PORT`
serves Streamable HTTP on 127.0.0.1:PORT/mcp. `TEST_SERVER_DIR` (when set) is where it
writes its pid, the pids of children it starts, and what it saw cancelled.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp_types import ImageContent

NOTES = Path(os.environ.get("TEST_SERVER_DIR", ".")).resolve()
server = MCPServer("test-server")
_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _note(name: str, text: str) -> None:
    (NOTES / name).write_text(text, encoding="utf-8")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
async def slow(seconds: float) -> str:
    """Wait, then answer; notes when it was cancelled."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _note("cancelled", "yes")
        raise
    return f"waited {seconds}"


@server.tool()
def fail(why: str = "it failed") -> str:
    """Always fails."""
    raise ValueError(why)


@server.tool()
def huge(chars: int) -> str:
    """A long answer of `chars` characters, numbered lines."""
    lines = [f"line {i:06d} " + "x" * 40 for i in range(chars // 52 + 1)]
    return "\n".join(lines)[:chars]


@server.tool()
def picture() -> Image:
    """A one-pixel PNG."""
    return Image(data=_PNG, format="png")


@server.tool()
def odd_picture(mime: str, data: str) -> ImageContent:
    """An image of any claimed type and base64 data (a hostile server's)."""
    return ImageContent(type="image", data=data, mime_type=mime)


@server.tool()
def structured(count: int) -> dict[str, Any]:
    """Structured content."""
    return {"count": count, "items": list(range(count))}


@server.tool()
def environment(name: str) -> str:
    """The value of an environment variable in the server (or `<unset>`)."""
    return os.environ.get(name, "<unset>")


@server.tool()
def complain(text: str) -> str:
    """Write `text` to stderr."""
    print(text, file=sys.stderr, flush=True)
    return "said it"


STDOUT_COPY: list[int] = []
"""A copy of the stdout the protocol runs on, taken before the SDK moves it."""


@server.tool()
def spawn_child(hold_stdout: bool = False, setsid: bool = False) -> str:
    """Start a child that sleeps (in the server's process group) and give its pid;
    `hold_stdout`: the child keeps the protocol's stdout open (so no end of file tells
    the client when this server dies); `setsid`: the child leaves the server's group
    (a session of its own), as a daemon does."""
    keep = tuple(STDOUT_COPY) if hold_stdout else ()
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"], pass_fds=keep, start_new_session=setsid
    )
    _note(f"child-{child.pid}", str(child.pid))
    return str(child.pid)


@server.tool()
def crash() -> str:
    """Die in the middle of the call."""
    sys.stderr.write("about to crash\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
async def add_tool(ctx: Context) -> str:
    """Add a tool named `added`, and say the tool list changed."""

    def added() -> str:
        """A tool added later."""
        return "added here"

    server.add_tool(added, name="added")
    await ctx.session.send_tool_list_changed()
    return "added"


@server.tool()
async def flood(seconds: float, ctx: Context) -> str:
    """Say the tool list changed, as fast as it can, for `seconds`; then add a tool named
    `after_flood` and say so once more."""
    sent = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        await ctx.session.send_tool_list_changed()
        sent += 1

    def after_flood() -> str:
        """Added once the flood was over."""
        return "after"

    server.add_tool(after_flood, name="after_flood")
    await ctx.session.send_tool_list_changed()
    return str(sent)


@server.tool()
def endless_line() -> str:
    """Write the start of an answer on the protocol's stdout, then never end the line."""
    out = STDOUT_COPY[0]
    os.write(out, b'{"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "')
    chunk = b"x" * 65_536
    while True:
        os.write(out, chunk)


def main() -> None:
    print(f"test server starting ({sys.argv[1:]})", file=sys.stderr, flush=True)
    _note(f"server-{os.getpid()}", str(os.getpid()))
    delay = float(os.environ.get("TEST_SERVER_DELAY", "0"))
    if delay:
        time.sleep(delay)
    STDOUT_COPY.append(os.dup(1))
    _note(f"ready-{os.getpid()}", repr(time.monotonic()))  # the process is ready to serve (benchmarks)
    if sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
