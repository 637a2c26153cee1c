"""MCP: what 1,500 MCP tools cost each model request on the event loop.

Usage: python benchmarks/mcp_search.py [--tools 1500] [--requests 20]

One connected server (its tools put in place, no process: the cost measured is ours, not
the server's) with `--tools` tools whose schemas look like a real server's (a GitHub-like
server's: ~1 kB of JSON each), in a real `Runtime` whose scripted model answers each
request at once. Reported, as median (min–max) in ms over `--requests` one-request turns:
the whole turn, and the part of it spent in `ToolSet.current()` (the tools of the next
request: whether `MCPSearch` stands in for the MCP schemas, and which tools are sent),
with how many times a request asks for it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from contextlib import aclosing
from pathlib import Path


def spread(values: list[float], scale: float = 1000.0) -> str:
    return f"{statistics.median(values) * scale:.1f} ({min(values) * scale:.1f}–{max(values) * scale:.1f})"


def schema(index: int) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {
            "owner": {"type": "string", "description": "The account owner of the repository (not case sensitive)."},
            "repo": {"type": "string", "description": "The name of the repository without the .git extension."},
            "number": {"type": "integer", "description": f"The number that identifies item {index}."},
            "state": {"type": "string", "enum": ["open", "closed", "all"], "description": "Which ones to list."},
            "labels": {"type": "array", "items": {"type": "string"}, "description": "Label names to filter by."},
            "per_page": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Results per page."},
            "page": {"type": "integer", "minimum": 1, "description": "Page number of the results to fetch."},
        },
        "required": ["owner", "repo"],
    }


async def main(count: int, requests: int) -> None:
    from todo_agent.core.mcp.config import ServerSpec
    from todo_agent.core.mcp.remote import RemoteTool
    from todo_agent.core.mcp.server import McpServer
    from todo_agent.core.mcp.tools import ToolSet
    from todo_agent.core.model.scripted import ScriptedModel
    from todo_agent.core.runtime import Runtime
    from todo_agent.core.settings import Config

    workspace = Path(tempfile.mkdtemp(prefix="mcp-search-bench-"))
    import os

    os.environ["TODO_AGENT_HOME"] = str(workspace / "home")
    config = Config(workspace=workspace, model="script:x", permission_mode="bypassPermissions")
    model = ScriptedModel.from_data(["ok"] * requests)
    runtime = Runtime.create(config, model=model)
    server = McpServer(
        ServerSpec("github", "user", "bench", "stdio", command="true"), part="github", workspace=workspace
    )
    server.state = "connected"
    server.tools = {
        f"mcp__github__tool_{i:04d}": RemoteTool(f"tool_{i:04d}", f"Does thing number {i} on GitHub.", schema(i))
        for i in range(count)
    }
    runtime.mcp.servers.append(server)
    tools: ToolSet = runtime.tools  # type: ignore[assignment]
    spent: list[float] = []
    asked = [0]
    current = tools.current

    def timed() -> list[object]:
        before = time.perf_counter()
        try:
            return current()  # type: ignore[return-value]
        finally:
            spent.append(time.perf_counter() - before)
            asked[0] += 1

    tools.current = timed  # type: ignore[method-assign]
    searching = tools.searching()
    turns, inside, per_request = [], [], []
    try:
        for index in range(requests):
            spent.clear()
            asked[0] = 0
            before = time.perf_counter()
            async with aclosing(runtime.turn.run(f"request {index}")) as events:
                async for _ in events:
                    pass
            turns.append(time.perf_counter() - before)
            inside.append(sum(spent))
            per_request.append(asked[0])
    finally:
        runtime.close()
    print(f"{count} MCP tools, MCPSearch standing in: {searching}; {requests} one-request turns, ms (median, min–max):")
    print(f"  the whole turn:                 {spread(turns)}")
    print(f"  in ToolSet.current():           {spread(inside)}")
    print(f"  ToolSet.current() per request:  {statistics.median(per_request):.0f} calls")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=1500)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.tools, args.requests))
