"""MCP tools as the agent's `Tool`s, and the live set of tools each request is given.

Each MCP tool is an `execute` tool that declares no path: the permission gate asks for
every call in the default mode (a server's own "read-only" hint is not trusted). Its
description is capped; its schema is the server's (an object schema, or an empty one).

`ToolSet` is what the agent holds: the built-in tools, then the MCP tools of the servers
that are up now (so a server's tools join the next request once it is up), minus those
a deny rule names. When the MCP tools' schemas would take more than a tenth of the
context window, they are not all sent: the model gets `MCPSearch`, which finds tools by
name and description and loads the ones it picks for the next requests, and the fixed
prefix of every request stays small.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

from ..tools.base import Tool, short
from ..tools.context import ToolContext
from ..tools.images import Image
from ..tools.results import ToolError, ToolResult
from . import results
from .images import accepted
from .manager import McpManager
from .remote import CallFailed, RemoteTool
from .server import McpServer

MAX_DESCRIPTION = 1_000
"""Characters of a server's tool description kept (some servers send whole manuals)."""
SCHEMA_SHARE = 0.1
"""MCP schemas may take this share of the context window before MCPSearch replaces them."""
MAX_SCHEMA = 50_000
"""Characters of one tool's schema at most (larger: an open object schema)."""
OPEN_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}
SEARCH_NAME = "MCPSearch"
SEARCH_RESULTS = 5

SEARCH_DESCRIPTION = """Find and load tools of the connected MCP servers.

Their tools are too many to list up front. Search them by words of their name or
description (`query`), or load tools you know by name (`names`: e.g.
["mcp__github__create_issue"]). The tools found are loaded: from your next step on you can
call them like any other tool. The result lists each tool's name and what it does.

Connected servers and how many tools each has: {servers}"""


def _description(server: McpServer, tool: RemoteTool) -> str:
    text = " ".join(tool.description.split()) if tool.description else f"The {tool.name} tool."
    if len(text) > MAX_DESCRIPTION:
        text = text[: MAX_DESCRIPTION - 1] + "…"
    if _schema(tool) == OPEN_SCHEMA and tool.input_schema != OPEN_SCHEMA:
        text += " (Its argument schema could not be used; pass the arguments its description names.)"
    return f"{text} (MCP server {server.name}, tool {tool.name})"


def _schema(tool: RemoteTool) -> dict[str, Any]:
    """The server's schema, made safe to send: a request with one schema the API refuses
    fails whole, so a malformed or huge one becomes an open object schema (the
    description says so), and `required` names only properties that exist."""
    schema = dict(tool.input_schema)
    properties = schema.get("properties", {})
    try:
        size = len(json.dumps(schema))
    except (TypeError, ValueError):
        size = MAX_SCHEMA + 1
    if (
        schema.get("type") != "object"
        or not isinstance(properties, dict)
        or not all(isinstance(p, dict) for p in properties.values())
        or size > MAX_SCHEMA
    ):
        return dict(OPEN_SCHEMA)
    schema["properties"] = properties
    required = schema.get("required")
    if required is not None:
        schema["required"] = (
            [r for r in required if isinstance(r, str) and r in properties] if isinstance(required, list) else []
        )
    return schema


def _summary(arguments: dict[str, Any]) -> str:
    return short(json.dumps(arguments, ensure_ascii=False)) if arguments else ""


def mcp_tool(manager: McpManager, name: str, server: McpServer, tool: RemoteTool) -> Tool:
    async def run(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            result = await manager.call(name, arguments)
        except CallFailed as exc:
            raise ToolError(str(exc)) from exc
        text = results.render(result)
        if ctx.images is not None:  # the calling agent's queue: its next request shows them
            found = [Image(name, ctx.call_id, p.mime, p.data, p.size) for p in result.parts if p.kind == "image"]
            sent, notes = accepted(found)
            ctx.images += sent
            text = "\n".join([text, *notes])
        keep = None
        if ctx.session is not None:
            keep = results.results_dir(ctx.session.path, ctx.session.id) / f"{_file_name(ctx.call_id)}.txt"
        return ToolResult(results.cap(text, keep), is_error=result.is_error)

    return Tool(
        name=name,
        description=_description(server, tool),
        parameters=_schema(tool),
        run=run,
        kind="execute",
        summarize=_summary,
    )


def _file_name(call_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", call_id)[:80] or "call"


class ToolSet(Sequence[Tool]):
    """The tools of the next request, as they are now (see the module docstring)."""

    def __init__(
        self,
        builtin: Sequence[Tool],
        manager: McpManager,
        *,
        schema_room: Callable[[], float],
        hidden: Callable[[str], bool],
    ) -> None:
        """`schema_room`: characters MCP schemas may take (a tenth of the window);
        `hidden`: whether a deny rule names a tool."""
        self.builtin = list(builtin)
        names = [tool.name for tool in self.builtin]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:  # the model could call only one of them, and which one would be an accident
            raise ValueError(f"two tools are named {', '.join(twice)}: a tool's name must be its own")
        self.manager = manager
        self.schema_room = schema_room
        self.hidden = hidden
        self._cache: tuple[tuple[int, ...], list[tuple[Tool, int]]] | None = None
        """The MCP tools as last listed, each with the size of its schema as sent: made once
        per change of a server's tools (with 1,500 tools, serialising every schema again took
        ~60 ms of the event loop each time a request asked for its tools, 4 times a request)."""

    def _listed(self) -> list[tuple[Tool, int]]:
        """Every MCP tool and its schema's size, deny rules applied."""
        found = self.manager.tools()
        # The cached tools hold the listed ones, so their ids stay theirs while cached.
        key = tuple(id(tool) for _, _, tool in found)
        if self._cache is None or self._cache[0] != key:
            tools = [mcp_tool(self.manager, n, s, t) for n, s, t in found]
            self._cache = (key, [(tool, len(json.dumps(tool.schema()))) for tool in tools])
        return [(tool, size) for tool, size in self._cache[1] if not self.hidden(tool.name)]

    def mcp_tools(self) -> list[Tool]:
        """Every MCP tool the model may call (shown or not), deny rules applied."""
        return [tool for tool, _ in self._listed()]

    def searching(self, listed: list[tuple[Tool, int]] | None = None) -> bool:
        """Whether the MCP schemas are too big to send, so MCPSearch stands in for them."""
        listed = self._listed() if listed is None else listed
        return bool(listed) and sum(size for _, size in listed) > self.schema_room()

    def current(self) -> list[Tool]:
        listed = self._listed()
        tools = [tool for tool, _ in listed]
        if not self.searching(listed):
            return [*self.builtin, *tools]
        loaded = [t for t in tools if t.name in self.manager.loaded]
        return [*self.builtin, search_tool(self), *loaded]

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.current())

    def __len__(self) -> int:
        return len(self.current())

    @overload
    def __getitem__(self, index: int) -> Tool: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Tool]: ...

    def __getitem__(self, index: int | slice) -> Tool | Sequence[Tool]:
        return self.current()[index]


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if w}


def search_tool(tools: ToolSet) -> Tool:
    servers = ", ".join(f"{s.name} ({len(s.tools)})" for s in tools.manager.servers if s.tools) or "none yet"

    async def run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        available = {t.name: t for t in tools.mcp_tools()}
        names = arguments.get("names")
        query = arguments.get("query")
        if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise ToolError("names must be a list of tool names")
        if query is not None and not isinstance(query, str):
            raise ToolError("query must be text")
        if not names and not (query or "").strip():
            raise ToolError("give a query (words of a tool's name or description) or names to load")
        chosen: list[Tool] = []
        unknown = [n for n in names or [] if n not in available]
        chosen += [available[n] for n in names or [] if n in available]
        if query and query.strip():
            chosen += [t for t in _ranked(query, available.values()) if t not in chosen][:SEARCH_RESULTS]
        tools.manager.loaded.update(t.name for t in chosen)
        lines = [f"{t.name}: {short(t.description, 200)}" for t in chosen]
        text = ("Loaded (callable from your next step):\n" + "\n".join(lines)) if lines else "No tool matched."
        if unknown:
            text += "\nNo such tool: " + ", ".join(unknown)
        return text

    return Tool(
        name=SEARCH_NAME,
        description=SEARCH_DESCRIPTION.format(servers=servers),
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words of the tools' names or descriptions."},
                "names": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Exact tool names to load, e.g. mcp__github__create_issue.",
                },
            },
        },
        run=run,
        kind="read",
        summarize=lambda args: short(str(args.get("query") or ", ".join(args.get("names") or []))),
    )


def _ranked(query: str, tools: Any) -> list[Tool]:
    wanted = _words(query)
    scored = []
    for tool in tools:
        name_words = _words(tool.name)
        score = 3 * len(wanted & name_words) + len(wanted & _words(tool.description))
        if score:
            scored.append((-score, tool.name, tool))
    return [tool for _, _, tool in sorted(scored, key=lambda item: item[:2])]
