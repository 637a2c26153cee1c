"""Where todo-agent keeps its own files: the data root (sessions, their task lists, change
records and rewind journals, the hook trust record) and the user settings directory.

Looked up on every call, never cached: tests and people point `TODO_AGENT_HOME` and the
XDG variables elsewhere. The permission gate protects both (`core/permissions/policy.py`).
"""

from __future__ import annotations

import os
from pathlib import Path


def data_root() -> Path:
    """`$TODO_AGENT_HOME`, else the platform's user data dir."""
    override = os.environ.get("TODO_AGENT_HOME")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("todo-agent", appauthor=False))


def user_config_dir() -> Path:
    """Where the user settings file lives (`~/.config/todo-agent` on Linux)."""
    from platformdirs import user_config_dir as config_dir

    return Path(config_dir("todo-agent", appauthor=False))
