"""Whether `MCPSearch` stands in for the MCP tools is decided from each schema's size, taken
once per change of a server's tools, not by serialising every schema again each time a
request asks for its tools (with 1,500 tools that was ~60 ms of the event loop, four times
a request: `python benchmarks/mcp_search.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from todo_agent.core.mcp.config import ServerSpec
from todo_agent.core.mcp.manager import McpManager
from todo_agent.core.mcp.remote import RemoteTool
from todo_agent.core.mcp.server import McpServer
from todo_agent.core.mcp.tools import SEARCH_NAME, ToolSet
from todo_agent.core.tools.base import Tool


def listed(count: int, version: str = "") -> dict[str, RemoteTool]:
    schema = {"type": "object", "properties": {"q": {"type": "string", "description": "What to look for."}}}
    return {f"mcp__s__t{i}": RemoteTool(f"t{i}{version}", f"Tool {i}.", schema) for i in range(count)}


def test_the_schemas_are_measured_once_per_tool_list(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    schema = Tool.schema

    def counted(self: Tool) -> dict[str, Any]:
        made.append(self.name)
        return schema(self)

    monkeypatch.setattr(Tool, "schema", counted)
    manager = McpManager([], workspace=workspace)
    server = McpServer(ServerSpec("s", "user", "test", "stdio", command="srv"), part="s", workspace=workspace)
    server.state, server.tools = "connected", listed(300)
    manager.servers.append(server)
    room = [1e9]
    tools = ToolSet([], manager, schema_room=lambda: room[0], hidden=lambda name: name == "mcp__s__t0")
    for _ in range(5):  # what one request and the batch after it ask
        assert len(tools.current()) == 299 and SEARCH_NAME not in [t.name for t in tools]
    assert len(made) == 300, "the schemas were serialised again for each look"
    room[0] = 1_000  # a smaller window (/model): decided again, from the sizes already taken
    assert [t.name for t in tools.current()] == [SEARCH_NAME]
    assert len(made) == 300
    server.tools = listed(300, "-v2")  # the server's tools changed: measured once more
    for _ in range(3):
        tools.current()
    assert len(made) == 600
