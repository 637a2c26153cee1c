"""The permission modes and what the person is asked and answers: plain data.

Apart from `permissions.py` (the gate, with its shell reading) so that the settings, the
command line and the TUI's first frame can name them without loading the gate.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan", "bypassPermissions")


def next_mode(mode: PermissionMode, *, bypass_in_cycle: bool) -> PermissionMode:
    """The mode after `mode` (shift+tab): bypassPermissions is in the cycle only for a
    session started in it; one key press should never switch approvals off."""
    cycle = MODES if bypass_in_cycle else tuple(m for m in MODES if m != "bypassPermissions")
    position = cycle.index(mode) if mode in cycle else -1
    return cycle[(position + 1) % len(cycle)]


@dataclass(frozen=True)
class ApprovalRequest:
    """What the person is asked about."""

    tool: str
    arguments: dict[str, Any]
    summary: str
    preview: str
    """Unified diff for Edit/Write, the command for Bash, else empty."""
    preview_kind: Literal["diff", "command", "text"]
    outside_workspace: bool
    suggested_rule: str
    """The rule "yes, and don't ask again" adds, e.g. `Bash(pytest:*)`."""
    reason: str
    server_rule: str = ""
    """For an MCP tool, the rule naming all tools of its server (`mcp__github`), which
    "yes, and don't ask again for all tools of this server" adds; else empty."""
    agent: str = ""
    """Which sub-agent asks, and for which task (`explore-2 · #3 Write the tests`); empty
    for the main agent."""
    call_id: str = ""
    """The tool call asked about (an ACP client shows the question on that call); empty
    for a question about no call (a custom command's shell lines)."""
    remembered_for: str = ""
    """Set when the question is about a file's shell commands (a custom command): yes is
    remembered for this version of that file, named here; there is no rule to add and no
    feedback for a model."""


@dataclass(frozen=True)
class ApprovalAnswer:
    decision: Literal["yes", "always", "always_server", "no", "never", "feedback"]
    """`always` adds the request's `suggested_rule`, `always_server` its `server_rule`;
    `never` is a no that also denies the `suggested_rule` for the rest of the session (an
    ACP client's "reject always")."""
    feedback: str = ""


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]]
