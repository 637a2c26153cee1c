"""Settings files (TOML) and the resolved configuration a run uses.

Precedence, highest first: command-line flags, environment variables, the project file
`.todo-agent/settings.toml`, the user file `<config dir>/todo-agent/settings.toml`, defaults.
A broken settings file never stops the program: it is reported (path, line, what is
wrong) and ignored as a whole, so a half-read file cannot half-apply.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from .permissions import MODES, PermissionMode, Rule

DEFAULT_MODEL = "gpt-4o-mini"
TaskVersion = Literal["v1", "v2"]
PanelPlace = Literal["right", "bottom", "hidden"]

_SCHEMA: dict[str, type | tuple[type, ...]] = {
    "model": str,
    "base_url": str,
    "api_key_env": str,
    "context_window": int,
    "compact_threshold": (int, float),
    "reminder_interval": int,
    "tasks": str,
    "permission_mode": str,
    "permissions": dict,
    "hooks": dict,
    "ui": dict,
}


class SettingsError(Exception):
    pass


def user_settings_path() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("todo-agent", appauthor=False)) / "settings.toml"


def project_settings_path(workspace: Path) -> Path:
    return workspace / ".todo-agent" / "settings.toml"


def read_settings_file(path: Path) -> dict[str, Any]:
    """Parse and validate one file; raise SettingsError with path and line on any problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read ({exc})") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: invalid TOML: {exc}") from exc
    problems = [p for key, value in data.items() if (p := _check(key, value))]
    if problems:
        raise SettingsError(f"{path}: " + "; ".join(problems))
    return data


def _check(key: str, value: Any) -> str | None:
    expected = _SCHEMA.get(key)
    if expected is None:
        return f"unknown key '{key}' (known: {', '.join(sorted(_SCHEMA))})"
    if isinstance(value, bool) or not isinstance(value, expected):
        names = expected.__name__ if isinstance(expected, type) else " or ".join(t.__name__ for t in expected)
        return f"'{key}' must be {names}, not {type(value).__name__}"
    check = _VALUE_CHECKS.get(key)
    return check(value) if check else None


def _check_rules(permissions: dict[str, Any]) -> str | None:
    for list_name in ("allow", "deny"):
        for rule in permissions.get(list_name, []):
            try:
                Rule.parse(str(rule))
            except ValueError as exc:
                return f"[permissions] {list_name}: {exc}"
    return None


def _when(ok: Callable[[Any], bool], message: str) -> Callable[[Any], str | None]:
    return lambda value: None if ok(value) else message


_VALUE_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "tasks": _when(lambda v: v in ("v1", "v2"), '\'tasks\' must be "v1" or "v2"'),
    "permission_mode": _when(lambda v: v in MODES, f"'permission_mode' must be one of {', '.join(MODES)}"),
    "reminder_interval": _when(lambda v: v >= 0, "'reminder_interval' must be >= 0 (0 turns reminders off)"),
    "ui": _when(
        lambda v: v.get("task_panel", "right") in ("right", "bottom", "hidden"),
        '[ui] task_panel must be "right", "bottom" or "hidden"',
    ),
    "permissions": _check_rules,
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
    context_window: int | None = None
    compact_threshold: float = 0.8
    task_panel: PanelPlace = "right"
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    hooks: dict[str, Any] = field(default_factory=dict)
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
    """Merge defaults, settings files, environment and flags (flags are None when unset)."""
    env = dict(os.environ) if env is None else env
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    config = Config(workspace=workspace.resolve(), tasks_version="v1" if headless else "v2")
    merged: dict[str, Any] = {}
    for path in (user_settings_path(), project_settings_path(workspace)):
        try:
            data = read_settings_file(path)
        except SettingsError as exc:
            config.warnings.append(f"settings ignored: {exc}")
            continue
        for key, value in data.items():
            if key == "permissions" and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value
    _apply_settings(config, merged)
    key_env = config.api_key_env
    config.api_key = env.get(key_env) or None
    config.base_url = env.get("OPENAI_BASE_URL") or config.base_url
    config.model = env.get("TODO_AGENT_MODEL") or config.model
    config.model = flags.get("model", config.model)
    config.base_url = flags.get("base_url", config.base_url) or None
    config.permission_mode = cast(PermissionMode, flags.get("permission_mode", config.permission_mode))
    config.tasks_version = cast(TaskVersion, flags.get("tasks", config.tasks_version))
    return config


def _apply_settings(config: Config, data: dict[str, Any]) -> None:
    config.model = data.get("model", config.model)
    config.base_url = data.get("base_url", config.base_url)
    config.api_key_env = data.get("api_key_env", config.api_key_env)
    config.permission_mode = data.get("permission_mode", config.permission_mode)
    config.tasks_version = data.get("tasks", config.tasks_version)
    config.reminder_interval = data.get("reminder_interval", config.reminder_interval)
    config.context_window = data.get("context_window", config.context_window)
    config.compact_threshold = float(data.get("compact_threshold", config.compact_threshold))
    permissions = data.get("permissions", {})
    config.allow = [str(r) for r in permissions.get("allow", [])]
    config.deny = [str(r) for r in permissions.get("deny", [])]
    config.hooks = data.get("hooks", {})
    config.task_panel = data.get("ui", {}).get("task_panel", config.task_panel)
