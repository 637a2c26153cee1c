"""The built-in tools by name, and a gate that knows them, for tests that ask the
permission gate about one call."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from todo_agent.core.permissions.modes import PermissionMode
from todo_agent.core.permissions.policy import PermissionPolicy
from todo_agent.core.runtime import build_tools

TOOL = {tool.name: tool for tool in (*build_tools("v2"), *build_tools("v1"))}


def gate(
    workspace: Path, mode: PermissionMode | str = "default", allow: Iterable[str] = (), deny: Iterable[str] = ()
) -> PermissionPolicy:
    """A gate over `workspace` that knows the built-in tools (their rule families)."""
    return PermissionPolicy.from_strings(workspace, mode, allow, deny, TOOL.values())  # type: ignore[arg-type]
