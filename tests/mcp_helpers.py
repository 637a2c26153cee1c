"""Real MCP servers for the tests: the SDK's server side (`tests/mcp_servers/`), over stdio
and Streamable HTTP, and a server whose start hangs."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from todo_agent.core.mcp.config import ServerSpec
from todo_agent.core.mcp.manager import McpManager

SERVERS = Path(__file__).parent / "mcp_servers"
TEST_SERVER = SERVERS / "test_server.py"
HANG_SERVER = SERVERS / "hang_server.py"


def stdio_spec(
    name: str, notes: Path, *, hang: bool = False, env: dict[str, str] | None = None, **kw: Any
) -> ServerSpec:
    script = HANG_SERVER if hang else TEST_SERVER
    args = (str(script),) if hang else (str(TEST_SERVER), "stdio")
    return ServerSpec(
        name, kw.pop("source", "user"), "test", "stdio", command=sys.executable, args=args,
        env={"TEST_SERVER_DIR": str(notes), **(env or {})}, **kw,
    )  # fmt: skip


def mcp_json(notes: Path, url: str | None = None, *, slow: float = 0.0, hang: bool = False) -> dict[str, Any]:
    """A `.mcp.json` as Claude Code writes it: two stdio servers (one slow to start) and an HTTP one."""
    env = {"TEST_SERVER_DIR": str(notes)}
    servers: dict[str, Any] = {
        "notes": {"type": "stdio", "command": sys.executable, "args": [str(TEST_SERVER), "stdio"], "env": env},
        "slow": {
            "type": "stdio",
            "command": sys.executable,
            "args": [str(HANG_SERVER)] if hang else [str(TEST_SERVER), "stdio"],
            "env": env | {"TEST_SERVER_DELAY": str(slow)},
        },
    }
    if url:
        servers["web"] = {"type": "http", "url": url}
    return {"mcpServers": servers}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(notes: Path, port: int | None = None) -> Iterator[str]:
    """The test server on Streamable HTTP; yields its URL."""
    port = port or free_port()
    env = dict(os.environ) | {"TEST_SERVER_DIR": str(notes)}
    process = subprocess.Popen(
        [sys.executable, str(TEST_SERVER), "http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None and time.monotonic() < deadline, "the HTTP test server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def pids(notes: Path) -> list[int]:
    """Every server process and child the test servers noted (`server-PID`, `child-PID`)."""
    return [int(p.read_text()) for p in sorted(notes.glob("server-*")) + sorted(notes.glob("child-*"))]


def wait_gone(found: list[int], seconds: float = 10) -> list[int]:
    """The pids still alive after waiting up to `seconds` for them to go."""
    deadline = time.monotonic() + seconds
    while (left := [p for p in found if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def kill_all(found: list[int]) -> None:
    for pid in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 9)


async def gone_soon(found: list[int], seconds: float = 10) -> list[int]:
    """As `wait_gone`, letting the event loop run meanwhile (the servers' owners work on it)."""
    import asyncio

    left = [p for p in found if alive(p)]
    for _ in range(int(seconds / 0.05)):
        if not left:
            break
        await asyncio.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left


Managers = Callable[..., McpManager]
