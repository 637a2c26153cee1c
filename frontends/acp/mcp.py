"""The MCP servers a client names in `session/new` / `session/load` (its own, configured in
the editor) as the session's servers: the person's, like `--mcp-config`, so they start
without a trust question, above the project's and the settings' servers of the same name.
A server the table rules refuse (no command, a bad value) is left out with a warning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from todo_agent.core.mcp.config import check_server, merge, process_env, servers_from_table
from todo_agent.core.settings import Config

ORIGIN = Path("(the editor's session/new)")


def _entry(server: Any) -> tuple[str, dict[str, Any]] | None:
    name = getattr(server, "name", "")
    if getattr(server, "type", None) == "http" or getattr(server, "url", None):
        headers = {h.name: h.value for h in getattr(server, "headers", None) or []}
        return name, {"url": server.url, **({"headers": headers} if headers else {})}
    command = getattr(server, "command", None)
    if not command:
        return None
    env = {v.name: v.value for v in getattr(server, "env", None) or []}
    return name, {"command": command, "args": list(server.args or []), **({"env": env} if env else {})}


def add_client_servers(config: Config, servers: list[Any] | None) -> None:
    table: dict[str, dict[str, Any]] = {}
    for server in servers or []:
        found = _entry(server)
        if found is None:
            config.warnings.append(
                f"MCP server {getattr(server, 'name', '?')!r} from the editor ignored: not stdio or HTTP"
            )
            continue
        name, entry = found
        if problem := check_server(name, entry):
            config.warnings.append(f"MCP server from the editor ignored: {problem}")
            continue
        table[name] = entry
    if table:
        given = servers_from_table(table, "flag", ORIGIN, process_env())
        config.mcp_servers = merge(given, config.mcp_servers, notices=config.warnings)
