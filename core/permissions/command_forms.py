"""What a shell command line really runs, program by program, for deny rules.

`analyse(command)` parses the line (`core/permissions/shell.py`) and normalises every simple command
to the program and subcommand it runs:

- wrappers that run their arguments as a command are stripped with their own options
  (`env -i -u X A=1`, `nice -n 5`, `timeout -s KILL 5`, `xargs -n 1`, `stdbuf -o0`,
  `nohup`, `time -p`, `exec -a x`, `command`, `builtin`, `sudo -u root`, `doas`, `setsid`,
  `ionice`, `taskset`, `chroot`, `flock`, `busybox`, `strace`, `unbuffer`, `watch`);
- a path to a program counts as the program (`/usr/bin/rm` is `rm`);
- git, docker, kubectl, cargo, npm and the like have their global options skipped
  (`git -c x=y --no-pager -C dir push` is `git push`);
- a literal command string given to a shell (`sh -c 'rm f'`), `eval`, `trap`, `su -c`,
  `flock -c`, `watch` or `env -S` is parsed in turn, and `find -exec` runs its command.

Each simple command keeps every form it took on the way (`sudo nice rm f`, `nice rm f`,
`rm f`), so a rule on any of them matches. When part of what runs cannot be read
statically (`eval "$x"`, `sh -c "$cmd"`, `$CMD f`, `bash script.sh`, a git alias, an
environment variable that names a command to run), `Analysis.unknown` says so: the
permission gate treats such a command as matching every deny rule.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .shell import Script, SimpleCommand, Word, parse_script

Form = tuple[Word, ...]
_MAX_NESTING = 8
_MAX_STEPS = 64


@dataclass(frozen=True)
class CommandForms:
    """One program run by the line, in every form it took while being unwrapped."""

    forms: tuple[Form, ...]
    """As written first; then without each wrapper, by basename, without global options."""
    top_level: bool
    """Written in the line itself (not found inside `sh -c '…'`, `eval`, `find -exec`, …)."""

    @property
    def written(self) -> Form:
        return self.forms[0]

    @property
    def normalised(self) -> Form:
        return self.forms[-1]


@dataclass(frozen=True)
class Analysis:
    script: Script
    """The line as parsed (exact rules and allow rules read this)."""
    commands: tuple[CommandForms, ...]
    unknown: tuple[str, ...]
    """Why part of what runs cannot be seen; empty when the line was normalised fully."""

    @property
    def complete(self) -> bool:
        return not self.unknown


def analyse(command: str) -> Analysis:
    collector = _Collector()
    script = parse_script(command)
    collector.add_script(script, top_level=True, depth=0)
    return Analysis(script, tuple(collector.commands), tuple(dict.fromkeys(collector.unknown)))


# --- wrappers ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Options:
    """A program's own option syntax (GNU getopt style: options first, then the rest)."""

    flags: str = ""
    """Short options without a value."""
    valued: str = ""
    """Short options that take a value (`-n 5`, `-n5`)."""
    long_flags: frozenset[str] = frozenset()
    long_valued: frozenset[str] = frozenset()
    numeric: bool = False
    """`-5` is an option (nice)."""
    assignments: bool = False
    """`NAME=value` words may come before the command (env, sudo)."""
    positional: int = 0
    """Operands before the command (timeout's duration, chroot's directory)."""


def _opts(
    flags: str = "",
    valued: str = "",
    long_flags: str = "",
    long_valued: str = "",
    **extra: bool | int,
) -> _Options:
    return _Options(flags, valued, frozenset(long_flags.split()), frozenset(long_valued.split()), **extra)  # type: ignore[arg-type]


WRAPPERS: dict[str, _Options] = {
    # Not `-S`/`--split-string`: env splits that string by its own rules; it stays unknown.
    "env": _opts("i0v", "uC", "ignore-environment null debug", "unset chdir", assignments=True),
    "nice": _opts("", "n", "", "adjustment", numeric=True),
    "timeout": _opts("v", "sk", "preserve-status foreground verbose", "signal kill-after", positional=1),
    "xargs": _opts(
        "0prtx",
        "aEdIiLlnPs",
        "null no-run-if-empty verbose exit interactive open-tty",
        "arg-file delimiter eof replace max-lines max-args max-procs max-chars process-slot-var",
    ),
    "stdbuf": _opts("", "ioe", "", "input output error"),
    "nohup": _opts(),
    "time": _opts("pvaq", "fo", "portability verbose append quiet", "format output"),
    "exec": _opts("cl", "a"),
    "command": _opts("p"),
    "builtin": _opts(),
    "sudo": _opts(
        "ABbEeHiKklNnPSsVv",
        "CDghpRrTtUu",
        "askpass bell background preserve-env edit set-home login remove-timestamp reset-timestamp list "
        "no-update non-interactive preserve-groups stdin shell version validate",
        "close-from chdir group host prompt chroot role type command-timeout other-user user",
        assignments=True,
    ),
    "doas": _opts("nsL", "uC"),
    "setsid": _opts("cfw", "", "ctty fork wait"),
    "ionice": _opts("t", "cnpPu", "ignore", "class classdata pid pgid uid"),
    "taskset": _opts("ac", "", "all-tasks cpu-list", positional=1),
    "chroot": _opts("", "", "skip-chdir", "userspec groups", positional=1),
    "flock": _opts(
        "sxeunoFv",
        "wE",
        "shared exclusive unlock nonblock close no-fork verbose",
        "timeout conflict-exit-code",
        positional=1,
    ),
    "busybox": _opts(),
    "strace": _opts("cCdDfFhiqrtTvVwxyzZ", "abeIoOpPsSuUX", "", "", positional=0),
    "ltrace": _opts("bcCfhiLrStTV", "aAeEFlnopsux"),
    "unbuffer": _opts("p"),
    "caffeinate": _opts("dimsu", "tw"),
}

# Options of these wrappers whose value is itself a shell command line.
_SHELL_STRING_OPTIONS = {("flock", "-c"), ("flock", "--command"), ("su", "-c"), ("su", "--command")}
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "lksh", "rbash"})
# How each shell reads a command string: bash's way, POSIX (dash), or either (`sh` is dash
# on Debian and bash elsewhere; the others are close to both). Either means both readings count.
_EITHER = (False, True)
_DIALECTS = {"bash": (False,), "rbash": (False,), "dash": (True,), "ash": (True,), "posh": (True,)}
_SHELL_OPTIONS = _opts(
    "abefhkmnptuvxBCEHPTilrsD",
    "oO",
    "norc noprofile posix login noediting restricted verbose version help debugger dump-strings dump-po-strings "
    "pretty-print wordexp",
    "rcfile init-file",
)
# Words that run no program at all, only print what it is.
_QUERY_OPTIONS = {"command": ("-v", "-V"), "type": (), "which": (), "hash": ()}


# --- programs with subcommands ---------------------------------------------------------

_GLOBAL_OPTIONS: dict[str, frozenset[str]] = {
    # program: its global options that take a value as the next word (other options take none)
    "git": frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}),
    "docker": frozenset({"-H", "--host", "-c", "--context", "--config", "-l", "--log-level", "--tlscacert"})
    | frozenset({"--tlscert", "--tlskey"}),
    "podman": frozenset({"--url", "-c", "--connection", "--log-level", "--root", "--runroot"}),
    "kubectl": frozenset({"-n", "--namespace", "--context", "--kubeconfig", "-s", "--server", "--cluster", "--user"})
    | frozenset({"--token", "-v", "--as", "--as-group", "--cache-dir", "--certificate-authority"})
    | frozenset({"--client-certificate", "--client-key", "--request-timeout", "--tls-server-name"}),
    "cargo": frozenset({"-C", "--config", "-Z", "--color"}),
    "npm": frozenset({"--prefix", "-C", "--workspace", "-w", "--userconfig"}),
    "pnpm": frozenset({"-C", "--dir", "--filter", "-F"}),
    "yarn": frozenset({"--cwd"}),
    "uv": frozenset({"--directory", "--project", "--config-file", "--cache-dir"}),
    "go": frozenset({"-C"}),
    "make": frozenset({"-C", "-f", "--file", "--directory", "-j", "-l", "-I", "-o", "-W"}),
    "systemctl": frozenset({"-H", "--host", "-M", "--machine"}),
}
# A git command that is none of git's own can be an alias, and an alias may run any shell
# command (`alias.x = !rm f`): such a command is not fully known.
_GIT_COMMAND_NAMES = """
    add am annotate apply archive backfill bisect blame branch bugreport bundle cat-file check-attr check-ignore
    check-mailmap check-ref-format checkout checkout-index cherry cherry-pick citool clean clone column commit
    commit-graph commit-tree config count-objects credential credential-cache credential-store daemon describe
    diagnose diff diff-files diff-index diff-pairs diff-tree difftool fast-export fast-import fetch fetch-pack
    filter-branch fmt-merge-msg for-each-ref for-each-repo format-patch fsck fsck-objects fsmonitor--daemon gc
    get-tar-commit-id gitk grep gui hash-object help hook http-backend http-fetch http-push imap-send index-pack
    init init-db instaweb interpret-trailers last-modified log ls-files ls-remote ls-tree mailinfo mailsplit
    maintenance merge merge-base merge-file merge-index merge-one-file merge-tree mergetool mktag mktree
    multi-pack-index mv name-rev notes pack-objects pack-redundant pack-refs patch-id prune prune-packed pull
    push quiltimport range-diff read-tree rebase receive-pack reflog refs remote repack replace replay repo
    request-pull rerere reset restore rev-list rev-parse revert rm scalar send-email send-pack shell shortlog
    show show-branch show-index show-ref sparse-checkout stage stash status stripspace submodule subtree switch
    symbolic-ref tag unpack-file unpack-objects update-index update-ref update-server-info upload-archive
    upload-pack var verify-commit verify-pack verify-tag version whatchanged worktree write-tree
"""
_GIT_COMMANDS = frozenset(_GIT_COMMAND_NAMES.split())
# Bash builtins that evaluate their operands as arithmetic or variable names: text such as
# `a[$(cmd)]` handed to them runs cmd.
_EVALUATING_BUILTINS = frozenset(
    {"declare", "typeset", "local", "export", "readonly", "let", "test", "[", "unset", "printf", "read"}
    | {"mapfile", "readarray", "wait", "getopts"}
)
# Builtins that change how later words are read or run code from elsewhere.
_OPAQUE_BUILTINS = {
    "source": "it runs a script file",
    ".": "it runs a script file",
    "alias": "an alias can make a later word run another command",
    "enable": "enable can load a builtin from a shared library",
    "fc": "fc runs commands from the history",
    "bind": "bind can run shell commands",
    "complete": "complete can register commands to run",
    "compgen": "compgen can run commands",
    "shopt": "shopt can turn on aliases or extended globs",
    "set": None,
}
# Environment variables whose value some program runs as a command.
_COMMAND_VARIABLE = re.compile(
    r"(?:BASH_ENV|ENV|PS4|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|LD_PRELOAD|LD_AUDIT|BASH_FUNC_.*"
    r"|.*(?:_COMMAND|_CMD|EDITOR|PAGER|ASKPASS|_SSH|_PROGRAM|EXTERNAL_DIFF|_HOOK|_PROXY_COMMAND))"
)
_SHELL_META = re.compile(r"[\s;&|`$<>()]")


# --- the walk -------------------------------------------------------------------------


@dataclass
class _Collector:
    commands: list[CommandForms] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    dialect: tuple[bool, ...] = (False,)
    """How the script being read is read (`eval` and `trap` strings are read the same way)."""

    def add_script(self, script: Script, *, top_level: bool, depth: int) -> None:
        self.unknown.extend(script.unknown)
        outer, self.dialect = self.dialect, (script.posix,)
        try:
            self._add_commands(script, top_level=top_level, depth=depth)
        finally:
            self.dialect = outer

    def _add_commands(self, script: Script, *, top_level: bool, depth: int) -> None:
        for command in script.commands:
            self._check_assignments(command)
            if command.words:
                self.add_argv(command.words, top_level=top_level, depth=depth)

    def add_text(self, text: str | None, what: str, depth: int, dialects: tuple[bool, ...] = (False,)) -> None:
        """A command line held in a string (`sh -c '…'`): parse it too, if it is known,
        in each dialect the shell running it may speak (True: POSIX, as dash reads it)."""
        if text is None:
            self.unknown.append(f"{what} runs a command line that is only known at run time")
        elif depth >= _MAX_NESTING:
            self.unknown.append(f"{what} nests command lines too deeply to read")
        else:
            for posix in dialects:
                self.add_script(parse_script(text, posix=posix), top_level=False, depth=depth + 1)

    def _check_assignments(self, command: SimpleCommand) -> None:
        for name, value in _assignments(command):
            self._check_variable(name, value)

    def _check_variable(self, name: str, value: Word | None) -> None:
        if _COMMAND_VARIABLE.fullmatch(name) and (value is None or _runs_code(value)):
            self.unknown.append(f"{name} names a command for a program to run")

    def add_argv(self, argv: Form, *, top_level: bool, depth: int) -> None:
        forms: list[Form] = []
        for _ in range(_MAX_STEPS):
            argv = self._step(argv, forms, depth)
            if not argv:
                break
        self.commands.append(CommandForms(tuple(forms), top_level))

    def _step(self, argv: Form, forms: list[Form], depth: int) -> Form:
        """Record `argv`; return the next form to look at, or () when this is the program."""
        forms.append(argv)
        head = argv[0].value
        if head is None:
            self.unknown.append("the program's name is only known at run time")
            return ()
        name = os.path.basename(head.rstrip("/")) or head
        if name != head:
            argv = (Word(name, prefix=name), *argv[1:])
            forms.append(argv)
        handler = _HANDLERS.get(name)
        if handler is not None:
            return handler(self, argv, depth)
        if name in WRAPPERS:
            return self._unwrap(argv, name)
        if name in _SHELLS:
            self._shell(argv, depth)
            return ()
        if name in _GLOBAL_OPTIONS:
            normalised = _skip_global_options(argv, name)
            if normalised is None:
                self.unknown.append(f"{name}'s options are only known at run time")
            elif normalised != argv:
                forms.append(normalised)
            if name == "git":
                self._git(argv, normalised)
            return ()
        self._builtin(name, argv)
        return ()

    def _unwrap(self, argv: Form, name: str) -> Form:
        rest = _strip_options(argv, WRAPPERS[name], name, self)
        if rest is None:
            self.unknown.append(f"where the command after {name} starts is only known at run time")
            return ()
        if not rest:
            return (Word("echo", prefix="echo"),) if name == "xargs" else ()
        return rest

    def _shell(self, argv: Form, depth: int) -> None:
        name = argv[0].value
        index, command_string = 1, False
        while index < len(argv):
            word = argv[index].value
            if word is None:
                if command_string:
                    break  # the command string itself is computed: add_text says so
                self.unknown.append(f"{name}'s options are only known at run time")
                return
            if word in ("--", "-"):
                index += 1
                break
            if word.startswith("--"):
                index += 2 if word[2:] in _SHELL_OPTIONS.long_valued else 1
                continue
            if not word.startswith(("-", "+")) or len(word) == 1:
                break
            letters = word[1:]
            command_string = command_string or "c" in letters
            index += 1 + sum(1 for letter in letters if letter in _SHELL_OPTIONS.valued)
        if command_string:
            text = argv[index].value if index < len(argv) else ""
            self.add_text(text, f"{name} -c", depth, _DIALECTS.get(name or "", _EITHER))
        elif index < len(argv):
            self.unknown.append(f"{name} runs the script file {argv[index]}, which the gate cannot read")
        else:
            self.unknown.append(f"{name} reads commands from its input")

    def _git(self, written: Form, normalised: Form | None) -> None:
        for index, word in enumerate(written[1:-1], 1):
            if word.value in ("-c", "--config-env", "--exec-path") or (word.value or "").startswith(
                ("--exec-path=", "--config-env=")
            ):
                value = written[index + 1]
                if word.value != "-c" or not _harmless_git_config(value):
                    self.unknown.append("git is given configuration that can run commands")
        if normalised is None or len(normalised) < 2:
            return
        sub = normalised[1].value
        if sub is None or (not sub.startswith("-") and sub not in _GIT_COMMANDS):
            self.unknown.append(f"'git {sub or '…'}' is not a git command, so it may be an alias")

    def _builtin(self, name: str, argv: Form) -> None:
        if name in _OPAQUE_BUILTINS:
            reason = _OPAQUE_BUILTINS[name]
            if name == "set":  # `set -o …` is harmless; only `set` changing nothing we read
                return
            if name == "shopt" and not any(w.value in ("expand_aliases", "extglob") for w in argv[1:]):
                return
            self.unknown.append(f"{name}: {reason}")
        elif name in _EVALUATING_BUILTINS:
            for word in argv[1:]:
                self._check_evaluated(name, word)
        elif name == "find":
            self._find(argv)

    def _check_evaluated(self, name: str, word: Word) -> None:
        text = word.value if word.value is not None else word.prefix
        target, equals, value = text.partition("=")
        if name == "export" and equals and word.value is None and _NAME.fullmatch(target):
            self._check_variable(target, None)
            return  # `export PATH="$PATH:/x"`: the name is known, the value is only data
        if word.value is None and name not in ("printf", "read", "test", "["):
            if not (equals and _NAME.fullmatch(target)):
                self.unknown.append(f"{name} is given a name or expression only known at run time")
        elif "$(" in text or "`" in text:
            self.unknown.append(f"{name} is given text that it evaluates and that can run commands")
        elif equals and _NAME.fullmatch(target) and name in ("export", "declare", "typeset", "local", "readonly"):
            self._check_variable(target, Word(value, prefix=value))

    def _find(self, argv: Form) -> None:
        words = list(argv)
        for index, word in enumerate(words):
            if word.value in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next(
                    (i for i in range(index + 1, len(words)) if words[i].value in (";", "+")),
                    len(words),
                )
                if end > index + 1:
                    self.add_argv(tuple(words[index + 1 : end]), top_level=False, depth=0)


# --- handlers for single programs -------------------------------------------------------


def _eval(collector: _Collector, argv: Form, depth: int) -> Form:
    values = [w.value for w in argv[1:]]
    text = None if None in values else " ".join(v for v in values if v is not None)
    collector.add_text(text, "eval", depth, collector.dialect)
    return ()


def _trap(collector: _Collector, argv: Form, depth: int) -> Form:
    operands = [w for w in argv[1:] if not (w.value or "").startswith("-")]
    if len(operands) >= 2:
        collector.add_text(operands[0].value, "trap", depth, collector.dialect)
    return ()


def _command(collector: _Collector, argv: Form, depth: int) -> Form:
    if any(w.value in _QUERY_OPTIONS["command"] for w in argv[1:]):
        return ()  # `command -v rm` looks rm up and runs nothing
    return collector._unwrap(argv, "command")


def _watch(collector: _Collector, argv: Form, depth: int) -> Form:
    options = _opts("bcegtxpwhv", "nd", "beep color differences errexit chgexit exec precise no-title", "interval")
    rest = _strip_options(argv, options, "watch", collector)
    if rest is None:
        collector.unknown.append("where the command after watch starts is only known at run time")
        return ()
    if any(w.value in ("-x", "--exec") for w in argv[1 : len(argv) - len(rest)]):
        return rest
    values = [w.value for w in rest]
    collector.add_text(None if None in values else " ".join(v for v in values if v), "watch", depth, _EITHER)
    return ()


def _su(collector: _Collector, argv: Form, depth: int) -> Form:
    for index, word in enumerate(argv[1:], 1):
        text = word.value or ""
        if text in ("-c", "--command") and index + 1 < len(argv):
            collector.add_text(argv[index + 1].value, "su -c", depth, _EITHER)
            return ()
        if text.startswith("--command="):
            collector.add_text(text.removeprefix("--command="), "su -c", depth, _EITHER)
            return ()
    collector.unknown.append("su starts a shell that reads commands from its input")
    return ()


def _flock(collector: _Collector, argv: Form, depth: int) -> Form:
    rest = _strip_options(argv, WRAPPERS["flock"], "flock", collector)
    if rest is not None and rest and rest[0].value in ("-c", "--command"):
        collector.add_text(rest[1].value if len(rest) > 1 else "", "flock -c", depth, _EITHER)
        return ()
    return collector._unwrap(argv, "flock")


_HANDLERS: dict[str, Callable[[_Collector, Form, int], Form]] = {
    "eval": _eval,
    "trap": _trap,
    "command": _command,
    "watch": _watch,
    "su": _su,
    "flock": _flock,
}


# --- option parsing -----------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _strip_options(argv: Form, options: _Options, name: str, collector: _Collector) -> Form | None:
    """`argv` without its program and that program's options: the command it runs.
    None when a word that decides this is only known at run time."""
    index = 1
    while index < len(argv):
        word = argv[index].value
        if word is None:
            return None
        if word == "--":
            index += 1
            break
        step = _option_width(argv, index, options, name, collector)
        if step is None:
            return None
        if step == 0:
            break
        index += step
    index += options.positional
    if index > len(argv):
        return ()
    return argv[index:]


def _option_width(argv: Form, index: int, options: _Options, name: str, collector: _Collector) -> int | None:
    """How many words the option at `index` takes; 0 at the command; None if unknowable
    (an option this table does not know may take a value or not)."""
    word = argv[index].value or ""
    if options.assignments and _ASSIGNMENT_WORD.match(word):
        variable, _, value = word.partition("=")
        collector._check_variable(variable, Word(value, prefix=value))
        return 1
    if not word.startswith("-") or word == "-":
        return 1 if name == "env" and word == "-" else 0
    if options.numeric and re.fullmatch(r"--?\d+", word):
        return 1
    if word.startswith("--"):
        long_name, equals, _ = word[2:].partition("=")
        if long_name in options.long_valued:
            return 1 if equals else 2
        return 1 if long_name in options.long_flags else None
    for position, letter in enumerate(word[1:], 1):
        if letter in options.valued:
            return 1 if position < len(word) - 1 else 2
        if letter not in options.flags:
            return None
    return 1


def _skip_global_options(argv: Form, name: str) -> Form | None:
    """`git -C dir --no-pager push` → `git push`: the options before the subcommand go,
    with the value of those that take one as the next word."""
    valued = _GLOBAL_OPTIONS[name]
    index = 1
    while index < len(argv):
        word = argv[index].value
        if word is None:
            return None
        if word in valued:
            index += 2
        elif word.startswith("-") and word != "-":
            index += 1  # a flag, `--opt=value` or `-Cdir`
        else:
            break
    return (argv[0], *argv[index:])


_HARMLESS_GIT_CONFIG = re.compile(
    r"(?:color|advice|user|i18n|column)\.[\w.-]+|core\.(?:quotepath|autocrlf)|init\.defaultbranch|safe\.directory",
    re.IGNORECASE,
)


def _harmless_git_config(value: Word) -> bool:
    """`-c color.ui=never`: settings that only change how git prints or names things.
    Any other key may be one git runs (`core.fsmonitor`, `alias.x=!cmd`, `core.pager`, …)."""
    return value.value is not None and bool(_HARMLESS_GIT_CONFIG.fullmatch(value.value.partition("=")[0]))


def _assignments(command: SimpleCommand) -> list[tuple[str, Word | None]]:
    found: list[tuple[str, Word | None]] = []
    for word in command.assignments:
        text = word.value if word.value is not None else word.prefix
        name, _, value = text.partition("=")
        name = name.split("[")[0].rstrip("+")
        found.append((name, Word(value, prefix=value) if word.value is not None else None))
    return found


def _runs_code(value: Word) -> bool:
    return value.value is None or bool(_SHELL_META.search(value.value))
