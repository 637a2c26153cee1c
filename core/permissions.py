"""Who may run what: permission modes, allow/deny rules, and the approval exchange.

Decision order for one tool call:
1. a matching `deny` rule → deny (deny always wins);
2. `bypassPermissions` → allow (the mode says so; documented in the README);
3. `plan` mode → deny anything that writes or executes;
4. a path outside the workspace → ask (unless an allow rule matches);
5. a matching `allow` rule (settings or "don't ask again") → allow;
6. read-only and task tools → allow;
7. `acceptEdits` → allow edits; otherwise ask.
A caller with no way to ask (headless) turns "ask" into a denial that says why.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .context import is_inside

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan", "bypassPermissions")

Verdict = Literal["allow", "ask", "deny"]


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""
    outside_workspace: bool = False


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


@dataclass(frozen=True)
class ApprovalAnswer:
    decision: Literal["yes", "always", "no", "feedback"]
    feedback: str = ""


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]]


@dataclass(frozen=True)
class Rule:
    """`Tool` or `Tool(spec)`; spec is a command (`git status`, `pytest:*` prefix) or a path glob."""

    tool: str
    spec: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        text = text.strip()
        if "(" in text and text.endswith(")"):
            name, _, rest = text.partition("(")
            spec = rest[:-1].strip()
            return cls(name.strip(), spec or None)
        if not text or not text.replace("_", "").isalnum():
            raise ValueError(f"not a permission rule: {text!r} (expected e.g. Bash(git status) or Edit(src/**))")
        return cls(text)

    def __str__(self) -> str:
        return self.tool if self.spec is None else f"{self.tool}({self.spec})"

    def matches(self, tool: str, subject: str | None) -> bool:
        if self.tool != tool:
            return False
        if self.spec is None:
            return True
        if subject is None:
            return False
        if tool == "Bash":
            if self.spec.endswith(":*"):
                prefix = self.spec[:-2]
                return subject == prefix or subject.startswith(prefix + " ")
            return subject.strip() == self.spec
        return fnmatch.fnmatchcase(subject, self.spec) or fnmatch.fnmatchcase(subject, self.spec.rstrip("/*") + "/*")


PATH_TOOLS = {"Read": "file_path", "Write": "file_path", "Edit": "file_path", "Glob": "path", "Grep": "path"}


@dataclass
class PermissionPolicy:
    workspace: Path
    mode: PermissionMode = "default"
    allow: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    session_allow: list[Rule] = field(default_factory=list)

    @classmethod
    def from_strings(
        cls, workspace: Path, mode: PermissionMode, allow: Iterable[str] = (), deny: Iterable[str] = ()
    ) -> PermissionPolicy:
        return cls(workspace, mode, [Rule.parse(r) for r in allow], [Rule.parse(r) for r in deny])

    def cycle_mode(self) -> PermissionMode:
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        return self.mode

    def add_session_rule(self, rule: str) -> None:
        parsed = Rule.parse(rule)
        if parsed not in self.session_allow:
            self.session_allow.append(parsed)

    def decide(self, tool: str, kind: str, args: dict[str, Any]) -> Decision:
        subject = self.subject(tool, args)
        if any(r.matches(tool, subject) for r in self.deny):
            return Decision("deny", f"{tool} is denied by a permission rule")
        if self.mode == "bypassPermissions":
            return Decision("allow")
        if self.mode == "plan" and kind in ("edit", "execute"):
            return Decision("deny", "plan mode: nothing that writes or executes runs (shift+tab changes the mode)")
        outside = self._outside(tool, args)
        allowed = any(r.matches(tool, subject) for r in (*self.allow, *self.session_allow))
        if outside and not allowed:
            return Decision("ask", "the path is outside the workspace", outside_workspace=True)
        if allowed or kind in ("read", "task"):
            return Decision("allow")
        if self.mode == "acceptEdits" and kind == "edit":
            return Decision("allow")
        return Decision("ask", f"{tool} needs approval in {self.mode} mode")

    def subject(self, tool: str, args: dict[str, Any]) -> str | None:
        """What rules match against: the command for Bash, a workspace-relative path otherwise."""
        if tool == "Bash":
            command = args.get("command")
            return command.strip() if isinstance(command, str) else None
        key = PATH_TOOLS.get(tool)
        raw = args.get(key) if key else None
        if not isinstance(raw, str):
            return None
        path = self._resolve(raw)
        try:
            return path.resolve().relative_to(self.workspace.resolve()).as_posix()
        except ValueError:
            return path.as_posix()

    def suggest_rule(self, tool: str, args: dict[str, Any]) -> str:
        """The rule that "yes, and don't ask again" adds: narrow, but useful next time."""
        subject = self.subject(tool, args)
        if tool == "Bash" and subject:
            words = subject.split()
            head = words[0] if words else subject
            if head in ("python", "python3", "uv", "npm", "npx", "cargo", "go", "git", "make") and len(words) > 1:
                head = f"{head} {words[1]}"
            return f"Bash({head}:*)"
        if subject and tool in ("Edit", "Write"):
            parent = Path(subject).parent.as_posix()
            return f"{tool}({parent}/**)" if parent not in (".", "") else f"{tool}({subject})"
        return tool

    def _resolve(self, raw: str) -> Path:
        path = Path(raw).expanduser()
        return path if path.is_absolute() else self.workspace / path

    def _outside(self, tool: str, args: dict[str, Any]) -> bool:
        key = PATH_TOOLS.get(tool)
        raw = args.get(key) if key else None
        return isinstance(raw, str) and bool(raw) and not is_inside(self._resolve(raw), self.workspace)
