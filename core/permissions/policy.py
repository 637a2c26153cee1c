"""Who may run what: permission modes, the decision order, and the approval exchange.

Decision order for one tool call:
1. a matching `deny` rule → deny (deny always wins). For Bash the command is read the way
   bash runs it (`core/permissions/command_forms.py`): a rule matches ANY program the line runs, in
   any form it took (`sudo nice /bin/rm f` is also `nice /bin/rm f`, `/bin/rm f`, `rm f`;
   `git -c x=y push` is also `git push`), inside `if`/loops/`{ }`/substitutions/`sh -c '…'`;
2. a Bash command that may run a denied program but cannot be read fully (`eval "$x"`,
   `$CMD f`, `bash script.sh`, a git alias; only while some Bash deny rule exists) →
   deny in `bypassPermissions`, ask otherwise (headless: denied), unless an exact allow
   rule names this very command;
3. `bypassPermissions` → allow (the mode says so; documented in the README);
4. `plan` mode → deny anything that writes or executes (an MCP tool: unless an allow rule
   names it: `mcp__server`, `mcp__server__*` or `mcp__server__tool`);
5. Edit/Write of a file that decides what runs or what is allowed → ask, whatever
   `acceptEdits` or allow rules say: `<workspace>/.todo-agent/`, any `.git/` directory
   (hooks, `core.fsmonitor`), and the user settings directory (reachable when the
   workspace is `$HOME`);
6. a path outside the workspace → ask (unless an allow rule matches; relative rules only
   match inside the workspace, so only an absolute rule like `Read(/etc/**)` can);
7. a matching `allow` rule (settings or "don't ask again") → allow. Allow rules are the
   strict side: for Bash, EVERY simple command as written (no unwrapping) must match one,
   and a command with `$(…)`, backticks, `<(…)`, a redirection to a file, or anything that
   cannot be read fully matches no prefix rule, only an exact one;
8. read-only and task tools → allow (never an MCP tool: its server's "read-only" hint is
   not trusted, so each call asks unless a rule allows it);
9. `acceptEdits` → allow edits; otherwise ask.
A caller with no way to ask (headless) turns "ask" into a denial that says why.
What one rule is and matches (and which rule to suggest) is `core/permissions/rules.py`.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from .command_forms import analyse
from .modes import MODES, PermissionMode
from .rules import (
    PATH_TOOLS,
    READING,
    PathSubject,
    Rule,
    command_allowed,
    command_denied,
    glob_literal_dir,
    mcp_server,
    mcp_server_rule,
    rule_tools,
    suggest_command_rule,
)

Verdict = Literal["allow", "ask", "deny"]
SETTINGS_DIR = ".todo-agent"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""
    outside_workspace: bool = False


@dataclass
class PermissionPolicy:
    workspace: Path
    mode: PermissionMode = "default"
    allow: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    session_allow: list[Rule] = field(default_factory=list)
    bypass_in_cycle: bool = False
    """Whether cycling (shift+tab, a bare /mode) may reach bypassPermissions: only for a
    session started in that mode. One key press should never switch approvals off."""

    def __post_init__(self) -> None:
        self.bypass_in_cycle = self.bypass_in_cycle or self.mode == "bypassPermissions"

    @classmethod
    def from_strings(
        cls, workspace: Path, mode: PermissionMode, allow: Iterable[str] = (), deny: Iterable[str] = ()
    ) -> PermissionPolicy:
        return cls(workspace, mode, [Rule.parse(r) for r in allow], [Rule.parse(r) for r in deny])

    def cycle_mode(self) -> PermissionMode:
        cycle = MODES if self.bypass_in_cycle else tuple(m for m in MODES if m != "bypassPermissions")
        position = cycle.index(self.mode) if self.mode in cycle else -1
        self.mode = cycle[(position + 1) % len(cycle)]
        return self.mode

    def add_session_rule(self, rule: str) -> None:
        parsed = Rule.parse(rule)
        if parsed not in self.session_allow:
            self.session_allow.append(parsed)

    def decide(self, tool: str, kind: str, args: dict[str, Any]) -> Decision:
        """See the module docstring for the order."""
        if (first := self._rules_and_mode(tool, kind, args)) is not None:
            return first
        path = self._path_subject(tool, args)
        if tool in ("Edit", "Write") and path is not None and (protected := _protected(path)) is not None:
            return Decision("ask", f"{protected}: changes to it always ask")
        allowed = self._hits([*self.allow, *self.session_allow], tool, args)
        if path is not None and path.relative is None and not allowed:
            return Decision("ask", "the path is outside the workspace", outside_workspace=True)
        if allowed or kind in ("read", "task"):
            return Decision("allow")
        if self.mode == "acceptEdits" and kind == "edit":
            return Decision("allow")
        if server := mcp_server(tool):
            return Decision("ask", f"a tool of the MCP server {server}: MCP calls ask in {self.mode} mode")
        return Decision("ask", f"{tool} needs approval in {self.mode} mode")

    def _rules_and_mode(self, tool: str, kind: str, args: dict[str, Any]) -> Decision | None:
        """Steps 1-3: deny rules, then the modes that decide alone."""
        denied = self._denied(tool, args)
        if isinstance(denied, Rule):
            return Decision("deny", f"{tool} is denied by the permission rule {denied}")
        if denied == "maybe" and (uncertain := self._uncertain(tool, args)) is not None:
            return uncertain
        if self.mode == "bypassPermissions":
            return Decision("allow")
        if self.mode == "plan" and kind in ("edit", "execute"):
            if mcp_server(tool) and self._hits([*self.allow, *self.session_allow], tool, args):
                return Decision("allow")  # an MCP tool an allow rule names (its server is not asked otherwise)
            return Decision("deny", "plan mode: nothing that writes or executes runs (shift+tab changes the mode)")
        return None

    def _uncertain(self, tool: str, args: dict[str, Any]) -> Decision | None:
        """A command that may run a denied program: denied where nobody is asked first
        (bypassPermissions; headless turns the "ask" into a denial), asked otherwise,
        unless the person allowed exactly this command."""
        command = args.get("command")
        analysis = analyse(command) if isinstance(command, str) else None
        why = "; ".join(analysis.unknown) if analysis is not None and analysis.unknown else "a word is computed"
        reason = f"this command cannot be checked against the deny rules ({why})"
        if self.mode == "bypassPermissions":
            return Decision("deny", reason)
        if self.mode == "plan":
            return None  # plan mode denies every command anyway, with its own reason
        exact = [r for r in (*self.allow, *self.session_allow) if r.tool == tool and r.spec and not r.is_prefix]
        if analysis is not None and any(r.matches_command_text(analysis.script) for r in exact):
            return Decision("allow")
        return Decision("ask", reason)

    def _denied(self, tool: str, args: dict[str, Any]) -> Rule | Literal["maybe", "no"]:
        """The deny rule that matches the call (named in the denial, so the person knows
        which one to change), "maybe" for a command that cannot be read fully, or "no"."""
        whole = [r for r in self.deny if r.names_tool(tool)]
        if whole:
            return whole[0]
        family = rule_tools(tool, deny=True)
        rules = [r for r in self.deny if r.tool in family and r.spec is not None]
        if not rules:
            return "no"
        if tool == "Bash":
            command = args.get("command")
            if not isinstance(command, str):
                return "no"
            analysis = analyse(command)
            found = command_denied(analysis, rules)
            if found != "yes":
                return found
            return next((r for r in rules if command_denied(analysis, [r]) == "yes"), rules[0])
        path = self._path_subject(tool, args)
        return next((r for r in rules if r.matches_path(path)), "no") if path is not None else "no"

    def _hits(self, rules: list[Rule], tool: str, args: dict[str, Any]) -> bool:
        if any(r.names_tool(tool) for r in rules):
            return True
        family = rule_tools(tool, deny=False)
        rules = [r for r in rules if r.tool in family and r.spec is not None]
        if not rules:
            return False
        if tool == "Bash":
            command = args.get("command")
            return isinstance(command, str) and command_allowed(analyse(command), rules)
        path = self._path_subject(tool, args)
        return path is not None and any(r.matches_path(path) for r in rules)

    def hides(self, tool: str) -> bool:
        """Whether a deny rule names the whole tool, so the model is not even shown it
        (for MCP tools: `mcp__server`, `mcp__server__*`, `mcp__server__tool`)."""
        return any(r.names_tool(tool) for r in self.deny)

    @staticmethod
    def server_rule(tool: str) -> str:
        """The rule "yes, and don't ask again for all tools of this server" adds; "" for a
        tool that is not an MCP server's."""
        return mcp_server_rule(tool)

    def suggest_rule(self, tool: str, args: dict[str, Any]) -> str:
        """The rule that "yes, and don't ask again" adds: narrow, but useful next time.

        Never a bare tool name for a tool with a command or path: without one (a malformed
        call) the rule is `Tool()`, which matches nothing real.
        """
        if tool == "Bash":
            command = args.get("command")
            return suggest_command_rule(command) if isinstance(command, str) else "Bash()"
        if tool not in PATH_TOOLS:
            return tool
        path = self._path_subject(tool, args)
        return self._suggest_path_rule(tool, path) if path is not None else f"{tool}()"

    def _suggest_path_rule(self, tool: str, path: PathSubject) -> str:
        """`Tool(<dir>/**)`: workspace-relative inside, absolute outside. A file whose
        directory is too broad to hand out (the workspace root, `/`, home, an ancestor of
        the workspace) gets a rule for just that file."""
        absolute = Path(path.absolute)
        is_dir = absolute.is_dir()
        directory = absolute if is_dir else absolute.parent
        if path.relative is not None:
            rel_dir = directory.relative_to(self.workspace.resolve()).as_posix()
            if rel_dir == ".":
                return f"{tool}(**)" if is_dir else f"{tool}({glob.escape(path.relative)})"
            return f"{tool}({glob.escape(rel_dir)}/**)"
        too_broad = directory == Path(directory.anchor) or directory == Path.home().resolve()
        too_broad = too_broad or self.workspace.resolve().is_relative_to(directory)
        if too_broad and not is_dir:
            return f"{tool}({glob.escape(path.absolute)})"
        return f"{tool}({glob.escape(directory.as_posix()).rstrip('/')}/**)"

    def read_denied(self, path: str) -> bool:
        """Whether a deny rule on reading covers `path`: Grep and Glob leave such files out
        of their results (the rule checked the search root; this checks what it found)."""
        rules = [r for r in self.deny if r.tool in READING and r.spec is not None]
        return bool(rules) and any(r.matches_path(self._subject(Path(path))) for r in rules)

    def _path_subject(self, tool: str, args: dict[str, Any]) -> PathSubject | None:
        """The path a path tool touches (for Glob, where its pattern starts walking), or None."""
        key = PATH_TOOLS.get(tool)
        if key is None:
            return None
        raw = args.get(key)
        if tool in ("Glob", "Grep") and raw in (None, ""):
            base = self.workspace  # both search the workspace root by default
        elif isinstance(raw, str) and raw:
            base = self._resolve(raw)
        else:
            return None
        pattern = args.get("pattern")
        if tool == "Glob" and isinstance(pattern, str):
            base = base / glob_literal_dir(pattern)  # `../*` or `/etc/*` walks elsewhere
        return self._subject(base)

    def _subject(self, base: Path) -> PathSubject:
        try:
            resolved = base.resolve()
        except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: not inside
            return PathSubject(os.path.abspath(base), None)
        try:
            relative: str | None = resolved.relative_to(self.workspace.resolve()).as_posix()
        except ValueError:
            relative = None
        return PathSubject(resolved.as_posix(), relative)

    def _resolve(self, raw: str) -> Path:
        path = Path(raw).expanduser()
        return path if path.is_absolute() else self.workspace / path


def _protected(path: PathSubject) -> str | None:
    """Why an edit of `path` is an edit of permissions (what runs or what is allowed), or None.

    Names are compared casefolded: on a case-insensitive file system `.GIT/` is `.git/`.
    """
    if path.relative is not None and path.relative.split("/")[0].casefold() == SETTINGS_DIR:
        return f"{SETTINGS_DIR}/ holds todo-agent's own settings"
    if ".git" in (part.casefold() for part in PurePosixPath(path.absolute).parts):
        return ".git/ holds hooks and configuration that git runs"
    config_dir = _user_config_dir()
    absolute = Path(path.absolute)
    if absolute == config_dir or config_dir in absolute.parents:
        return f"{config_dir} holds your todo-agent settings"
    return None


def _user_config_dir() -> Path:
    """The user settings file's directory, resolved (looked up per call: tests and users
    may point XDG_CONFIG_HOME elsewhere)."""
    from platformdirs import user_config_dir

    try:
        return Path(user_config_dir("todo-agent", appauthor=False)).resolve()
    except (OSError, RuntimeError):
        return Path(user_config_dir("todo-agent", appauthor=False))
