"""What a hook is: the events, one configured `HookSpec`, and reading them from settings.

Apart from the runner (`core/hooks/runner.py`), so reading settings before the first frame does
not load the runner, its processes and the events it reports.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

HookEvent = Literal[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "TaskCreated",
    "TaskCompleted",
    "PreCompact",
    "SubagentStart",
    "SubagentStop",
    "Notification",
]
HOOK_EVENTS: tuple[HookEvent, ...] = get_args(HookEvent)
TASK_EVENTS = ("TaskCreated", "TaskCompleted")
UNMATCHED_EVENTS = ("UserPromptSubmit", "Stop")
"""Events whose matcher is ignored, as in Claude Code."""

DEFAULT_TIMEOUT = 60.0
Source = Literal["user", "project"]

_PLAIN_MATCHER = re.compile(r"[A-Za-z0-9_|]+")


@dataclass(frozen=True)
class HookSpec:
    """One configured hook."""

    event: HookEvent
    command: str
    matcher: str = ""
    timeout: float = DEFAULT_TIMEOUT
    source: Source = "user"
    """Which settings file it came from: project hooks need the person's trust."""

    def matches(self, target: str | None) -> bool:
        pattern = self.matcher
        if self.event in UNMATCHED_EVENTS or pattern.strip() in ("", "*") or target is None:
            return True
        if self.event not in TASK_EVENTS and _PLAIN_MATCHER.fullmatch(pattern):
            return target in pattern.split("|")
        try:
            return re.search(pattern, target) is not None
        except re.error:  # settings validation refuses these; a spec built in code may not
            return False


def specs_from_table(table: Mapping[str, Any], source: Source) -> list[HookSpec]:
    """The `[hooks]` table of one (validated) settings file, as specs."""
    specs = []
    for event, entries in table.items():
        if event not in HOOK_EVENTS:
            continue
        for entry in entries:
            timeout = entry.get("timeout", DEFAULT_TIMEOUT)
            specs.append(HookSpec(event, entry["command"], entry.get("matcher", ""), float(timeout), source))
    return specs
