"""MCP: how soon a server's tools are usable, and what a call costs beyond the server.

Usage: python benchmarks/mcp_calls.py [--servers 3] [--calls 200]

Starts `--servers` copies of the SDK-built test server (tests/mcp_servers/test_server.py)
through todo-agent's `McpManager`, as the app does, and reports, as median (min–max):
- the SDK import in a thread (what `start()` does first, off the event loop);
- per server: its process running (the pid line) → ready to serve (the server notes the
  time just before it serves; the same monotonic clock) → its tools listed by us → a
  first call answered. "ready → listed" is the handshake and the listing: our target is
  that a server's tools are usable within 0.5 s of its process being ready;
- a call's own overhead: `--calls` echo calls through the manager (and the Tool the
  model calls, result rendering included) beside the same calls made with the SDK's
  `Client` directly on a second connection to the same kind of server.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEST_SERVER = HERE.parent / "tests" / "mcp_servers" / "test_server.py"


def spread(values: list[float], scale: float = 1000.0) -> str:
    return f"{statistics.median(values) * scale:.1f} ({min(values) * scale:.1f}–{max(values) * scale:.1f})"


async def main(servers: int, calls: int) -> None:
    from todo_agent.core.mcp.config import ServerSpec
    from todo_agent.core.mcp.manager import McpManager
    from todo_agent.core.mcp.tools import ToolSet
    from todo_agent.core.tools.context import ToolContext

    notes = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    env = {"TEST_SERVER_DIR": str(notes)}
    specs = [
        ServerSpec(f"s{i}", "user", "bench", "stdio", command=sys.executable, args=(str(TEST_SERVER), "stdio"), env=env)
        for i in range(servers)
    ]
    manager = McpManager(specs, workspace=notes)
    started = time.monotonic()
    await manager.ensure_adapter()
    imported = time.monotonic() - started
    manager.start()
    await manager.wait_settled(60)
    rows = []
    tools = ToolSet([], manager, schema_room=lambda: 1e9, hidden=lambda name: False)
    for server in manager.servers:
        assert server.state == "connected", server.reason
        pid = server.stderr.pid
        ready = float((notes / f"ready-{pid}").read_text())
        before = time.monotonic()
        await manager.call(f"mcp__{server.name}__echo", {"text": "x"})
        first_call = time.monotonic()
        rows.append((server.stderr.spawned_at, ready, server.ready_at, before, first_call))
    echo = next(t for t in tools.mcp_tools() if t.name == "mcp__s0__echo")
    ours = []
    for index in range(calls):
        before = time.perf_counter()
        await echo.run({"text": f"call {index}"}, ToolContext("c", notes))
        ours.append(time.perf_counter() - before)
    await manager.stop()

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[str(TEST_SERVER), "stdio"], env=env)
    raw = []
    async with Client(params, mode="legacy", cache=None) as client:
        for index in range(calls):
            before = time.perf_counter()
            await client.call_tool("echo", {"text": f"call {index}"})
            raw.append(time.perf_counter() - before)

    print(f"SDK import in a thread: {imported * 1000:.0f} ms")
    print(f"{servers} servers started at once; per server, ms (median, min–max):")
    print(f"  process running → ready to serve (the server's own start): {spread([r[1] - r[0] for r in rows])}")
    print(f"  ready to serve → tools listed by todo-agent:              {spread([r[2] - r[1] for r in rows])}")
    print(f"  a first call, sent once all are up, until answered:       {spread([r[4] - r[3] for r in rows])}")
    print(f"an echo call, {calls} times, ms (median, min–max):")
    print(f"  through todo-agent's MCP tool: {spread(ours)}")
    print(f"  the SDK's Client directly:     {spread(raw)}")
    print(f"  todo-agent's own overhead (median): {(statistics.median(ours) - statistics.median(raw)) * 1000:.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.servers, args.calls))
