"""Who may run what: permission modes, the decision order, and the approval exchange.

The gate knows a tool by its declaration (`core/access.py`): its name, its kind and
which arguments are paths, read or written. The path prompt and the path rules follow
that declaration, never a list of tool names, so a tool added later (by the recipe in
`core/tools/base.py`, or built from an MCP server's schema) is gated like the built-in
ones. A tool that declares no path and is not read-only asks.

Decision order for one tool call:
1. a matching `deny` rule → deny (deny always wins). A path rule covers every path its
   family touches (`core/permissions/rules.py`, `speaks_for`). For Bash the command is read
   the way bash runs it (`core/permissions/command_forms.py`): a rule matches ANY program
   the line runs, in any form it took (`sudo nice /bin/rm f` is also `nice /bin/rm f`,
   `/bin/rm f`, `rm f`; `git -c x=y push` is also `git push`), inside
   `if`/loops/`{ }`/substitutions/`sh -c '…'`;
2. a Bash command that may run a denied program but cannot be read fully (`eval "$x"`,
   `$CMD f`, `bash script.sh`, a git alias; only while some Bash deny rule exists) →
   deny in `bypassPermissions`, ask otherwise (headless: denied), unless an exact allow
   rule names this very command;
3. `bypassPermissions` → allow (the mode says so; documented in the README);
4. `plan` mode → deny anything that writes or executes (an MCP tool: unless an allow rule
   names it: `mcp__server`, `mcp__server__*` or `mcp__server__tool`);
5. a declared path argument holding something that is not a path → ask;
6. a write to a file that decides what runs, what is allowed or which hooks are trusted →
   ask, whatever `acceptEdits` or allow rules say: any `.todo-agent/` folder, any `.git/`
   directory (hooks, `core.fsmonitor`), the user settings directory and todo-agent's
   data directory (both reachable when the workspace is `$HOME`), and the workspace code
   an accepted project server or hook runs (`protected_code`);
7. a path outside the workspace → ask (unless an allow rule matches; relative rules only
   match inside the workspace, so only an absolute rule like `Read(/etc/**)` can);
8. a matching `allow` rule (settings or "don't ask again") → allow. Allow rules are the
   strict side: for Bash, EVERY simple command as written (no unwrapping) must match one,
   and a command with `$(…)`, backticks, `<(…)`, a redirection to a file, or anything that
   cannot be read fully matches no prefix rule, only an exact one; a path rule must cover
   every path the call touches;
9. read-only and task tools → allow (never an MCP tool: it is `execute`, as its server's
   "read-only" hint is not trusted, so each call asks unless a rule allows it);
10. `acceptEdits` → allow an edit that writes a declared path (all of them in the
   workspace, by now); otherwise ask.
A caller with no way to ask (headless) turns "ask" into a denial that says why.
A tool declared to read the network (`network=`, WebFetch) is decided apart, by
`_decide_network`: deny rules, `bypassPermissions`, `Tool(domain:host)` allow rules, else ask.
What one rule is and matches (and which rule to suggest) is `core/permissions/rules.py`.
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import urlsplit

from ..access import WRITES, Declared, PathUse
from ..places import data_root, user_config_dir
from .command_forms import analyse
from .modes import PermissionMode, next_mode
from .rules import (
    PathSubject,
    Rule,
    command_allowed,
    command_denied,
    glob_literal_dir,
    mcp_server,
    mcp_server_rule,
    speaks_for,
    suggest_command_rule,
)

Verdict = Literal["allow", "ask", "deny"]
SETTINGS_DIR = ".todo-agent"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""
    outside_workspace: bool = False


@dataclass(frozen=True)
class _Shell:
    """Bash as the gate knows it, for what runs a command without being a Bash call (a
    task's check): the same name, so the same rules."""

    name: str = "Bash"
    kind: Literal["execute"] = "execute"
    paths: Mapping[str, PathUse] = field(default_factory=dict)
    network: str | None = None


SHELL: Declared = _Shell()


@dataclass(frozen=True)
class Touch:
    """One path a call touches, as its tool declared the argument."""

    argument: str
    use: PathUse
    subject: PathSubject | None
    """None: the argument holds something that is not a path (the call asks)."""


SANDBOXED = "runs in the sandbox (auto_allow)"
"""The reason of a command allowed because the sandbox holds it."""
UNSANDBOXED = "it asks to run outside the sandbox (sandbox: false), with your files, network and credentials"
"""Why a command the model wants to run unsandboxed asks."""


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
    declared: dict[str, frozenset[PathUse]] = field(default_factory=dict)
    """Tool name → what its paths are used for: which family a rule naming it belongs to
    (`Grep(secrets/**)` covers every read). A rule on a tool not known here covers that tool alone."""
    protected_code: dict[Path, str] = field(default_factory=dict)
    """Workspace files and folders an accepted project server or hook (or one of the
    person's own hooks) runs (`workspace_code.py`), resolved → why changing them asks:
    the model's edit would run as trusted code."""
    network_tools: set[str] = field(default_factory=set)
    """Tools declared to read the network: their `domain:` allow rules may name a private host."""
    sandbox_on: Callable[[], bool] = field(default=lambda: False)
    """Whether the model's commands run in the OS sandbox now (`core/sandbox.py`)."""
    allow_unsandboxed: bool = False
    """`[sandbox] allow_unsandboxed` (the user file only): an allow rule naming a command may
    let it run outside the sandbox unasked (headless); otherwise that always asks."""
    sandboxed: Callable[[], bool] = field(default=lambda: False)
    """Whether commands run in the OS sandbox with `auto_allow` now (`core/sandbox.py`): a
    command the rules would ask about runs without asking. Deny rules, plan mode and a
    command that cannot be read against the deny rules (it asks) still apply."""

    def __post_init__(self) -> None:
        self.bypass_in_cycle = self.bypass_in_cycle or self.mode == "bypassPermissions"

    @classmethod
    def from_strings(
        cls,
        workspace: Path,
        mode: PermissionMode,
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
        tools: Iterable[Declared] = (),
    ) -> PermissionPolicy:
        policy = cls(workspace, mode, [Rule.parse(r) for r in allow], [Rule.parse(r) for r in deny])
        policy.know(tools)
        return policy

    def know(self, tools: Iterable[Declared]) -> None:
        """Learn the declarations of `tools`, so rules naming them cover their family."""
        for tool in tools:
            self.declared[tool.name] = frozenset(tool.paths.values())
            if tool.network is not None:
                self.network_tools.add(tool.name)

    def protection(self, path: PathSubject) -> str | None:
        """Why a write to `path` always asks (step 6), or None: a place that decides what
        runs or is allowed, or workspace code a trusted hook or project server runs."""
        if (why := _protected(path)) is not None:
            return why
        absolute = Path(path.absolute)
        for place, why in self.protected_code.items():
            if absolute == place or place in absolute.parents:
                return why
        return None

    def cycle_mode(self) -> PermissionMode:
        self.mode = next_mode(self.mode, bypass_in_cycle=self.bypass_in_cycle)
        return self.mode

    def add_session_rule(self, rule: str) -> None:
        parsed = Rule.parse(rule)
        if parsed not in self.session_allow:
            self.session_allow.append(parsed)

    def add_session_deny(self, rule: str) -> None:
        """ "Reject always": calls the rule names are denied, unasked, until the process ends."""
        parsed = Rule.parse(rule)
        if parsed not in self.deny:
            self.deny.append(parsed)

    def decide(self, tool: Declared, args: Mapping[str, Any], turn: Sequence[Rule] = ()) -> Decision:
        """See the module docstring for the order. `args` as the tool will read them
        (`Tool.check`), so the paths judged are the paths it uses. `turn`: what the asking
        agent's running turn alone allows (a custom command's `allowed-tools`), handed in
        with each call: the gate is shared by every agent, a turn is one agent's."""
        if (first := self._rules_and_mode(tool, args, turn)) is not None:
            return first
        touched = self.touched(tool, args)
        if (odd := next((t for t in touched if t.subject is None), None)) is not None:
            return Decision("ask", f"its {odd.argument!r} argument is not a path that can be checked")
        for touch in touched:
            if touch.use in WRITES and touch.subject and (protected := self.protection(touch.subject)) is not None:
                return Decision("ask", f"{protected}: changes to it always ask")
        rules = [*self.allow, *self.session_allow, *turn]
        whole = any(r.names_tool(tool.name) for r in rules)
        covered = [whole or self._path_ruled(rules, tool, t, deny=False) is not None for t in touched]
        if any(t.subject and t.subject.relative is None and not ok for t, ok in zip(touched, covered, strict=True)):
            return Decision("ask", "the path is outside the workspace", outside_workspace=True)
        allowed = whole or self._command_allowed(tool, args, rules) or (bool(touched) and all(covered))
        if allowed or tool.kind in ("read", "task"):
            return Decision("allow")
        if self.mode == "acceptEdits" and tool.kind == "edit" and any(t.use in WRITES for t in touched):
            return Decision("allow")  # every path it writes is in the workspace and not protected (above)
        return self._asked(tool)

    def _asked(self, tool: Declared) -> Decision:
        """What no rule decided: asked, unless the sandbox holds a command (`auto_allow`)."""
        if server := mcp_server(tool.name):
            return Decision("ask", f"a tool of the MCP server {server}: MCP calls ask in {self.mode} mode")
        if tool.kind == "execute" and tool.name == "Bash" and self.sandboxed():
            return Decision("allow", SANDBOXED)
        return Decision("ask", f"{tool.name} needs approval in {self.mode} mode")

    def decide_check(self, command: str, turn: Sequence[Rule] = ()) -> Decision:
        """Setting, changing or removing a task's check (`command`: the one that will run, or
        the one removed): judged exactly as a Bash call of it, because it will run, except in
        plan mode, where it is judged as in default mode: a check may be set while planning
        (nothing runs then)."""
        if self.mode != "plan":
            return self.decide(SHELL, {"command": command}, turn)
        self.mode = "default"
        try:
            return self.decide(SHELL, {"command": command}, turn)
        finally:
            self.mode = "plan"

    def command_denied(self, command: str) -> str:
        """Why a deny rule refuses running `command` now (a task's check, at the moment it
        runs: deny rules win again then), or ""."""
        denied = self._denied(SHELL, {"command": command})
        if isinstance(denied, Rule):
            return f"Bash is denied by the permission rule {denied}"
        if denied == "maybe" and self.mode == "bypassPermissions":
            return "this command cannot be checked against the deny rules"
        return ""

    def _rules_and_mode(self, tool: Declared, args: Mapping[str, Any], turn: Sequence[Rule]) -> Decision | None:
        """Steps 1-3: deny rules, then the modes that decide alone (a network tool: all of it)."""
        if tool.network is not None:
            return self._decide_network(tool, args, turn)
        denied = self._denied(tool, args)
        if isinstance(denied, Rule):
            return Decision("deny", f"{tool.name} is denied by the permission rule {denied}")
        if denied == "maybe" and (uncertain := self._uncertain(tool, args, turn)) is not None:
            return uncertain
        if self.mode != "plan" and (outside := self._unsandboxed(tool, args)) is not None:
            return outside
        if self.mode == "bypassPermissions":
            return Decision("allow")
        if self.mode == "plan" and tool.kind in ("edit", "execute"):
            if mcp_server(tool.name) and any(r.names_tool(tool.name) for r in (*self.allow, *self.session_allow)):
                return Decision("allow")  # an MCP tool an allow rule names (its server is not asked otherwise)
            return Decision("deny", "plan mode: nothing that writes or executes runs (shift+tab changes the mode)")
        return None

    def _decide_network(self, tool: Declared, args: Mapping[str, Any], turn: Sequence[Rule]) -> Decision:
        """A tool that reads the network: its deny rules (bare, or `domain:` the URL's host),
        then `bypassPermissions`, then its allow rules; otherwise it asks, in every mode."""
        host = _url_host(args.get(tool.network or ""))
        denied = next((r for r in self.deny if r.tool == tool.name and r.matches_domain(host)), None)
        if denied is not None:
            return Decision("deny", f"{tool.name} is denied by the permission rule {denied}")
        if self.mode == "bypassPermissions":
            return Decision("allow")
        allowed = (*self.allow, *self.session_allow, *turn)
        if any(r.tool == tool.name and r.matches_domain(host) for r in allowed):
            return Decision("allow")
        return Decision(
            "ask", f"{tool.name} reads {host or 'the network'}; a {tool.name}(domain:{host or '…'}) rule allows it"
        )

    def host_named(self, host: str, turn: Sequence[Rule] = ()) -> bool:
        """Whether an allow rule of a network tool names exactly `host` (`WebFetch(domain:localhost)`):
        only then may it reach a private or local address. `turn` as for `decide`."""
        rules = (*self.allow, *self.session_allow, *turn)
        return any(r.tool in self.network_tools and r.names_host(host.lower()) for r in rules)

    def _uncertain(self, tool: Declared, args: Mapping[str, Any], turn: Sequence[Rule]) -> Decision | None:
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
        rules = (*self.allow, *self.session_allow, *turn)
        exact = [r for r in rules if r.tool == tool.name and r.spec and not r.is_prefix]
        if analysis is not None and any(r.matches_command_text(analysis.script) for r in exact):
            return Decision("allow")
        return Decision("ask", reason)

    def _unsandboxed(self, tool: Declared, args: Mapping[str, Any]) -> Decision | None:
        """A command the model asks to run outside the sandbox (`sandbox: false`) while it is
        on: it always asks (in every mode, never auto-allowed, no session rule offered),
        unless `allow_unsandboxed` and an allow rule of the settings name the command."""
        if tool.name != "Bash" or args.get("sandbox") is not False or not self.sandbox_on():
            return None
        if self.allow_unsandboxed and self._command_allowed(tool, args, list(self.allow)):
            return Decision("allow", "allow_unsandboxed and an allow rule name it")
        return Decision("ask", UNSANDBOXED)

    def _denied(self, tool: Declared, args: Mapping[str, Any]) -> Rule | Literal["maybe", "no"]:
        """The deny rule that matches the call (named in the denial, so the person knows
        which one to change), "maybe" for a command that cannot be read fully, or "no"."""
        whole = [r for r in self.deny if r.names_tool(tool.name)]
        if whole:
            return whole[0]
        if tool.name == "Bash":  # the one tool whose rules are commands, read by the shell reader
            rules = [r for r in self.deny if r.tool == tool.name and r.spec is not None]
            command = args.get("command")
            if not rules or not isinstance(command, str):
                return "no"
            analysis = analyse(command)
            found = command_denied(analysis, rules)
            if found != "yes":
                return found
            return next((r for r in rules if command_denied(analysis, [r]) == "yes"), rules[0])
        for touch in self.touched(tool, args):
            if (rule := self._path_ruled(self.deny, tool, touch, deny=True)) is not None:
                return rule
        return "no"

    def _path_ruled(self, rules: Iterable[Rule], tool: Declared, touch: Touch, *, deny: bool) -> Rule | None:
        """The first path rule of `rules` that speaks for `touch` and matches its path."""
        if touch.subject is None:
            return None
        for rule in rules:
            uses = self.declared.get(rule.tool, frozenset())
            speaks = rule.spec is not None and speaks_for(rule.tool, uses, tool.name, touch.use, deny=deny)
            if speaks and rule.matches_path(touch.subject):
                return rule
        return None

    @staticmethod
    def _command_allowed(tool: Declared, args: Mapping[str, Any], rules: list[Rule]) -> bool:
        if tool.name != "Bash":
            return False
        command = args.get("command")
        rules = [r for r in rules if r.tool == tool.name and r.spec is not None]
        return bool(rules) and isinstance(command, str) and command_allowed(analyse(command), rules)

    def hides(self, tool: str) -> bool:
        """Whether a deny rule names the whole tool, so the model is not even shown it
        (for MCP tools: `mcp__server`, `mcp__server__*`, `mcp__server__tool`)."""
        return any(r.names_tool(tool) for r in self.deny)

    @staticmethod
    def server_rule(tool: str) -> str:
        """The rule "yes, and don't ask again for all tools of this server" adds; "" for a
        tool that is not an MCP server's."""
        return mcp_server_rule(tool)

    def suggest_rule(self, tool: Declared, args: Mapping[str, Any]) -> str:
        """The rule that "yes, and don't ask again" adds: narrow, but useful next time.

        Never a bare tool name for a tool with a command or path: without one (a malformed
        call) the rule is `Tool()`, which matches nothing real. None ("") for a write to a
        protected path: it asks whatever the rules say, so a rule would only look like an answer.
        """
        if tool.name == "Bash":
            command = args.get("command")
            if args.get("sandbox") is False and self.sandbox_on():
                return ""  # outside the sandbox asks every time: no rule to remember
            return suggest_command_rule(command) if isinstance(command, str) else "Bash()"
        if tool.network is not None:
            host = _url_host(args.get(tool.network))
            return f"{tool.name}(domain:{host})" if host else f"{tool.name}()"
        if not tool.paths:
            return tool.name
        touched = self.touched(tool, args)
        if not touched or any(t.subject is None for t in touched):
            return f"{tool.name}()"
        if any(t.use in WRITES and t.subject and self.protection(t.subject) for t in touched):
            return ""
        # The path that made it ask: one outside the workspace, else one it writes.
        pick = next((t for t in touched if t.subject and t.subject.relative is None), None)
        pick = pick or next((t for t in touched if t.use in WRITES), touched[0])
        assert pick.subject is not None
        return self._suggest_path_rule(tool.name, pick.subject)

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
        rules = [
            r for r in self.deny if r.spec is not None and self.declared.get(r.tool, frozenset()) & {"read", "glob"}
        ]
        return bool(rules) and any(r.matches_path(self._subject(Path(path))) for r in rules)

    def touched(self, tool: Declared, args: Mapping[str, Any]) -> list[Touch]:
        """Every path the call touches, by its tool's declaration (`core/access.py`): a `read`
        argument left out is the workspace root; a `glob` starts under the `read` one."""
        touches: list[Touch] = []
        bases = [self.workspace]
        for argument, use in tool.paths.items():
            if use == "glob":
                continue
            values = _path_values(args.get(argument))
            if values is None:
                touches.append(Touch(argument, use, None))
                continue
            if not values and use == "read":
                values = [str(self.workspace)]
            paths = [self._resolve(value) for value in values]
            if use == "read" and paths:
                bases = paths
            touches += [Touch(argument, use, self._subject(path)) for path in paths]
        for argument, use in tool.paths.items():
            if use != "glob":
                continue
            values = _path_values(args.get(argument))
            if values is None:
                touches.append(Touch(argument, use, None))
                continue
            # `../*` or `/etc/*` walks elsewhere than its base
            touches += [
                Touch(argument, use, self._subject(base / glob_literal_dir(v))) for v in values for base in bases
            ]
        return touches

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
        path = Path(raw)
        with contextlib.suppress(RuntimeError):  # `~nobody/x`: no such home, so no expansion
            path = path.expanduser()
        return path if path.is_absolute() else self.workspace / path


def _url_host(url: object) -> str:
    """The host a URL names, lower-case ("" for anything that is no URL)."""
    try:
        return (urlsplit(url).hostname or "").lower() if isinstance(url, str) else ""
    except ValueError:
        return ""


def _protected(path: PathSubject) -> str | None:
    """Why an edit of `path` is an edit of permissions (what runs, what is allowed, which
    hooks are trusted), or None.

    Names are compared casefolded: on a case-insensitive file system `.GIT/` is `.git/`.
    """
    parts = path.relative.split("/") if path.relative is not None else PurePosixPath(path.absolute).parts
    if SETTINGS_DIR in (part.casefold() for part in parts):
        # A folder's own `.todo-agent/` is the project settings of whoever starts there.
        return f"{SETTINGS_DIR}/ holds todo-agent's settings for the folder it is in"
    if ".git" in (part.casefold() for part in PurePosixPath(path.absolute).parts):
        return ".git/ holds hooks and configuration that git runs"
    absolute = Path(path.absolute)
    for place, holds in (
        (user_config_dir(), "holds your todo-agent settings"),
        (data_root(), "holds todo-agent's hook trust, sessions and rewind journals"),
    ):
        directory = _resolved(place)
        if absolute == directory or directory in absolute.parents:
            return f"{directory} {holds}"
    return None


def _resolved(directory: Path) -> Path:
    try:
        return directory.resolve()
    except (OSError, RuntimeError):
        return directory


def _path_values(value: Any) -> list[str] | None:
    """The paths an argument holds: none (left out or empty), one, or a list of them; None
    when it holds something else (the gate cannot tell what the tool would make of it)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return [v for v in value if v]
    return None
