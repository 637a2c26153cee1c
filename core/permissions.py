"""Who may run what: permission modes, allow/deny rules, and the approval exchange.

Decision order for one tool call:
1. a matching `deny` rule → deny (deny always wins; for Bash, ANY simple command of a
   compound command matching, also by the command's basename: `/bin/rm` is `rm`);
2. `bypassPermissions` → allow (the mode says so; documented in the README);
3. `plan` mode → deny anything that writes or executes;
4. Edit/Write under `<workspace>/.todo-agent/` → ask (the model must not rewrite its own
   permissions; neither `acceptEdits` nor allow rules approve it);
5. a path outside the workspace → ask (unless an allow rule matches; relative rules only
   match inside the workspace, so only an absolute rule like `Read(/etc/**)` can);
6. a matching `allow` rule (settings or "don't ask again") → allow; for Bash, EVERY simple
   command must match an allow rule, and a command with `$(…)`, backticks, `<(…)` or a
   redirection to a file matches no prefix rule, only an exact one;
7. read-only and task tools → allow;
8. `acceptEdits` → allow edits; otherwise ask.
A caller with no way to ask (headless) turns "ask" into a denial that says why.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import shlex
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

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


# --- Bash commands ------------------------------------------------------------------

# Longest first, so `&&` is not read as two `&`. Parentheses split too: `(rm -rf /)` is
# still an `rm` to a deny rule.
_CONTROL_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
# Redirections that touch no file: fd duplication/closing and /dev/null.
_HARMLESS_REDIRECT = re.compile(r"(?:[<>]&(?:\d+|-)|(?:&>>?|>>?)[ \t]*/dev/null)(?=[\s;&|()]|$)")
_TRAILING_FD = re.compile(r"(?<![^ \t])\d+$")  # the `2` of `2>&1`
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Words that run their arguments as a command (or change where/how the next one runs),
# so a prefix rule on them would allow anything.
_WRAPPERS = frozenset({"sudo", "env", "command", "exec", "nohup", "time", "nice", "builtin", "xargs"})
_NO_PREFIX_HEADS = _WRAPPERS | {"cd", "pushd", "popd", "export", "sh", "bash", "zsh", "eval", "source", "."}
_TWO_WORD_HEADS = frozenset({"python", "python3", "uv", "npm", "npx", "cargo", "go", "git", "make"})


@dataclass(frozen=True)
class ParsedCommand:
    """A shell command cut into simple commands at control operators."""

    text: str
    """The whole command with runs of blanks outside quotes collapsed (what exact rules compare)."""
    parts: tuple[str, ...]
    """The simple commands, as written."""
    opaque: bool
    """Has a command substitution, process substitution or file redirection: no prefix rule fits."""

    @property
    def words(self) -> list[list[str] | None]:
        """Each simple command split as the shell would (None where quoting does not parse)."""
        return [_split_words(part) for part in self.parts]


def _split_words(text: str) -> list[str] | None:
    try:
        return shlex.split(text, posix=True)
    except ValueError:
        return None


def parse_command(command: str) -> ParsedCommand:
    """Cut `command` into simple commands, tracking quotes so `echo "a;b"` stays one."""
    scanner = _CommandScanner(command)
    while scanner.i < len(command):
        scanner.i += scanner.step()
    scanner.cut()
    return ParsedCommand("".join(scanner.normal).strip(), tuple(scanner.parts), scanner.opaque or bool(scanner.quote))


class _CommandScanner:
    """One pass over a command; each `step` reads one construct and says how long it was."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.i = 0
        self.quote = ""  # the open quote character, if any
        self.opaque = False
        self.parts: list[str] = []
        self.normal: list[str] = []  # the whole command, blanks collapsed outside quotes
        self.current: list[str] = []  # the simple command being read

    def take(self, text: str) -> int:
        self.normal.append(text)
        self.current.append(text)
        return len(text)

    def cut(self) -> None:
        if text := "".join(self.current).strip():
            self.parts.append(text)
        self.current.clear()

    def step(self) -> int:
        command, i = self.command, self.i
        char = command[i]
        if self.quote == "'":  # nothing is special inside single quotes
            self.quote = "" if char == "'" else self.quote
            return self.take(char)
        if char == "\\":
            return self.take(command[i : i + 2])
        if command.startswith(("$(", "`"), i) or (not self.quote and command.startswith(("<(", ">("), i)):
            return self.substitution(1 if char == "`" else 2)
        if self.quote == '"':
            self.quote = "" if char == '"' else self.quote
            return self.take(char)
        return self.unquoted_step(char)

    def substitution(self, width: int) -> int:
        # Substitutions run a command (even inside double quotes): cut, so a deny rule
        # still sees the inner command, and no prefix rule may allow the whole.
        self.opaque = True
        self.normal.append(self.command[self.i : self.i + width])
        self.cut()
        return width

    def unquoted_step(self, char: str) -> int:
        command, i = self.command, self.i
        if char == "#" and "".join(self.current)[-1:] in ("", " ", "\t"):
            # A comment, to the end of the line: its quotes are not quotes, and the next
            # line is a command of its own (`git status #'<newline>rm -rf ~ #'`).
            end = command.find("\n", i)
            return (len(command) if end < 0 else end) - i
        if command.startswith("$'", i):
            # ANSI-C quoting has its own escapes (`$'\''` does not close the quote), which
            # shlex does not know: the words are not what bash runs, so nothing may match.
            self.opaque = True
            end = i + 2
            while end < len(command) and command[end] != "'":
                end += 2 if command[end] == "\\" else 1
            return self.take(command[i : end + 1])
        if char in "'\"":
            self.quote = char
            return self.take(char)
        if char in " \t":
            if self.normal and self.normal[-1] not in (" ", "\n"):
                self.normal.append(" ")
            self.current.append(" ")
            return 1
        if (match := _HARMLESS_REDIRECT.match(command, i)) is not None:
            self.normal.append(match.group())
            if not match.group().startswith("&"):  # `&>` takes no fd number before it
                self.current[:] = [_TRAILING_FD.sub("", "".join(self.current))]
            return len(match.group())
        if (op := next((o for o in _CONTROL_OPERATORS if command.startswith(o, i)), None)) is not None:
            while op == "\n" and self.normal and self.normal[-1] == " ":
                self.normal.pop()
            self.normal.append(op)
            self.cut()
            return len(op)
        self.opaque = self.opaque or char in "<>"  # a redirection to or from a file
        return self.take(char)


def _deny_forms(words: list[str]) -> list[list[str]]:
    """The ways a deny rule may see one simple command: as written, by the head's basename,
    and without leading wrappers and assignments (`sudo /bin/rm` is still `rm`)."""
    forms = [words]
    rest = list(words)
    while rest and (rest[0] in _WRAPPERS or _ASSIGNMENT.match(rest[0])):
        rest = rest[1:]
        while rest and rest[0].startswith("-"):  # the wrapper's own options
            rest = rest[1:]
    for candidate in (words, rest):
        if candidate:
            forms += [candidate, [os.path.basename(candidate[0]), *candidate[1:]]]
    return forms


# --- paths --------------------------------------------------------------------------

_GLOB_MAGIC = re.compile(r"[*?\[{]")  # what the Glob tool treats as a pattern character


def glob_literal_dir(pattern: str) -> str:
    """The directory a Glob pattern starts its walk in: `../*` → `..`, `/etc/pass*` → `/etc`.

    Mirrors the Glob tool: leading segments without pattern characters, never the last one.
    """
    literal: list[str] = []
    for segment in pattern.split("/")[:-1]:
        if _GLOB_MAGIC.search(segment):
            break
        literal.append(segment)
    prefix = "/".join(literal)
    return (prefix or "/") if pattern.startswith("/") else prefix


@dataclass(frozen=True)
class PathSubject:
    absolute: str
    """Resolved (symlinks followed), posix."""
    relative: str | None
    """Workspace-relative posix, or None outside the workspace."""


def _path_pattern_matches(pattern: str, path: str) -> bool:
    """Glob match where `dir`, `dir/` and `dir/**` also cover the directory itself and all below."""
    if fnmatch.fnmatchcase(path, pattern):
        return True
    base = pattern.removesuffix("/**").rstrip("/")
    return bool(base) and (fnmatch.fnmatchcase(path, base) or fnmatch.fnmatchcase(path, base + "/*"))


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

    def matches_command_text(self, command: ParsedCommand) -> bool:
        """An exact rule against the whole (normalised) command, compound or not."""
        return self.spec is not None and not self.is_prefix and parse_command(self.spec).text == command.text

    def matches_words(self, words: Sequence[str]) -> bool:
        """Against one simple command's words: equal, or starting with a prefix rule's words."""
        if self.spec is None:
            return True
        body = self.spec.removesuffix(":*") if self.is_prefix else self.spec
        expected = _split_words(body) or body.split()
        return list(words[: len(expected)]) == expected if self.is_prefix else list(words) == expected

    # path specs

    def matches_path(self, subject: PathSubject) -> bool:
        """A relative spec matches inside the workspace only; an absolute one the resolved path."""
        if self.spec is None:
            return True
        pattern = os.path.expanduser(self.spec)
        if os.path.isabs(pattern):
            return _path_pattern_matches(pattern, subject.absolute)
        return subject.relative is not None and _path_pattern_matches(pattern, subject.relative)


PATH_TOOLS = {"Read": "file_path", "Write": "file_path", "Edit": "file_path", "Glob": "path", "Grep": "path"}
SETTINGS_DIR = ".todo-agent"


def _command_allowed(command: ParsedCommand, rules: list[Rule]) -> bool:
    if any(r.matches_command_text(command) for r in rules):
        return True
    if command.opaque or not command.parts:
        return False
    return all(words is not None and any(r.matches_words(words) for r in rules) for words in command.words)


def _command_denied(command: ParsedCommand, rules: list[Rule]) -> bool:
    if any(r.matches_command_text(command) for r in rules):
        return True
    for part, words in zip(command.parts, command.words, strict=True):
        forms = _deny_forms(words if words is not None else part.split())
        if any(r.matches_words(form) for form in forms for r in rules):
            return True
    return False


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
        if self._hits(self.deny, tool, args, deny=True):
            return Decision("deny", f"{tool} is denied by a permission rule")
        if self.mode == "bypassPermissions":
            return Decision("allow")
        if self.mode == "plan" and kind in ("edit", "execute"):
            return Decision("deny", "plan mode: nothing that writes or executes runs (shift+tab changes the mode)")
        path = self._path_subject(tool, args)
        if tool in ("Edit", "Write") and path is not None and _in_settings_dir(path):
            return Decision("ask", f"{SETTINGS_DIR}/ holds todo-agent's own settings: changes to it always ask")
        allowed = self._hits([*self.allow, *self.session_allow], tool, args, deny=False)
        if path is not None and path.relative is None and not allowed:
            return Decision("ask", "the path is outside the workspace", outside_workspace=True)
        if allowed or kind in ("read", "task"):
            return Decision("allow")
        if self.mode == "acceptEdits" and kind == "edit":
            return Decision("allow")
        return Decision("ask", f"{tool} needs approval in {self.mode} mode")

    def _hits(self, rules: list[Rule], tool: str, args: dict[str, Any], *, deny: bool) -> bool:
        rules = [r for r in rules if r.tool == tool]
        if any(r.spec is None for r in rules):
            return True
        if not rules:
            return False
        if tool == "Bash":
            command = args.get("command")
            if not isinstance(command, str):
                return False
            parsed = parse_command(command)
            return _command_denied(parsed, rules) if deny else _command_allowed(parsed, rules)
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


def _in_settings_dir(path: PathSubject) -> bool:
    # casefold: on a case-insensitive file system `.TODO-AGENT/` is the same directory.
    return path.relative is not None and path.relative.split("/")[0].casefold() == SETTINGS_DIR


def _suggest_command_rule(command: str) -> str:
    """`Bash(<head>:*)` for one plain command; the exact command when a prefix would be too
    broad (compound, substitutions, redirections, `cd`/`sudo`/`env`-style heads)."""
    parsed = parse_command(command)
    words = parsed.words[0] if len(parsed.parts) == 1 else None
    if parsed.opaque or not words or words[0] in _NO_PREFIX_HEADS or _ASSIGNMENT.match(words[0]):
        return f"Bash({parsed.text})"
    head = words[:2] if words[0] in _TWO_WORD_HEADS and len(words) > 1 else words[:1]
    if head[-1] == "-m" and len(words) > len(head):  # `python -m pytest`: the module is the command
        head = words[: len(head) + 1]
    return f"Bash({shlex.join(head)}:*)"
