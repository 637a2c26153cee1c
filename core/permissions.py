"""Who may run what: permission modes, allow/deny rules, and the approval exchange.

Decision order for one tool call:
1. a matching `deny` rule → deny (deny always wins). For Bash the command is read the way
   bash runs it (`core/command_forms.py`): a rule matches ANY program the line runs, in
   any form it took (`sudo nice /bin/rm f` is also `nice /bin/rm f`, `/bin/rm f`, `rm f`;
   `git -c x=y push` is also `git push`), inside `if`/loops/`{ }`/substitutions/`sh -c '…'`;
2. a Bash command that may run a denied program but cannot be read fully (`eval "$x"`,
   `$CMD f`, `bash script.sh`, a git alias; only while some Bash deny rule exists) →
   deny in `bypassPermissions`, ask otherwise (headless: denied), unless an exact allow
   rule names this very command;
3. `bypassPermissions` → allow (the mode says so; documented in the README);
4. `plan` mode → deny anything that writes or executes;
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
8. read-only and task tools → allow;
9. `acceptEdits` → allow edits; otherwise ask.
A caller with no way to ask (headless) turns "ask" into a denial that says why.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from .command_forms import WRAPPERS, Analysis, analyse
from .globs import compile_glob, covers, split_literal_prefix
from .shell import Script, Word, parse_script

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan", "bypassPermissions")

Verdict = Literal["allow", "ask", "deny"]
PATH_TOOLS = {"Read": "file_path", "Write": "file_path", "Edit": "file_path", "Glob": "path", "Grep": "path"}


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


# --- Bash commands ------------------------------------------------------------------

Match = Literal["yes", "maybe", "no"]
"""How a deny rule meets a command: it runs the denied program, it may (a word that
decides it is only known at run time), or it does not."""

# Words that run their arguments as a command (or change where/how the next one runs),
# so a prefix rule on them would allow anything.
_NO_PREFIX_HEADS = (
    frozenset(WRAPPERS)
    | {"cd", "pushd", "popd", "export", "eval", "source", ".", "trap", "watch", "su", "alias", "set", "unset"}
    | {"sh", "bash", "zsh", "dash", "ksh", "fish"}
    # Their options or scripts run arbitrary code: `sed 's/x/y/e'`, `find -exec`, `awk 'BEGIN{system(…)}'`.
    | {"sed", "awk", "gawk", "mawk", "nawk", "find", "tar", "rsync", "ssh", "scp", "zip", "less", "more", "man"}
    | {"vi", "vim", "nvim", "emacs", "gdb", "parallel", "script", "sqlite3", "psql", "mysql", "expect"}
)
# A prefix on these needs the subcommand or script after them (`git diff`, `node build.js`):
# the program alone, or followed by an option (`python3 -c`, `node -e`, `git -c`), runs any code.
_SUBCOMMAND_HEADS = frozenset(
    {"uv", "npm", "npx", "pnpm", "yarn", "bun", "deno", "cargo", "go", "git", "make", "pip", "pip3", "poetry"}
    | {"docker", "podman", "kubectl", "node", "ruby", "perl", "php", "lua", "Rscript", "julia", "java", "tclsh"}
    | {"pwsh", "osascript", "dotnet", "mvn", "gradle", "rake", "bundle"}
)
# `npm run build`, `uv run pytest`: the thing run is the third word.
_RUNNER_SUBCOMMANDS = frozenset({"run", "exec", "x", "run-script", "dlx"})
# git subcommands that run a command they are given (or store one for later).
_GIT_CODE_SUBCOMMANDS = frozenset({"config", "submodule", "bisect", "rebase", "filter-branch", "difftool"})
_GIT_CODE_SUBCOMMANDS |= {"mergetool", "grep", "daemon", "instaweb", "credential", "hook"}
_PYTHON = re.compile(r"python[\d.]*")


def _rule_words(body: str) -> list[str]:
    """The words of a rule's command, decoded like the command they are compared with."""
    script = parse_script(body)
    if len(script.commands) == 1 and not script.unknown:
        command = script.commands[0]
        words = [*command.assignments, *command.words]
        if all(w.value is not None for w in words):
            return [w.value for w in words if w.value is not None]
    return body.split()


def _match_words(expected: Sequence[str], form: Sequence[Word], *, prefix: bool) -> Match:
    result: Match = "yes"
    for index, want in enumerate(expected):
        if index >= len(form):
            return "no"
        word = form[index]
        if word.value is None:
            if word.splits:
                return "maybe"  # it may become any number of words: the rest is unknown
            result = "maybe"
        elif word.value != want:
            return "no"
    if not prefix and len(form) > len(expected):
        return "maybe" if all(w.splits for w in form[len(expected) :]) else "no"
    return result


def _strongest(matches: Iterable[Match]) -> Match:
    found: Match = "no"
    for match in matches:
        if match == "yes":
            return "yes"
        if match == "maybe":
            found = "maybe"
    return found


# --- paths --------------------------------------------------------------------------


def glob_literal_dir(pattern: str) -> str:
    """The directory a Glob pattern starts its walk in: `../*` → `..`, `/etc/pass*` → `/etc`."""
    return split_literal_prefix(pattern)[0]


@dataclass(frozen=True)
class PathSubject:
    absolute: str
    """Resolved (symlinks followed), posix."""
    relative: str | None
    """Workspace-relative posix, or None outside the workspace."""


# --- rules --------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """`Tool` or `Tool(spec)`; spec is a command (`git status`, `pytest:*` prefix) or a path glob.

    `Tool()` (an empty spec) is not the bare tool: it matches only an empty subject.
    """

    tool: str
    spec: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        text = text.strip()
        if "(" in text and text.endswith(")"):
            name, _, rest = text.partition("(")
            spec = rest[:-1].strip()
            if spec.removesuffix(":*").strip() == "" and spec.endswith(":*"):
                raise ValueError(f"not a permission rule: {text!r} (an empty prefix would allow everything)")
            if name.strip() in PATH_TOOLS and spec:
                compile_glob(os.path.expanduser(spec))  # ValueError: "invalid glob pattern …"
            return cls(name.strip(), spec)
        if not text or not text.replace("_", "").isalnum():
            raise ValueError(f"not a permission rule: {text!r} (expected e.g. Bash(git status) or Edit(src/**))")
        return cls(text)

    def __str__(self) -> str:
        return self.tool if self.spec is None else f"{self.tool}({self.spec})"

    # Bash specs

    @property
    def is_prefix(self) -> bool:
        return self.spec is not None and self.spec.endswith(":*")

    def matches_command_text(self, script: Script) -> bool:
        """An exact rule against the whole command (normalised blanks), compound or not."""
        return self.spec is not None and not self.is_prefix and parse_script(self.spec).text == script.text

    def match_words(self, words: Sequence[Word]) -> Match:
        """Against one simple command's words: equal, or starting with a prefix rule's words."""
        if self.spec is None:
            return "yes"
        body = self.spec.removesuffix(":*") if self.is_prefix else self.spec
        return _match_words(_rule_words(body), words, prefix=self.is_prefix)

    # path specs

    def matches_path(self, subject: PathSubject) -> bool:
        """A relative spec matches inside the workspace only; an absolute one the resolved path."""
        if self.spec is None:
            return True
        pattern = os.path.expanduser(self.spec)
        if os.path.isabs(pattern):
            return covers(pattern, subject.absolute)
        return subject.relative is not None and covers(pattern, subject.relative)


SETTINGS_DIR = ".todo-agent"
_READING = frozenset({"Read", "Grep", "Glob"})
_WRITING = frozenset({"Edit", "Write"})


def _rule_tools(tool: str, *, deny: bool) -> frozenset[str]:
    """Which tools' path rules apply to a call of `tool`: a path rule covers every tool of
    its kind (reading: Read, Grep, Glob; writing: Edit, Write), and a deny on reading also
    covers Edit, whose result shows the file's lines. Bash and tool-only rules: just the tool."""
    if tool in _READING:
        return _READING
    if tool == "Edit" and deny:
        return _READING | _WRITING
    return _WRITING if tool in _WRITING else frozenset({tool})


def _command_allowed(analysis: Analysis, rules: list[Rule]) -> bool:
    """Allow rules are the strict side: the command as written (assignments included), every
    simple command matching; anything opaque matches only an exact rule."""
    script = analysis.script
    if any(r.matches_command_text(script) for r in rules):
        return True
    if script.substitution or script.file_redirect or script.unknown or not script.commands:
        return False
    return all(
        any(r.match_words((*c.assignments, *c.words)) == "yes" for r in rules) for c in script.commands if c.words
    ) and any(c.words for c in script.commands)


def _command_denied(analysis: Analysis, rules: list[Rule]) -> Match:
    """Deny rules match any form of any program the line runs; an unreadable line may run anything."""
    if any(r.matches_command_text(analysis.script) for r in rules):
        return "yes"
    found = _strongest(r.match_words(form) for command in analysis.commands for form in command.forms for r in rules)
    return "maybe" if found == "no" and not analysis.complete else found


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
        return Decision("ask", f"{tool} needs approval in {self.mode} mode")

    def _rules_and_mode(self, tool: str, kind: str, args: dict[str, Any]) -> Decision | None:
        """Steps 1-3: deny rules, then the modes that decide alone."""
        denied = self._denied(tool, args)
        if denied == "yes":
            return Decision("deny", f"{tool} is denied by a permission rule")
        if denied == "maybe" and (uncertain := self._uncertain(tool, args)) is not None:
            return uncertain
        if self.mode == "bypassPermissions":
            return Decision("allow")
        if self.mode == "plan" and kind in ("edit", "execute"):
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

    def _denied(self, tool: str, args: dict[str, Any]) -> Match:
        if any(r.tool == tool and r.spec is None for r in self.deny):
            return "yes"
        family = _rule_tools(tool, deny=True)
        rules = [r for r in self.deny if r.tool in family and r.spec is not None]
        if not rules:
            return "no"
        if tool == "Bash":
            command = args.get("command")
            return _command_denied(analyse(command), rules) if isinstance(command, str) else "no"
        path = self._path_subject(tool, args)
        return "yes" if path is not None and any(r.matches_path(path) for r in rules) else "no"

    def _hits(self, rules: list[Rule], tool: str, args: dict[str, Any]) -> bool:
        if any(r.tool == tool and r.spec is None for r in rules):
            return True
        family = _rule_tools(tool, deny=False)
        rules = [r for r in rules if r.tool in family and r.spec is not None]
        if not rules:
            return False
        if tool == "Bash":
            command = args.get("command")
            return isinstance(command, str) and _command_allowed(analyse(command), rules)
        path = self._path_subject(tool, args)
        return path is not None and any(r.matches_path(path) for r in rules)

    def suggest_rule(self, tool: str, args: dict[str, Any]) -> str:
        """The rule that "yes, and don't ask again" adds: narrow, but useful next time.

        Never a bare tool name for a tool with a command or path: without one (a malformed
        call) the rule is `Tool()`, which matches nothing real.
        """
        if tool == "Bash":
            command = args.get("command")
            return _suggest_command_rule(command) if isinstance(command, str) else "Bash()"
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
        rules = [r for r in self.deny if r.tool in _READING and r.spec is not None]
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


def _suggest_command_rule(command: str) -> str:
    """`Bash(<program> [subcommand]:*)` for one plain command; the exact command whenever a
    prefix would allow more than the person saw: compound commands, substitutions,
    redirections, wrappers, and programs whose options or scripts run arbitrary code
    (`python3 -c`, `node -e`, `git -c`, `sed`, `find`, `awk`)."""
    analysis = analyse(command)
    script = analysis.script
    exact = f"Bash({script.text})"
    if len(script.commands) != 1 or len(analysis.commands) != 1 or script.substitution or script.file_redirect:
        return exact
    simple = script.commands[0]
    words = simple.static_words
    if not analysis.complete or simple.assignments or not words or words[0] in _NO_PREFIX_HEADS:
        return exact
    head = _command_head(words)
    return exact if head is None else f"Bash({shlex.join(head)}:*)"


def _command_head(words: list[str]) -> list[str] | None:
    """The words a prefix rule should name, or None when only the exact command is safe."""
    program = words[0]
    if program not in _SUBCOMMAND_HEADS and not _PYTHON.fullmatch(program):
        return words[:1]
    if len(words) < 2 or (words[1].startswith("-") and words[1] != "-m"):
        return None
    head = words[:2]
    if words[1] == "-m" or (words[1] in _RUNNER_SUBCOMMANDS and program not in ("node", "ruby", "perl", "php")):
        if len(words) < 3 or words[2].startswith("-"):  # `python -m` needs the module, `npm run` the script
            return None
        head = words[:3]
    if program == "git" and words[1] in _GIT_CODE_SUBCOMMANDS:
        return None
    return head
