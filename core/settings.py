"""Settings files (TOML) and the resolved configuration a run uses.

Precedence, highest first: command-line flags, environment variables, the project file
`.todo-agent/settings.toml`, the user file `<config dir>/todo-agent/settings.toml`, defaults.
`[permissions]` lists add up across the two files instead of replacing each other.

Every settings file is read as a file a repository brought (`core/repo_files.py`): a
regular file of at most `MAX_SETTINGS_BYTES`, nested at most `MAX_NESTING` brackets deep.
A file's deny rules are never dropped quietly. A file that cannot be read as TOML, or
whose `[permissions]` table is wrong in any way, stops the program with its path, line
and problem (`SettingsError`): running on without the rules it may hold would be running
with fewer denials than the person wrote. Anything else that is wrong (an unknown key, a
value of the wrong type, one bad `[[hooks.*]]` entry) is refused on its own with a
warning that names it, and the rest of the file applies.

A project file arrives with a cloned repository, so it is trusted less: it cannot set
`permission_mode = "bypassPermissions"`, `base_url`, `api_key_env`, a `script:` model or
`task_list` (each ignored with a warning: the middle two could send the user's key to a
server the repository chose, a script makes whatever tool calls its file says, and a shared
list may hold another project's plan), and
the allow rules it brings still apply but are listed at start-up (`Runtime.startup_notices`).

Hooks add up across the two files too, and each keeps the file it came from: the
project's run only once the person has trusted them (`core/hooks/trust.py`). The user
file may set `allow_project_hooks = true` to trust every project's hooks without asking;
in a project file that key is ignored with a warning (a repository cannot vouch for itself).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

from .hooks.spec import HOOK_EVENTS, HookSpec, specs_from_table
from .mcp.config import (
    MCP_JSON,
    McpConfigError,
    ServerSpec,
    merge,
    read_flag_file,
    read_mcp_json,
    servers_from_table,
    usable_servers,
    withhold,
)
from .permissions.modes import MODES, PermissionMode
from .places import user_config_dir
from .repo_files import RepoFileError, load_toml, read_repo_text
from .sandbox import MODES as SANDBOX_MODES
from .sandbox import SandboxSettings

DEFAULT_MODEL = "gpt-4o-mini"
TaskVersion = Literal["v1", "v2", "off"]
"""The task tools: v2 TaskCreate/Update/List/Get, v1 TodoWrite, off none (and no reminders)."""
PanelPlace = Literal["right", "bottom", "hidden"]
NotifyMode = Literal["auto", "bell", "off"]
"""`[ui] notify`: bell and desktop notification, the bell alone, or nothing (`tui/notify.py`)."""

_SCHEMA: dict[str, type | tuple[type, ...]] = {
    "model": str,
    "base_url": str,
    "api_key_env": str,
    "context_window": int,
    "compact_threshold": (int, float),
    "max_output_tokens": int,
    "max_turns": int,
    "max_repeated_calls": int,
    "max_parallel_agents": int,
    "agent_max_turns": int,
    "check_timeout": (int, float),
    "goal_max_turns": int,
    "goal_max_tokens": int,
    "goal_max_minutes": (int, float),
    "task_list": str,
    "request_retries": int,
    "request_retry_wait": (int, float),
    "reminder_interval": int,
    "stale_after_calls": int,
    "first_byte_timeout": (int, float),
    "reasoning_field": str,
    "reasoning_effort": str,
    "wire_api": str,
    "tasks": str,
    "permission_mode": str,
    "permissions": dict,
    "hooks": dict,
    "allow_project_hooks": bool,
    "allow_project_mcp": bool,
    "images": bool,
    "mcp_servers": dict,
    "ui": dict,
    "sandbox": dict,
}


EFFORTS = ("none", "minimal", "low", "medium", "high")
"""`reasoning_effort` levels, as OpenAI names them (servers take what they know of them)."""
WIRE_APIS = ("auto", "chat", "responses")

MAX_SETTINGS_BYTES = 1_000_000
"""A settings file past this is refused (exit 2): a repository's file may be endless."""


class SettingsError(Exception):
    pass


_LIST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def valid_list_name(name: str) -> bool:
    """A shared task list's name (`--task-list`): one safe file name."""
    return _LIST_NAME.fullmatch(name) is not None


def user_settings_path() -> Path:
    return user_config_dir() / "settings.toml"


def project_settings_path(workspace: Path) -> Path:
    return workspace / ".todo-agent" / "settings.toml"


def read_settings_file(path: Path) -> tuple[dict[str, Any], list[str]]:
    """Parse and validate one file: its usable settings, and a warning per setting or hook
    entry refused. Raises SettingsError (path, line) for what would lose deny rules."""
    try:
        text = read_repo_text(path, MAX_SETTINGS_BYTES)
        data = {} if text is None else load_toml(text)
    except RepoFileError as exc:
        raise SettingsError(f"{path}: cannot be used: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: invalid TOML: {exc}") from exc
    if text is None:
        return {}, []
    warnings: list[str] = []
    for key, value in list(data.items()):
        if key == "permissions":
            if problem := _check(key, value):
                raise SettingsError(f"{path}: {problem}")
        elif key == "hooks" and isinstance(value, dict):
            data[key] = _usable_hooks(value, lambda why: warnings.append(f"{path}: {why}; that hook is ignored"))
        elif key == "mcp_servers" and isinstance(value, dict):
            data[key] = usable_servers(value, lambda why: warnings.append(f"{path}: {why}; that server is ignored"))
        elif problem := _check(key, value):
            if isinstance(value, dict) and {"allow", "deny"} & set(value):
                raise SettingsError(f"{path}: {problem}, and it holds permission rules (did you mean [permissions]?)")
            warnings.append(f"{path}: {problem}; that setting is ignored")
            del data[key]
    return data, warnings


def _check(key: str, value: Any) -> str | None:
    expected = _SCHEMA.get(key)
    if expected is None:
        return f"unknown key '{key}' (known: {', '.join(sorted(_SCHEMA))})"
    if (isinstance(value, bool) and expected is not bool) or not isinstance(value, expected):
        names = expected.__name__ if isinstance(expected, type) else " or ".join(t.__name__ for t in expected)
        return f"'{key}' must be {names}, not {type(value).__name__}"
    check = _VALUE_CHECKS.get(key)
    return check(value) if check else None


def _check_permissions(permissions: dict[str, Any]) -> str | None:
    for list_name, rules in permissions.items():
        if list_name not in ("allow", "deny"):
            return f"[permissions] unknown key '{list_name}' (known: allow, deny)"
        if not _is_str_list(rules):
            return f"[permissions] {list_name} must be a list of strings"
        from .permissions.rules import Rule

        for rule in rules:
            try:
                Rule.parse(rule)
            except ValueError as exc:
                return f"[permissions] {list_name}: {exc}"
    return None


def _usable_hooks(hooks: dict[str, Any], refuse: Callable[[str], None]) -> dict[str, list[dict[str, Any]]]:
    """The `[[hooks.<Event>]]` entries that are well formed; `refuse` hears about each other one."""
    usable: dict[str, list[dict[str, Any]]] = {}
    for event, entries in hooks.items():
        if event not in HOOK_EVENTS:
            refuse(f"[hooks] unknown event '{event}' (known: {', '.join(HOOK_EVENTS)})")
        elif not isinstance(entries, list):
            refuse(f"[hooks] {event} must be a list of tables ([[hooks.{event}]])")
        else:
            for number, entry in enumerate(entries, 1):
                if problem := _check_hook(event, entry):
                    refuse(f"[[hooks.{event}]] #{number}: {problem}")
                else:
                    usable.setdefault(event, []).append(entry)
    return usable


def _check_hook(event: str, entry: Any) -> str | None:
    """What is wrong with one `[[hooks.<Event>]]` entry (`command` required, `matcher`, `timeout`)."""
    if not isinstance(entry, dict):
        return f"must be a table ([[hooks.{event}]]), not {type(entry).__name__}"
    if unknown := sorted(set(entry) - {"matcher", "command", "timeout"}):
        return f"unknown key '{unknown[0]}' (known: command, matcher, timeout)"
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        return "command must be a non-empty string"
    matcher = entry.get("matcher", "")
    if not isinstance(matcher, str):
        return "matcher must be a string"
    if matcher.strip() not in ("", "*"):  # both mean every tool, as in Claude Code
        try:
            re.compile(matcher)
        except re.error as exc:
            return f"matcher is not a valid regular expression ({exc})"
    timeout = entry.get("timeout", 1)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        return "timeout must be a number of seconds > 0"
    return None


def _check_sandbox(table: dict[str, Any]) -> str | None:
    for key, value in table.items():
        if key == "mode" and value not in SANDBOX_MODES:
            return f"[sandbox] mode must be one of {', '.join(SANDBOX_MODES)}, not {str(value)[:40]!r}"
        if key == "network" and not (isinstance(value, bool) or _is_str_list(value)):
            return "[sandbox] network must be true, false or a list of domains"
        if key == "writable" and not _is_str_list(value):
            return "[sandbox] writable must be a list of paths"
        if key in ("auto_allow", "allow_unsandboxed") and not isinstance(value, bool):
            return f"[sandbox] {key} must be true or false"
        if key not in ("mode", "network", "writable", "auto_allow", "allow_unsandboxed"):
            return f"[sandbox] unknown key '{key}' (known: mode, network, writable, auto_allow, allow_unsandboxed)"
    return None


def _check_ui(ui: dict[str, Any]) -> str | None:
    for key, value in ui.items():
        if key not in ("task_panel", "notify"):
            return f"[ui] unknown key '{key}' (known: notify, task_panel)"
        if key == "task_panel" and value not in ("right", "bottom", "hidden"):  # a non-string is never one
            return '[ui] task_panel must be "right", "bottom" or "hidden"'
        if key == "notify" and value not in ("auto", "bell", "off"):
            return '[ui] notify must be "auto", "bell" or "off"'
    return None


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _when(ok: Callable[[Any], bool], message: str) -> Callable[[Any], str | None]:
    return lambda value: None if ok(value) else message


# Run after the type check, so each sees the type `_SCHEMA` names.
_VALUE_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "tasks": _when(lambda v: v in ("v1", "v2", "off"), '\'tasks\' must be "v1", "v2" or "off"'),
    "permission_mode": _when(lambda v: v in MODES, f"'permission_mode' must be one of {', '.join(MODES)}"),
    "reminder_interval": _when(lambda v: v >= 0, "'reminder_interval' must be >= 0 (0 turns reminders off)"),
    "stale_after_calls": _when(lambda v: v >= 0, "'stale_after_calls' must be >= 0 (0 turns that reminder off)"),
    "first_byte_timeout": _when(lambda v: v > 0, "'first_byte_timeout' must be a number of seconds > 0"),
    "reasoning_field": _when(
        lambda v: re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", v) is not None,
        "'reasoning_field' must be a field name (letters, digits, _)",
    ),
    "reasoning_effort": _when(lambda v: v in EFFORTS, f"'reasoning_effort' must be one of {', '.join(EFFORTS)}"),
    "wire_api": _when(lambda v: v in WIRE_APIS, f"'wire_api' must be one of {', '.join(WIRE_APIS)}"),
    "context_window": _when(lambda v: v >= 512, "'context_window' must be >= 512 tokens"),
    "compact_threshold": _when(lambda v: 0.1 <= v <= 0.95, "'compact_threshold' must be between 0.1 and 0.95"),
    "max_output_tokens": _when(lambda v: v >= 16, "'max_output_tokens' must be >= 16"),
    "max_turns": _when(lambda v: v >= 1, "'max_turns' must be >= 1"),
    "max_repeated_calls": _when(lambda v: v == 0 or v >= 2, "'max_repeated_calls' must be 0 (the guard off) or >= 2"),
    "max_parallel_agents": _when(lambda v: 1 <= v <= 16, "'max_parallel_agents' must be between 1 and 16"),
    "agent_max_turns": _when(lambda v: v >= 1, "'agent_max_turns' must be >= 1"),
    "check_timeout": _when(lambda v: 1 <= v <= 3600, "'check_timeout' must be 1 to 3600 seconds"),
    "goal_max_turns": _when(lambda v: v >= 1, "'goal_max_turns' must be >= 1"),
    "goal_max_tokens": _when(lambda v: v >= 0, "'goal_max_tokens' must be >= 0 (0: no limit)"),
    "goal_max_minutes": _when(lambda v: v >= 0, "'goal_max_minutes' must be >= 0 (0: no limit)"),
    "task_list": _when(valid_list_name, "'task_list' must be letters, digits, '.', '_' or '-'"),
    "request_retries": _when(lambda v: 0 <= v <= 20, "'request_retries' must be between 0 (no retries) and 20"),
    "request_retry_wait": _when(lambda v: 0 <= v <= 3600, "'request_retry_wait' must be 0 to 3600 seconds"),
    "ui": _check_ui,
    "sandbox": _check_sandbox,
    "permissions": _check_permissions,
}


@dataclass
class Config:
    """Everything a run needs to know, resolved once at start-up."""

    workspace: Path
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    permission_mode: PermissionMode = "default"
    tasks_version: TaskVersion = "v2"
    reminder_interval: int = 6
    stale_after_calls: int = 15
    """Tool calls with no plan change after which the task in progress is named (0: never)."""
    context_window: int | None = None
    """Tokens; None: ask the server (`core/model/server.py`), else a default (`core/window/tokens.py`)."""
    compact_threshold: float = 0.8
    first_byte_timeout: float = 60.0
    """Seconds to wait for a server to start answering a request."""
    reasoning_field: str = ""
    """The delta field a server streams reasoning in, when it is neither of the known ones
    (`reasoning_content`, `reasoning`)."""
    reasoning_effort: str = ""
    """How hard a reasoning model thinks (`EFFORTS`); empty: the server's default, not sent."""
    wire_api: str = "auto"
    """`chat` (chat completions), `responses` (OpenAI's Responses API) or `auto`: chat,
    switching a model to Responses when the server says it is only served there."""
    max_output_tokens: int | None = None
    """`max_tokens` of each response; None: a quarter of the window, 256 to 8192."""
    max_turns: int = 200
    """Model requests in one user turn before the agent stops."""
    max_repeated_calls: int = 5
    """Identical tool calls in a row that stop a turn as a loop; 0 turns the guard off."""
    max_parallel_agents: int = 3
    """Sub-agents running at once; more `Agent` calls wait for a free slot."""
    agent_max_turns: int = 30
    """A sub-agent's model requests when its `Agent` call does not say."""
    check_timeout: float = 600.0
    """Seconds a task's check (`verify`) may run before it is killed."""
    goal_max_turns: int = 200
    """Model requests across a whole goal (`/goal`, `--goal`), sub-agents' included."""
    goal_max_tokens: int = 0
    """Tokens (prompt and completion, summed over its requests) a goal may spend; 0: no limit."""
    goal_max_minutes: float = 0.0
    """Minutes a goal may run; 0: no limit."""
    task_list: str | None = None
    """A shared task list's name (`--task-list`, `TODO_AGENT_TASK_LIST`): the session
    works that list instead of its own, with every other process using it."""
    request_retries: int = 6
    """Retries of a request that failed in a way that may pass (503, 429, a dropped connection)."""
    request_retry_wait: float = 60.0
    """Seconds of waiting in all across one request's retries."""
    model_chosen: bool = False
    """Whether a flag, variable or setting named the model (else a server's own may be used)."""
    task_panel: PanelPlace = "right"
    notify: NotifyMode = "auto"
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    project_allow: list[str] = field(default_factory=list)
    """The allow rules that came from the project file (listed at start-up)."""
    hooks: list[HookSpec] = field(default_factory=list)
    """User hooks first, then the project's (each spec knows its file)."""
    allow_project_hooks: bool = False
    """Run project hooks without asking (user file key, or `--allow-project-hooks`)."""
    mcp_servers: list[ServerSpec] = field(default_factory=list)
    """MCP servers from `--mcp-config`, the project file, `.mcp.json` and the user file (`core/mcp/config.py`)."""
    allow_project_mcp: bool = False
    """Start the project's MCP servers without asking (user file key, or `--allow-project-mcp`)."""
    images: bool = False
    """The model takes images: `@` image files go with the prompt (`core/input/mentions.py`), a
    Read's and an MCP tool's images follow its result (`core/tools/images.py`)."""
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    """`[sandbox]`: where the model's commands run (`core/sandbox.py`)."""
    project_sandbox_mode: str = ""
    """The project file's `[sandbox] mode`, applied only where it is stricter than the user's."""
    warnings: list[str] = field(default_factory=list)
    demo: bool = False

    @property
    def scripted(self) -> bool:
        return self.model.startswith("script:")

    @property
    def has_model(self) -> bool:
        """Is there anything to talk to? (A key, a server URL, or a script.)"""
        return self.scripted or bool(self.api_key) or bool(self.base_url)


def load_config(
    workspace: Path,
    *,
    flags: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    headless: bool = False,
) -> Config:
    """Merge defaults, settings files, environment and flags (flags are None when unset).

    Raises SettingsError for a file that cannot be used without losing its deny rules."""
    env = dict(os.environ) if env is None else env
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    config = Config(workspace=workspace.resolve(), tasks_version="v1" if headless else "v2")
    merged: dict[str, Any] = {}
    project = project_settings_path(workspace)
    servers: dict[str, list[ServerSpec]] = {}
    for path in (user_settings_path(), project):
        data, warnings = read_settings_file(path)  # SettingsError: see the module docstring
        config.warnings += warnings
        if path == project:
            _restrict_project_settings(config, path, data)
        config.hooks += specs_from_table(data.pop("hooks", {}), "project" if path == project else "user")
        if path == project:
            servers["project"] = servers_from_table(data.pop("mcp_servers", {}), "project", path, env)
        else:
            servers["user"] = servers_from_table(data.pop("mcp_servers", {}), "user", path, env)
        _merge(merged, data)
    _apply_settings(config, merged)
    config.allow_project_hooks = config.allow_project_hooks or bool(flags.get("allow_project_hooks"))
    config.mcp_servers = _mcp_servers(config, workspace, flags.get("mcp_config"), servers, env)
    config.allow_project_mcp = config.allow_project_mcp or bool(flags.get("allow_project_mcp"))
    key_env = config.api_key_env
    config.api_key = env.get(key_env) or None
    config.base_url = env.get("OPENAI_BASE_URL") or config.base_url
    config.model = env.get("TODO_AGENT_MODEL") or config.model
    config.model = flags.get("model", config.model)
    config.model_chosen = "model" in merged or bool(env.get("TODO_AGENT_MODEL")) or "model" in flags
    config.base_url = flags.get("base_url", config.base_url) or None
    config.permission_mode = cast(PermissionMode, flags.get("permission_mode", config.permission_mode))
    config.tasks_version = cast(TaskVersion, flags.get("tasks", config.tasks_version))
    if "sandbox" in flags:  # the person's choice for this run, over both files
        config.sandbox = replace(config.sandbox, mode=flags["sandbox"])
    config.context_window = flags.get("context_window", config.context_window)
    config.reasoning_effort = flags.get("reasoning_effort", config.reasoning_effort)
    config.wire_api = flags.get("wire_api", config.wire_api)
    config.max_turns = flags.get("max_turns", config.max_turns)
    config.task_list = flags.get("task_list") or env.get("TODO_AGENT_TASK_LIST") or config.task_list
    if config.task_list is not None and not valid_list_name(config.task_list):
        config.warnings.append(
            f"task list name {config.task_list[:64]!r} ignored: use letters, digits, '.', '_' or '-'"
        )
        config.task_list = None
    return config


def _mcp_servers(
    config: Config, workspace: Path, flag_file: str | None, servers: dict[str, list[ServerSpec]], env: dict[str, str]
) -> list[ServerSpec]:
    """Highest first: `--mcp-config`, the project file, `.mcp.json`, the user file."""
    flagged: list[ServerSpec] = []
    from_json: list[ServerSpec] = []
    try:
        flagged = read_flag_file(Path(flag_file).expanduser(), env) if flag_file else []
    except McpConfigError as exc:
        config.warnings.append(f"MCP servers ignored: {exc}")
    try:
        from_json = read_mcp_json(workspace / MCP_JSON, "mcp.json", env)
    except McpConfigError as exc:
        config.warnings.append(f"MCP servers ignored: {exc}")
    merged = merge(flagged, servers.get("project", []), from_json, servers.get("user", []), notices=config.warnings)
    return withhold(merged, config.api_key_env, env, config.warnings)


def _restrict_project_settings(config: Config, path: Path, data: dict[str, Any]) -> None:
    """A project file comes with whatever repository was cloned: it may not switch
    approvals off or redirect the API key, and the allow rules it brings are shown at start-up."""
    if data.get("permission_mode") == "bypassPermissions":
        del data["permission_mode"]
        config.warnings.append(
            f'{path}: permission_mode = "bypassPermissions" ignored: a project file cannot turn approvals off '
            "(use --permission-mode or the user settings file)"
        )
    if str(data.get("model", "")).startswith("script:"):
        # A scripted "model" makes whatever tool calls its file says: in a permissive mode
        # that is a repository running its own commands.
        del data["model"]
        config.warnings.append(f"{path}: a script: model ignored: a project file cannot choose one (use --model)")
    if "allow_project_hooks" in data:
        del data["allow_project_hooks"]
        config.warnings.append(
            f"{path}: 'allow_project_hooks' ignored: a project cannot trust its own hooks "
            "(set it in the user settings file, or pass --allow-project-hooks)"
        )
    if "allow_project_mcp" in data:
        del data["allow_project_mcp"]
        config.warnings.append(
            f"{path}: 'allow_project_mcp' ignored: a project cannot trust its own MCP servers "
            "(set it in the user settings file, or pass --allow-project-mcp)"
        )
    if "task_list" in data:
        # A shared list may hold another project's confidential plan: joining one is the
        # person's choice (a flag, the environment, the user file), never a repository's.
        del data["task_list"]
        config.warnings.append(
            f"{path}: 'task_list' ignored: a project file cannot choose the shared task list "
            "(use --task-list, TODO_AGENT_TASK_LIST or the user settings file)"
        )
    for key in ("base_url", "api_key_env"):
        # Pointing the client elsewhere, or at another variable, could send the user's key
        # to a server the repository chose.
        if key in data:
            del data[key]
            config.warnings.append(f"{path}: '{key}' ignored: set it in the user settings file or with a flag")
    config.project_allow = list(data.get("permissions", {}).get("allow", []))
    _restrict_project_sandbox(config, path, data)


def _network(value: bool | list[str]) -> bool | tuple[str, ...]:
    return value if isinstance(value, bool) else tuple(d.strip() for d in value if d.strip()) or False


_STRICTNESS: dict[str, int] = {"off": 0, "auto": 1, "workspace-write": 2, "read-only": 3}


def _restrict_project_sandbox(config: Config, path: Path, data: dict[str, Any]) -> None:
    """A project file may narrow the sandbox (a stricter mode), never widen it: `network`,
    `writable` and a `mode` less strict than the user's are ignored with a warning. Run
    before the files merge, so the project's mode is kept as `project_sandbox_mode`."""
    table = data.pop("sandbox", None)
    if not isinstance(table, dict):
        return
    for key in ("network", "writable", "auto_allow", "allow_unsandboxed"):
        if key in table:
            config.warnings.append(
                f"{path}: [sandbox] {key} ignored: a project file cannot widen the sandbox (use the user settings file)"
            )
    mode = table.get("mode")
    if mode is None:
        return
    if mode == "off":
        config.warnings.append(
            f'{path}: [sandbox] mode = "off" ignored: a project file cannot turn the sandbox off '
            "(use --sandbox, /sandbox or the user settings file)"
        )
        return
    config.project_sandbox_mode = mode


def _merge(merged: dict[str, Any], data: dict[str, Any]) -> None:
    """Later files win key by key, except rule lists, which add up: a project file may
    add allow and deny rules but cannot drop the user's deny rules."""
    for key, value in data.items():
        if key == "permissions":
            earlier = merged.get(key, {})
            merged[key] = {
                name: list(dict.fromkeys([*earlier.get(name, []), *value.get(name, [])])) for name in ("allow", "deny")
            }
        else:
            merged[key] = value


def _apply_settings(config: Config, data: dict[str, Any]) -> None:
    config.model = data.get("model", config.model)
    config.base_url = data.get("base_url", config.base_url)
    config.api_key_env = data.get("api_key_env", config.api_key_env)
    config.permission_mode = data.get("permission_mode", config.permission_mode)
    config.tasks_version = data.get("tasks", config.tasks_version)
    config.reminder_interval = data.get("reminder_interval", config.reminder_interval)
    config.stale_after_calls = data.get("stale_after_calls", config.stale_after_calls)
    config.context_window = data.get("context_window", config.context_window)
    config.compact_threshold = float(data.get("compact_threshold", config.compact_threshold))
    config.first_byte_timeout = float(data.get("first_byte_timeout", config.first_byte_timeout))
    config.reasoning_field = data.get("reasoning_field", config.reasoning_field)
    config.reasoning_effort = data.get("reasoning_effort", config.reasoning_effort)
    config.wire_api = data.get("wire_api", config.wire_api)
    config.max_output_tokens = data.get("max_output_tokens", config.max_output_tokens)
    config.max_turns = data.get("max_turns", config.max_turns)
    config.max_repeated_calls = data.get("max_repeated_calls", config.max_repeated_calls)
    config.max_parallel_agents = data.get("max_parallel_agents", config.max_parallel_agents)
    config.agent_max_turns = data.get("agent_max_turns", config.agent_max_turns)
    config.check_timeout = float(data.get("check_timeout", config.check_timeout))
    config.goal_max_turns = data.get("goal_max_turns", config.goal_max_turns)
    config.goal_max_tokens = data.get("goal_max_tokens", config.goal_max_tokens)
    config.goal_max_minutes = float(data.get("goal_max_minutes", config.goal_max_minutes))
    config.task_list = data.get("task_list", config.task_list)
    config.request_retries = data.get("request_retries", config.request_retries)
    config.request_retry_wait = float(data.get("request_retry_wait", config.request_retry_wait))
    permissions = data.get("permissions", {})
    config.allow = list(permissions.get("allow", []))
    config.deny = list(permissions.get("deny", []))
    config.allow_project_hooks = data.get("allow_project_hooks", config.allow_project_hooks)
    config.allow_project_mcp = data.get("allow_project_mcp", config.allow_project_mcp)
    config.images = data.get("images", config.images)
    config.task_panel = data.get("ui", {}).get("task_panel", config.task_panel)
    config.notify = data.get("ui", {}).get("notify", config.notify)
    sandbox = data.get("sandbox", {})
    mode = sandbox.get("mode", config.sandbox.mode)
    if _STRICTNESS.get(config.project_sandbox_mode, 0) > _STRICTNESS[mode]:
        mode = config.project_sandbox_mode  # the project asked for a stricter one
    config.sandbox = SandboxSettings(
        mode,
        _network(sandbox.get("network", False)),
        tuple(sandbox.get("writable", ())),
        bool(sandbox.get("auto_allow", True)),
        bool(sandbox.get("allow_unsandboxed", False)),
    )
