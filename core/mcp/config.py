"""What a configured MCP server is, and reading servers from the four places they come from.

Highest first: `--mcp-config FILE` (a `.mcp.json`-style JSON file, or TOML with
`[mcp_servers.NAME]` tables), `[mcp_servers.NAME]` in the project's
`.todo-agent/settings.toml`, the project's `.mcp.json` as Claude Code writes it
(`mcpServers`, `type` stdio/http, `command`, `args`, `env`, `url`, `headers`), and the
user's settings file. A name defined in several places is taken whole from the highest.
TOML keys are Codex's: `command`, `args`, `env`, `cwd`, `url`, `headers`,
`startup_timeout_sec`, `tool_timeout_sec`, `enabled_tools`, `disabled_tools`, `enabled`.

`${VAR}` and `${VAR:-default}` expand in every string (command, args, env values, cwd, url,
headers). A variable that is unset (and has no default) does not drop the server: it is
kept with a `problem` naming the variable, and shown as failed. A broken file is one line
naming the file and the key, and is ignored as a whole, like every settings file.

Pure data and parsing: nothing here imports the MCP SDK, so reading settings before the
first frame stays light.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

Source = Literal["flag", "project", "mcp.json", "user"]
Transport = Literal["stdio", "http"]

DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_TOOL_TIMEOUT = 120.0
MCP_JSON = ".mcp.json"

TOML_KEYS = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "startup_timeout_sec",
        "tool_timeout_sec",
        "enabled_tools",
        "disabled_tools",
        "enabled",
    }
)
_JSON_TYPES = ("stdio", "http", "streamable-http", "streamable_http")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpConfigError(Exception):
    """One line naming the file and the key."""


@dataclass(frozen=True)
class ServerSpec:
    """One configured server, its variables expanded."""

    name: str
    source: Source
    origin: str
    """The file it came from (shown in `/mcp` and in trust questions)."""
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    enabled: bool = True
    problem: str = ""
    """Why it cannot start as configured (an unset variable); empty when it can."""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """The entry as the file wrote it, before expansion: what trust is keyed on."""

    @property
    def from_project(self) -> bool:
        """Came with the repository (project settings or `.mcp.json`): needs the person's yes."""
        return self.source in ("project", "mcp.json")

    def fingerprint(self) -> str:
        """Identifies what would run: transport, command, args, env, cwd, url and headers as
        the file wrote them. Any change (even of an env value) asks the person again."""
        raw = self.raw
        what = [self.name, self.transport, *(raw.get(k) for k in ("command", "args", "env", "cwd", "url", "headers"))]
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()

    def wants_tool(self, tool: str) -> bool:
        """`enabled_tools` (when given) and `disabled_tools` say which tools are offered."""
        if self.enabled_tools is not None and tool not in self.enabled_tools:
            return False
        return tool not in self.disabled_tools

    def describe(self) -> str:
        """What runs, in one line: the command line (quoted as a shell would need it, so
        `bash -c 'sleep 4; exec srv'` is not shown as four words) or the URL."""
        if self.transport == "http":
            return self.url
        return shlex.join([self.command, *self.args])


# --- checking ---------------------------------------------------------------------------


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _str_table(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _positive(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and value > 0


_TOML_CHECKS: dict[str, tuple[Any, str]] = {
    "command": (lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string"),
    "args": (_str_list, "a list of strings"),
    "env": (_str_table, "a table of strings"),
    "cwd": (lambda v: isinstance(v, str), "a string"),
    "url": (lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string"),
    "headers": (_str_table, "a table of strings"),
    "startup_timeout_sec": (_positive, "a number of seconds > 0"),
    "tool_timeout_sec": (_positive, "a number of seconds > 0"),
    "enabled_tools": (_str_list, "a list of strings"),
    "disabled_tools": (_str_list, "a list of strings"),
    "enabled": (lambda v: isinstance(v, bool), "true or false"),
}


def check_server(name: str, entry: Any) -> str | None:
    """What is wrong with one `[mcp_servers.NAME]` table (one line naming the key), or None."""
    where = f"[mcp_servers.{name}]"
    if not name.strip():
        return "[mcp_servers] a server name must not be empty"
    if not isinstance(entry, dict):
        return f"{where} must be a table"
    if unknown := sorted(set(entry) - TOML_KEYS):
        return f"{where} unknown key '{unknown[0]}' (known: {', '.join(sorted(TOML_KEYS))})"
    for key, value in entry.items():
        ok, wanted = _TOML_CHECKS[key]
        if not ok(value):
            return f"{where} {key} must be {wanted}"
    if ("command" in entry) == ("url" in entry):
        return f"{where} needs either command (a local server) or url (an HTTP server)"
    return None


def check_servers_table(table: Any) -> str | None:
    """What is wrong with a `[mcp_servers]` table (its first bad server), or None."""
    if not isinstance(table, dict):
        return "'mcp_servers' must be a table of servers ([mcp_servers.NAME])"
    return next((problem for name, entry in table.items() if (problem := check_server(name, entry))), None)


def usable_servers(table: dict[str, Any], refuse: Callable[[str], None]) -> dict[str, Any]:
    """The well-formed servers of a settings file's `[mcp_servers]`; `refuse` hears of each other."""
    usable = {}
    for name, entry in table.items():
        if problem := check_server(name, entry):
            refuse(problem)
        else:
            usable[name] = entry
    return usable


def _check_json_entry(name: str, entry: Any) -> str | None:
    where = f"mcpServers.{name}"
    if not name.strip():
        return "mcpServers: a server name must not be empty"
    if not isinstance(entry, dict):
        return f"{where} must be an object"
    kind = entry.get("type")
    if kind is not None and kind not in (*_JSON_TYPES, "sse"):
        return f'{where}.type must be "stdio" or "http", not {kind!r}'
    checks = {"command": _TOML_CHECKS["command"], "args": _TOML_CHECKS["args"], "env": _TOML_CHECKS["env"]}
    checks |= {"url": _TOML_CHECKS["url"], "headers": _TOML_CHECKS["headers"], "cwd": _TOML_CHECKS["cwd"]}
    for key, (ok, wanted) in checks.items():
        if key in entry and not ok(entry[key]):
            return f"{where}.{key} must be {wanted}"
    if "command" not in entry and "url" not in entry:
        return f"{where} needs either command (a local server) or url (an HTTP server)"
    return None


# --- expanding ----------------------------------------------------------------------


def expand(text: str, env: Mapping[str, str], missing: list[str]) -> str:
    """`${VAR}` and `${VAR:-default}` (the default also when VAR is empty); unset names
    without a default are added to `missing` and expand to nothing."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        if value is None and name not in missing:
            missing.append(name)
        return value or ""

    return _VARIABLE.sub(one, text)


def _spec(name: str, entry: Mapping[str, Any], source: Source, origin: Path, env: Mapping[str, str]) -> ServerSpec:
    missing: list[str] = []

    def text(value: Any) -> str:
        return expand(str(value), env, missing)

    kind = entry.get("type")
    transport: Transport = "http" if "url" in entry else "stdio"
    problem = ""
    if kind == "sse":
        problem = 'the legacy SSE transport is not supported: use the server\'s Streamable HTTP endpoint (type "http")'
    elif kind == "stdio" and "command" not in entry:
        problem = 'type "stdio" needs a command'
    enabled_tools = entry.get("enabled_tools")
    spec = ServerSpec(
        name=name,
        source=source,
        origin=str(origin),
        transport=transport,
        command=text(entry.get("command", "")),
        args=tuple(text(a) for a in entry.get("args", [])),
        env={k: text(v) for k, v in entry.get("env", {}).items()},
        cwd=text(entry["cwd"]) if "cwd" in entry else None,
        url=text(entry.get("url", "")),
        headers={k: text(v) for k, v in entry.get("headers", {}).items()},
        startup_timeout=float(entry.get("startup_timeout_sec", DEFAULT_STARTUP_TIMEOUT)),
        tool_timeout=float(entry.get("tool_timeout_sec", DEFAULT_TOOL_TIMEOUT)),
        enabled_tools=tuple(enabled_tools) if enabled_tools is not None else None,
        disabled_tools=tuple(entry.get("disabled_tools", ())),
        enabled=bool(entry.get("enabled", True)),
        raw=dict(entry),
    )
    if missing and not problem:
        names = ", ".join(missing)
        problem = f"environment variable {names} is not set (used in {origin}); set it and reconnect"
    return replace(spec, problem=problem) if problem else spec


# --- reading ------------------------------------------------------------------------


def servers_from_table(
    table: Mapping[str, Any], source: Source, origin: Path, env: Mapping[str, str]
) -> list[ServerSpec]:
    """The (checked) `[mcp_servers]` table of a settings file, as specs."""
    return [_spec(name, entry, source, origin, env) for name, entry in table.items()]


def read_mcp_json(path: Path, source: Source, env: Mapping[str, str]) -> list[ServerSpec]:
    """A `.mcp.json` as Claude Code writes it; none when there is no file. Raises
    McpConfigError (one line: the file and the key) when it cannot be used."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"{path}: cannot read ({exc})") from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path}: invalid JSON: {exc.msg} (line {exc.lineno})") from exc
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f"{path}: mcpServers must be an object of servers")
    for name, entry in servers.items():
        if problem := _check_json_entry(name, entry):
            raise McpConfigError(f"{path}: {problem}")
    return [_spec(name, entry, source, path, env) for name, entry in servers.items()]


def read_flag_file(path: Path, env: Mapping[str, str]) -> list[ServerSpec]:
    """`--mcp-config FILE`: TOML (`[mcp_servers.NAME]`) by its suffix, else `.mcp.json` JSON."""
    if path.suffix.lower() != ".toml":
        if not path.is_file():
            raise McpConfigError(f"{path}: no such file (--mcp-config)")
        return read_mcp_json(path, "flag", env)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise McpConfigError(f"{path}: no such file (--mcp-config)") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"{path}: cannot read ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise McpConfigError(f"{path}: invalid TOML: {exc}") from exc
    if unknown := sorted(set(data) - {"mcp_servers"}):
        raise McpConfigError(f"{path}: unknown key '{unknown[0]}' (known: mcp_servers)")
    table = data.get("mcp_servers", {})
    if problem := check_servers_table(table):
        raise McpConfigError(f"{path}: {problem}")
    return servers_from_table(table, "flag", path, env)


def merge(*layers: list[ServerSpec]) -> list[ServerSpec]:
    """Servers by name, the first layer that names one winning (layers highest first);
    in the order of the lowest layer that names each, then the new ones above it."""
    chosen: dict[str, ServerSpec] = {}
    for layer in layers:
        for spec in layer:
            chosen.setdefault(spec.name, spec)
    order: list[str] = []
    for layer in reversed(layers):
        order += [s.name for s in layer if s.name not in order]
    return [chosen[name] for name in order]


def process_env() -> dict[str, str]:
    return dict(os.environ)
