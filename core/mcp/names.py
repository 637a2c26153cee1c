"""The names the model (and hooks, and permission rules) see for MCP tools.

`mcp__<server>__<tool>`, Claude Code's form, within OpenAI's `[A-Za-z0-9_-]{1,64}`: other
characters become `_`; the server's part never holds `__`, so the first `__` after the prefix
always ends it (a rule `mcp__github` names exactly the server `github`). A name that would be
longer than 64 characters is cut and ends in `_` and 8 hex digits of a hash of the server's
and the tool's own names, so two long names never collide. The server is always called with
the tool's own name.
"""

from __future__ import annotations

import hashlib
import re

from ..permissions.rules import MCP_PREFIX as PREFIX
from ..permissions.rules import MCP_SEPARATOR as SEPARATOR
from ..permissions.rules import mcp_server as server_of

__all__ = ["PREFIX", "SEPARATOR", "server_of", "tool_name", "unique_parts", "unique_tool_names"]

MAX_NAME = 64
"""OpenAI's limit on a function name (longer names are refused with a 400)."""
_HASH = 8
_MAX_SERVER_PART = 24
"""Characters of a long server name kept in a shortened tool name."""
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
VALID_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _clean(text: str) -> str:
    return _NOT_ALLOWED.sub("_", text)


def server_part(server: str) -> str:
    """The server's part of its tools' names: allowed characters only, no `__`."""
    part = re.sub(r"_{2,}", "_", _clean(server)).strip("_")
    return part or "server"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:_HASH]


def tool_name(server: str, tool: str, part: str | None = None) -> str:
    """The model-facing name of `tool` on `server` (`part`: the server's part, when the
    manager had to make it unique)."""
    part = part or server_part(server)
    clean_tool = _clean(tool) or "tool"
    full = f"{PREFIX}{part}{SEPARATOR}{clean_tool}"
    if len(full) <= MAX_NAME:
        return full
    part = part[:_MAX_SERVER_PART].rstrip("_") or "server"
    head = f"{PREFIX}{part}{SEPARATOR}"
    room = MAX_NAME - len(head) - _HASH - 1
    return f"{head}{clean_tool[:room]}_{_digest(server, tool)}"


def unique_parts(servers: list[str]) -> dict[str, str]:
    """Each server's part, made unique: two names that clean to the same part (`a.b`,
    `a_b`) would share their tools' names, so every one after the first gets a hash."""
    parts: dict[str, str] = {}
    taken: set[str] = set()
    for server in servers:
        part = server_part(server)
        if part in taken:
            part = f"{part[:_MAX_SERVER_PART]}_{_digest(server)[:6]}"
        taken.add(part)
        parts[server] = part
    return parts


def unique_tool_names(server: str, part: str, tools: list[str]) -> dict[str, str]:
    """Model-facing name → the server's own name, for one server's tools; two tools whose
    names clean to the same (`get.item`, `get_item`) keep apart by a hash."""
    named: dict[str, str] = {}
    for tool in tools:
        name = tool_name(server, tool, part)
        if name in named:
            head = name[: MAX_NAME - _HASH - 1]
            name = f"{head}_{_digest(server, tool, 'again')}"
        named[name] = tool
    return named
