"""What a configured MCP server is, and reading servers from the four places they come from.

Highest first: `--mcp-config FILE` (a `.mcp.json`-style JSON file, or TOML with
`[mcp_servers.NAME]` tables), `[mcp_servers.NAME]` in the project's
`.todo-agent/settings.toml`, the project's `.mcp.json` as Claude Code writes it
(`mcpServers`, `type` stdio/http, `command`, `args`, `env`, `url`, `headers`), and the
user's settings file. A name defined in several places is taken whole from the highest,
except that a project's server never takes the name of one of the person's own (`merge`).
TOML keys are Codex's: `command`, `args`, `env`, `cwd`, `url`, `headers`,
`startup_timeout_sec`, `tool_timeout_sec`, `enabled_tools`, `disabled_tools`, `enabled`.

`${VAR}` and `${VAR:-default}` expand in every string (command, args, env values, cwd, url,
headers). A variable that is unset (and has no default) does not drop the server: it is
kept with a `problem` naming the variable, and shown as failed. A project's server never
reads the variable holding the model's API key (`withhold`). A broken file is one line
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
from typing import TYPE_CHECKING, Any, Literal

from ..repo_files import RepoFileError, load_json, load_toml, read_repo_text
from ..terminal import reveal_line

if TYPE_CHECKING:  # the shell reader stays off the first frame (settings are read before it)
    from ..permissions.workspace_code import Footprint

Source = Literal["flag", "project", "mcp.json", "user"]
Transport = Literal["stdio", "http"]

DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_TOOL_TIMEOUT = 120.0
MCP_JSON = ".mcp.json"
MAX_CONFIG_BYTES = 1_000_000
"""An `.mcp.json` (or `--mcp-config` file) past this is not used: a repository's file may be endless."""

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
    withheld: tuple[str, ...] = ()
    """Variables of the person's environment it names but does not get (`withhold`): the
    one holding the model's API key, for a server the repository brought."""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """The entry as the file wrote it, before expansion: what trust is keyed on."""
    code: Footprint | None = field(default=None, repr=False)
    """The workspace code its command runs (`with_code`): a project server's trust covers it."""

    @property
    def from_project(self) -> bool:
        """Came with the repository (project settings or `.mcp.json`): needs the person's yes."""
        return self.source in ("project", "mcp.json")

    def fingerprint(self) -> str:
        """Identifies what would run: transport, command, args, env, cwd, url and headers as
        the file wrote them, and the workspace code the command runs (`code`). Any change
        (even of an env value, or of a line of its script) asks the person again."""
        raw = self.raw
        what = [self.name, self.transport, *(raw.get(k) for k in ("command", "args", "env", "cwd", "url", "headers"))]
        if self.code is not None and self.code.digest:  # (a server that runs none keeps its old fingerprint)
            what.append(self.code.digest)
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()

    def with_code(self, workspace: Path) -> ServerSpec:
        """This spec with the footprint of the workspace code its command runs (blocking:
        hashes files). An HTTP server runs nothing here."""
        if self.transport != "stdio" or not self.command:
            return self
        from ..permissions.workspace_code import footprint_of_argv  # here: see the import above

        cwd = Path(self.cwd) if self.cwd else workspace
        cwd = cwd if cwd.is_absolute() else workspace / cwd
        return replace(self, code=footprint_of_argv([self.command, *self.args], cwd, workspace))

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

    def as_written(self) -> str:
        """`describe()` as the file wrote it, `${VAR}`s unexpanded: what a question shows,
        so that a variable's value (a token an argument reads) never reaches the screen."""
        raw = self.raw
        if self.transport == "http":
            return raw["url"] if isinstance(raw.get("url"), str) else self.url
        args = raw.get("args")
        if not isinstance(raw.get("command"), str) or not (args is None or _str_list(args)):
            return self.describe()
        return shlex.join([raw["command"], *(args or [])])


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


def expand(text: str, env: Mapping[str, str], missing: list[str], withheld: frozenset[str] = frozenset()) -> str:
    """`${VAR}` and `${VAR:-default}` (the default also when VAR is empty); unset names
    without a default are added to `missing` and expand to nothing. A `withheld` name
    expands to nothing whatever it holds (its default too: see `withhold`)."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in withheld:
            return ""
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        if value is None and name not in missing:
            missing.append(name)
        return value or ""

    return _VARIABLE.sub(one, text)


def variables(text: str) -> list[str]:
    """The names of the variables `text` reads (`${VAR}`, `${VAR:-default}`), in order."""
    return list(dict.fromkeys(match.group(1) for match in _VARIABLE.finditer(text)))


def environment_reads(spec: ServerSpec) -> list[tuple[str, str, list[str]]]:
    """Each value of `spec` that reads the person's environment, as the file wrote it:
    (where: `command`, `arg 2`, `env TOKEN`, `cwd`, `url`, `header X-Api-Key`; the text;
    the variables it reads). What the trust question shows beside the command line."""
    raw = spec.raw
    found: list[tuple[str, str]] = []
    for key in ("command", "cwd", "url"):
        if isinstance(raw.get(key), str):
            found.append((key, raw[key]))
    args = raw.get("args")
    if isinstance(args, list):
        found += [(f"arg {index}", arg) for index, arg in enumerate(args, start=1) if isinstance(arg, str)]
    for key, label in (("env", "env"), ("headers", "header")):
        table = raw.get(key)
        if isinstance(table, Mapping):
            found += [(f"{label} {name}", value) for name, value in table.items() if isinstance(value, str)]
    return [(where, text, names) for where, text in found if (names := variables(text))]


def withhold(
    specs: list[ServerSpec], variable: str, env: Mapping[str, str], notices: list[str] | None = None
) -> list[ServerSpec]:
    """A server the repository brought never reads `variable` (the one holding the model's
    API key, `api_key_env`): in its command, args, env, cwd, URL or headers it expands to
    nothing, its default included (a cloned `.mcp.json` would otherwise send the key in a
    header to a URL of its choosing, once the person says yes to what looks like a build
    tag), and `notices` hears of each such server once. The person's own servers (user
    file, `--mcp-config`) may read it."""
    kept: list[ServerSpec] = []
    for spec in specs:
        if not (spec.from_project and variable and any(variable in names for _, _, names in environment_reads(spec))):
            kept.append(spec)
            continue
        kept.append(_spec(spec.name, spec.raw, spec.source, Path(spec.origin), env, withheld=frozenset({variable})))
        if notices is not None:
            notices.append(
                f"MCP server {spec.name} ({spec.origin}) reads ${{{variable}}}, the variable that holds your "
                "model's API key: a project's server never gets it, so it reads as empty there"
            )
    return kept


def _spec(
    name: str,
    entry: Mapping[str, Any],
    source: Source,
    origin: Path,
    env: Mapping[str, str],
    *,
    withheld: frozenset[str] = frozenset(),
) -> ServerSpec:
    missing: list[str] = []
    read: list[str] = []

    def text(value: Any) -> str:
        read.extend(variables(str(value)))
        return expand(str(value), env, missing, withheld)

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
        withheld=tuple(sorted(withheld.intersection(read))),
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
        text = read_repo_text(path, MAX_CONFIG_BYTES)
        if text is None:
            return []
        document = load_json(text)
    except RepoFileError as exc:
        raise McpConfigError(f"{path}: cannot be used: {exc}") from None
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
        if not path.exists():
            raise McpConfigError(f"{path}: no such file (--mcp-config)")
        return read_mcp_json(path, "flag", env)
    try:
        text = read_repo_text(path, MAX_CONFIG_BYTES)
        if text is None:
            raise McpConfigError(f"{path}: no such file (--mcp-config)")
        data = load_toml(text)
    except RepoFileError as exc:
        raise McpConfigError(f"{path}: cannot be used: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise McpConfigError(f"{path}: invalid TOML: {exc}") from exc
    if unknown := sorted(set(data) - {"mcp_servers"}):
        raise McpConfigError(f"{path}: unknown key '{unknown[0]}' (known: mcp_servers)")
    table = data.get("mcp_servers", {})
    if problem := check_servers_table(table):
        raise McpConfigError(f"{path}: {problem}")
    return servers_from_table(table, "flag", path, env)


def merge(*layers: list[ServerSpec], notices: list[str] | None = None) -> list[ServerSpec]:
    """Servers by name, the first layer that names one winning (layers highest first);
    in the order of the lowest layer that names each, then the new ones above it.

    Except that the person's own name is theirs: a server the repository brought (project
    settings, `.mcp.json`) named like one of the person's (user file, `--mcp-config`) is
    not used, and `notices` hears of it once. The person's rules, hooks and habits name
    servers (`allow = ["mcp__github"]`): a project's `github` in its place would inherit
    all of them the moment it is accepted, so it keeps out of the way instead. (Renaming
    it would keep it usable, but under a name no one chose, which rules may still match.)"""
    own = {spec.name: spec for layer in layers for spec in layer if not spec.from_project}
    chosen: dict[str, ServerSpec] = {}
    for layer in layers:
        for spec in layer:
            if spec.from_project and spec.name in own:
                if notices is not None:
                    notices.append(
                        f"MCP server {spec.name} from {spec.origin} not used: one of your own servers has that name "
                        f"({own[spec.name].origin}), and a project's server never takes it; rename it there to use it"
                    )
                continue
            chosen.setdefault(spec.name, spec)
    order: list[str] = []
    for layer in reversed(layers):
        order += [s.name for s in layer if s.name not in order]
    return [chosen[name] for name in order]


def process_env() -> dict[str, str]:
    return dict(os.environ)


def environment_lines(spec: ServerSpec) -> list[str]:
    """Each value that reads one of the person's environment variables, as the file wrote
    it, and the variables' names: a header reading `${OPENAI_API_KEY}` must not pass for a
    build tag. Plain text (every byte revealed), never markup."""
    lines = []
    for where, text, names in environment_reads(spec):
        said = [
            f"your environment variable {name}"
            + (", which holds your model's API key: not passed, it reads as empty" if name in spec.withheld else "")
            for name in names
        ]
        lines.append(f"  {reveal_line(where)}: {reveal_line(text)} (reads {'; '.join(said)})")
    return lines
