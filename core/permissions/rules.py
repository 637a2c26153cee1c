"""What one permission rule is, and what it matches.

A rule is `Tool` or `Tool(spec)`: the spec is a Bash command (`git status`, or a prefix
`pytest:*`) or a path glob (`src/**`). Deny rules match any form of any program a command
line runs (`core/permissions/command_forms.py`); allow rules are the strict side, matched against
the command as written. `suggest_command_rule` proposes the rule "yes, and don't ask
again" adds: a prefix only where a prefix allows no more than the person saw. The order
in which rules, modes and protected paths decide a call is `core/permissions/policy.py`'s.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..access import READ_ONLY, WRITES, PathUse
from ..globs import compile_glob, covers, split_literal_prefix
from .command_forms import WRAPPERS, Analysis, analyse
from .shell import Script, Word, parse_script

# --- MCP tools ----------------------------------------------------------------------

MCP_PREFIX = "mcp__"
MCP_SEPARATOR = "__"
"""An MCP tool is `mcp__<server>__<tool>` (`core/mcp/names.py`); the server's part holds no `__`."""
_BARE_RULE = re.compile(r"[A-Za-z0-9_-]+")


def mcp_server(name: str) -> str | None:
    """The server of an MCP tool's (or rule's) name: `mcp__github__create_issue` → `github`."""
    if not name.startswith(MCP_PREFIX):
        return None
    part, _, _ = name[len(MCP_PREFIX) :].partition(MCP_SEPARATOR)
    return part or None


def mcp_server_rule(tool: str) -> str:
    """The rule naming every tool of `tool`'s MCP server (`mcp__github`), or "" for other tools."""
    server = mcp_server(tool)
    return f"{MCP_PREFIX}{server}" if server else ""


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
            if name.strip() != "Bash" and spec:  # any other tool's spec is a path glob
                compile_glob(os.path.expanduser(spec))  # ValueError: "invalid glob pattern …"
            return cls(name.strip(), spec)
        bare = text.removesuffix(MCP_SEPARATOR + "*") if mcp_server(text) else text
        if not _BARE_RULE.fullmatch(bare) or (bare != text and bare.count(MCP_SEPARATOR) != 1):
            raise ValueError(
                f"not a permission rule: {text!r} (expected e.g. Bash(git status), Edit(src/**) or mcp__server__tool)"
            )
        return cls(text)

    def __str__(self) -> str:
        return self.tool if self.spec is None else f"{self.tool}({self.spec})"

    def names_tool(self, tool: str) -> bool:
        """A rule without a spec names the tool itself; `mcp__server` and `mcp__server__*`
        name every tool of that MCP server."""
        if self.spec is not None:
            return False
        if self.tool == tool:
            return True
        server_rule = mcp_server_rule(tool)
        return bool(server_rule) and self.tool in (server_rule, server_rule + MCP_SEPARATOR + "*")

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

    # network specs (`WebFetch(domain:docs.python.org)`, `WebFetch(domain:*.python.org)`)

    def matches_domain(self, host: str) -> bool:
        """Whether this rule covers fetching from `host` (lower-case): a bare tool rule
        covers every host, `domain:x` that host, `domain:*.x` the hosts below x."""
        if self.spec is None:
            return True
        kind, _, domain = self.spec.partition(":")
        domain = domain.strip().lower()
        if kind.strip() != "domain" or not domain or not host:
            return False
        if domain.startswith("*."):
            return host.endswith(domain[1:])
        return host == domain

    def names_host(self, host: str) -> bool:
        """Whether this rule names exactly `host` (no bare tool, no wildcard): what it takes
        to let a fetch reach a private or local address."""
        return self.spec is not None and self.spec.replace(" ", "").lower() == f"domain:{host}"

    # path specs

    def matches_path(self, subject: PathSubject) -> bool:
        """A relative spec matches inside the workspace only; an absolute one the resolved path."""
        if self.spec is None:
            return True
        pattern = os.path.expanduser(self.spec)
        if os.path.isabs(pattern):
            return covers(pattern, subject.absolute)
        return subject.relative is not None and covers(pattern, subject.relative)


def speaks_for(rule_tool: str, rule_uses: frozenset[PathUse], tool: str, use: PathUse, *, deny: bool) -> bool:
    """Whether a path rule on `rule_tool` (whose declared paths are used as `rule_uses`)
    applies to a path a call of `tool` uses as `use`.

    A rule covers its own tool, and every tool's paths of its family: a rule on a tool
    that reads paths (Read, Grep, Glob, …) covers every path any tool reads; one on a tool
    that writes (Edit, Write) every path any tool writes. A path a tool both reads and
    writes (`edit`: Edit shows the file's lines) is denied by either, allowed only by a
    rule on writing. Families come from the declarations, never from a list of names.
    """
    if rule_tool == tool:
        return True
    reads, writes = bool(rule_uses & READ_ONLY), bool(rule_uses & WRITES)
    if use in READ_ONLY:
        return reads
    if use == "write":
        return writes
    return writes or (deny and reads)


def command_allowed(analysis: Analysis, rules: list[Rule]) -> bool:
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


def command_denied(analysis: Analysis, rules: list[Rule]) -> Match:
    """Deny rules match any form of any program the line runs; an unreadable line may run anything."""
    if any(r.matches_command_text(analysis.script) for r in rules):
        return "yes"
    found = _strongest(r.match_words(form) for command in analysis.commands for form in command.forms for r in rules)
    return "maybe" if found == "no" and not analysis.complete else found


def suggest_command_rule(command: str) -> str:
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
