"""Custom slash commands: Markdown files whose text becomes the prompt (Claude Code's format).

Where they are read from, first wins on a name: the project's `.todo-agent/commands/`
and `.claude/commands/`, then the person's own `<config dir>/todo-agent/commands/` and
`~/.claude/commands/`. The file's path below that folder is the command's name: `review.md`
is `/review`, `frontend/lint.md` is `/frontend:lint`. A name the front end already uses
(`/help`) loses, with a notice.

Optional front matter between `---` lines: `description` (else the body's first line),
`argument-hint`, `allowed-tools` (permission rules for the turn the command starts, e.g.
`Bash(git diff:*), Read`), `model`. In the body, `$ARGUMENTS` is everything after the
name and `$1`, `$2`… its words (quoted words count as one); with no placeholder at all,
the arguments are added at the end. `` !`cmd` `` is replaced by that shell command's
output before the prompt is sent (arguments inside it are shell-quoted, so they stay one
word and never become code); `@path` attaches files as in a typed prompt.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..globs import split_top_level
from ..repo_files import RepoFileError, read_repo_file

Scope = Literal["project", "user"]

MAX_FILE_BYTES = 256_000
"""A command file longer than this is skipped with a notice (it would be the whole prompt)."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(?::[A-Za-z0-9][A-Za-z0-9_.-]*)*")
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|\d+)")
SHELL_LINE = re.compile(r"!`([^`\n]+)`")
"""`` !`git status` ``: a command whose output replaces it."""


@dataclass(frozen=True)
class CommandSource:
    """A folder of command files."""

    folder: Path
    scope: Scope
    label: str
    """How the folder is named to the person: `.claude/commands`, `~/.claude/commands`."""


@dataclass(frozen=True)
class CustomCommand:
    name: str
    """With the slash: `/frontend:lint`."""
    path: Path
    scope: Scope
    label: str
    """Where it came from, for the person: `.claude/commands/review.md`."""
    body: str
    description: str = ""
    argument_hint: str = ""
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    digest: str = ""
    """sha256 of the file: an approval of its shell commands holds for this version only."""

    @property
    def shell_commands(self) -> list[str]:
        return SHELL_LINE.findall(self.body)


@dataclass
class CommandSet:
    commands: dict[str, CustomCommand] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)


def default_sources(workspace: Path, user_config: Path) -> list[CommandSource]:
    """The four folders, in the order they win. `user_config`: todo-agent's config folder."""
    home = Path.home()
    return [
        CommandSource(workspace / ".todo-agent" / "commands", "project", ".todo-agent/commands"),
        CommandSource(workspace / ".claude" / "commands", "project", ".claude/commands"),
        CommandSource(user_config / "commands", "user", _home_label(user_config / "commands", home)),
        CommandSource(home / ".claude" / "commands", "user", "~/.claude/commands"),
    ]


def _home_label(path: Path, home: Path) -> str:
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


# --- reading files ---------------------------------------------------------------------


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _split_rules(text: str) -> list[str]:
    """`Bash(git add:*), Read` → two rules: commas inside parentheses stay."""
    return [p for p in (_unquote(part) for part in split_top_level(text, "()")) if p]


def parse_front_matter(text: str) -> tuple[dict[str, str | list[str]], str]:
    """The `---` block's keys (a scalar, `- item` lines, or for `allowed-tools` an inline
    `[a, b]` list) and the body.

    A small reading of YAML that covers what command files use; anything it cannot read
    is left out rather than failing the command.
    """
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = next((n for n in range(1, len(lines)) if lines[n].strip() in ("---", "...")), None)
    if end is None:
        return {}, text
    values: dict[str, str | list[str]] = {}
    key: str | None = None
    for line in lines[1:end]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("- ") and key is not None:
            current = values.get(key)
            values[key] = [*(current if isinstance(current, list) else []), _unquote(stripped[2:])]
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip() or line[:1].isspace():
            continue
        key, value = name.strip().lower(), value.strip()
        # Only a list of rules is a list: `argument-hint: [file] [focus]` is the hint as written.
        if key == "allowed-tools" and value.startswith("[") and value.endswith("]"):
            values[key] = _split_rules(value[1:-1])
        elif value:
            values[key] = _unquote(value)
        else:
            values[key] = []
    return values, "\n".join(lines[end + 1 :]).lstrip("\n")


def _text(value: str | list[str] | None) -> str:
    if isinstance(value, list):
        return ", ".join(value)
    return value or ""


def _first_line(body: str) -> str:
    line = next((line.strip() for line in body.splitlines() if line.strip()), "")
    line = line.lstrip("#").strip()
    return line if len(line) <= 80 else line[:79] + "…"


def read_command(path: Path, name: str, source: CommandSource) -> CustomCommand:
    """One command file. Raises RepoFileError when it cannot be used (not a regular file,
    too big, not UTF-8), FileNotFoundError when it went away."""
    found = read_repo_file(path, MAX_FILE_BYTES)
    if found is None:
        raise FileNotFoundError(path)
    data = found.data
    meta, body = parse_front_matter(found.text().replace("\r\n", "\n"))
    tools = meta.get("allowed-tools")
    allowed = tools if isinstance(tools, list) else _split_rules(tools or "")
    relative = path.relative_to(source.folder).as_posix()
    return CustomCommand(
        name=name,
        path=path,
        scope=source.scope,
        label=f"{source.label}/{relative}",
        body=body,
        description=_text(meta.get("description")) or _first_line(body),
        argument_hint=_text(meta.get("argument-hint")),
        allowed_tools=tuple(allowed),
        model=_text(meta.get("model")) or None,
        digest=hashlib.sha256(data).hexdigest(),
    )


def _files(folder: Path) -> list[tuple[str, Path]]:
    """(command name, file) for every `.md` below `folder`, sorted; links to folders not followed."""
    found: list[tuple[str, Path]] = []
    for directory, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        relative = Path(directory).relative_to(folder).parts
        for filename in sorted(filenames):
            if filename.endswith(".md"):
                found.append((":".join([*relative, filename.removesuffix(".md")]), Path(directory) / filename))
    return found


def load_commands(sources: Sequence[CommandSource], reserved: frozenset[str] = frozenset()) -> CommandSet:
    """Every command of `sources`; the first source wins a name, a `reserved` name loses."""
    result = CommandSet()
    for source in sources:
        if not source.folder.is_dir():
            continue
        for name, path in _files(source.folder):
            where = f"{source.label}/{path.relative_to(source.folder).as_posix()}"
            if not _NAME.fullmatch(name):
                result.notices.append(f"custom command {where} skipped: use letters, digits, '-', '_' or '.' in names")
                continue
            slash = "/" + name
            if slash in reserved:
                result.notices.append(_reserved_notice(slash, where))
                continue
            if slash in result.commands:
                continue  # a project file wins over the person's own of the same name
            try:
                result.commands[slash] = read_command(path, slash, source)
            except FileNotFoundError:
                continue  # removed between the listing and the read
            except RepoFileError as exc:
                result.notices.append(f"custom command {where} skipped: {exc}")
    return result


def without(found: CommandSet, reserved: frozenset[str]) -> CommandSet:
    """`found` less the commands a `reserved` name takes (as `load_commands` would drop them)."""
    if not reserved & found.commands.keys():
        return found
    kept = CommandSet(notices=list(found.notices))
    for slash, command in found.commands.items():
        if slash in reserved:
            kept.notices.append(_reserved_notice(slash, command.label))
        else:
            kept.commands[slash] = command
    return kept


def _reserved_notice(slash: str, where: str) -> str:
    return f"custom command {slash} ({where}) is not used: {slash} is a built-in command"


# --- expanding ---------------------------------------------------------------------------


def split_arguments(arguments: str) -> list[str]:
    """The words of the arguments, as a shell would split them (quotes kept together)."""
    try:
        return shlex.split(arguments)
    except ValueError:  # an unbalanced quote: plain words
        return arguments.split()


def _value(key: str, arguments: str, words: Sequence[str]) -> str:
    """What `$ARGUMENTS` (`key` "ARGUMENTS") or `$1`, `$2`… (`key` "1", "2"…) stands for."""
    if key == "ARGUMENTS":
        return arguments
    index = int(key) - 1
    return words[index] if 0 <= index < len(words) else ""


def substitute(body: str, arguments: str) -> str:
    """`$ARGUMENTS` and `$1`, `$2`… replaced by their text (in the prompt, not in a shell line)."""
    words = split_arguments(arguments)
    return _PLACEHOLDER.sub(lambda match: _value(match[1], arguments, words), body)


def expand(command: CustomCommand, arguments: str, outputs: Sequence[str] = ()) -> str:
    """The prompt the command makes: its body with the arguments in, each `` !`cmd` `` replaced
    by the next of `outputs` (its command's output). Neither arguments nor outputs are
    read again for placeholders or commands: text the person or a command supplied stays text."""
    arguments = arguments.strip()
    pieces = SHELL_LINE.split(command.body)  # even: text; odd: the commands
    filled = iter(outputs)
    text = "".join(substitute(p, arguments) if n % 2 == 0 else next(filled, "") for n, p in enumerate(pieces))
    if arguments and not _PLACEHOLDER.search(command.body):
        text = f"{text.rstrip()}\n\nARGUMENTS: {arguments}"
    return text


ARGUMENTS_VARIABLE = "TODO_AGENT_ARGUMENTS"
ARGUMENT_VARIABLE = "TODO_AGENT_ARG_{}"
"""The environment variables a `` !`cmd` `` line reads its arguments from (`$2` → `TODO_AGENT_ARG_2`)."""


@dataclass(frozen=True)
class ShellLine:
    """One `` !`cmd` `` line as it runs. Its placeholders became references to environment
    variables (`"${TODO_AGENT_ARG_1}"`) that hold the arguments, so bash never reads an
    argument's text as shell: whatever the person typed, and wherever the file's own
    quotes put the placeholder, it reaches the command as data."""

    text: str
    """What bash runs (and what the approval shows)."""
    env: tuple[tuple[str, str], ...] = ()
    """The variables it reads, with this run's arguments."""
    judged: str = ""
    """The same line with the values written in as shell-quoted words: what the deny rules
    are matched against as well, since a value can be what a rule names (`git push origin`)."""
    probe: str = ""
    """The line with every placeholder a plain word (`x`): what the reader sees in it
    when no argument decides anything."""
    refusal: str = ""
    """Why it may not run: a placeholder where bash evaluates text (arithmetic, `${…}`)."""


# Where bash evaluates what it reads as an expression: an argument there would be code
# (`a[$(cmd)]` runs cmd in arithmetic, even from a quoted word or a variable's value).
_EVALUATED = {
    "((": "arithmetic",
    "$[": "arithmetic",
    "${": "a ${…} expansion",
    "[[": "an arithmetic test",
    "let": "let",
}
_CODE = ("", "(", "$(", "`")
"""Contexts where bash reads commands (the line itself, a subshell, a substitution)."""
_OPENERS = ("$((", "$[", "${", "$(", "$'", '$"', "'", '"', "`", "((", "(")
_CLOSERS = {"((": "))", "$[": "]", "${": "}", "[[": "]]", "(": ")", "$(": ")", "`": "`", '"': '"'}
_CONTEXT_OF = {"$((": "((", '$"': '"'}
_ARITHMETIC_TEST = re.compile(r"(?<!\S)-(?:eq|ne|lt|le|gt|ge)(?!\S)")
_WORD_START = frozenset(" \t\n;&|(){}")


def _placeholder_forms(context: str, variable: str, value: str) -> tuple[str, str]:
    """(as it runs, as judged) for a placeholder inside `context`. In double quotes the
    reference is already one word of data; elsewhere the quote it stands in is closed
    around a double-quoted reference (the value, shell-quoted, for the judged line)."""
    if context == '"':
        return f"${{{variable}}}", f'"{shlex.quote(value)}"'
    closing, opening = {"'": ("'", "'"), "$'": ("'", "$'")}.get(context, ("", ""))
    return f'{closing}"${{{variable}}}"{opening}', f"{closing}{shlex.quote(value)}{opening}"


def _opener(line: str, i: int, context: str) -> str:
    """The quote or construct that opens at `i` in `context` (not a quote's inside), or ""."""
    if context == '"':
        return next((o for o in ("$((", "$[", "${", "$(", "`") if line.startswith(o, i)), "")
    found = next((o for o in _OPENERS if line.startswith(o, i)), "")
    if context in _CODE and (i == 0 or line[i - 1] in _WORD_START):
        if re.match(r"let\s", line[i:]):
            return "let"
        end = line.find("]]", i)
        if re.match(r"\[\[\s", line[i:]) and _ARITHMETIC_TEST.search(line, i, len(line) if end < 0 else end):
            return "[["
    return found


def bind_arguments(line: str, arguments: str) -> ShellLine:
    """`line` with its placeholders reading the arguments from the environment.

    A small reading of bash's quoting (single, double and `$'…'` quotes, substitutions,
    arithmetic, `${…}`) decides how each placeholder is written. Were it ever to read a
    line otherwise than bash, the reference would come out as literal text or as several
    words, never as code: the argument's text is not in the line at all. A placeholder
    escaped with a backslash (`\\$1`) is bash's literal `$1` and stays as written.
    """
    words = split_arguments(arguments)
    ran: list[str] = []
    judged: list[str] = []
    probe: list[str] = []
    env: dict[str, str] = {}
    refusal = ""
    stack: list[str] = []  # the quotes and constructs open at `i`, innermost last
    i = 0
    while i < len(line):
        context = stack[-1] if stack else ""
        quoted = context in ("'", "$'")
        found = _PLACEHOLDER.match(line, i)
        if found is not None and not line.startswith("$$", i):
            key = found[1]
            variable = ARGUMENTS_VARIABLE if key == "ARGUMENTS" else ARGUMENT_VARIABLE.format(int(key))
            value = env.setdefault(variable, _value(key, arguments, words))
            evaluated = next((_EVALUATED[c] for c in stack if c in _EVALUATED), "")
            if evaluated and not refusal:
                refusal = f"{found[0]} stands in {evaluated}, where bash would evaluate the argument as code"
            if "\0" in value and not refusal:
                refusal = f"{found[0]} holds a NUL byte, which no command can be given"
            as_run, as_judged = _placeholder_forms(context, variable, value)
            ran.append(as_run)
            judged.append(as_judged)
            probe.append("x")
            i = found.end()
            continue
        step = 1
        if line.startswith("\\", i) and context != "'":
            step = 2  # an escaped character (in `$'…'` too): `\\$1`, `\\'` are not what they look like
        elif quoted:
            if line[i] == "'":
                stack.pop()
        elif line.startswith("$$", i):
            step = 2  # the shell's PID: `$$1` is no placeholder
        elif context == "let" and line[i] in ";&|\n)":
            stack.pop()
            continue  # the character ends the `let` and is read again outside it
        elif (closer := _CLOSERS.get(context)) is not None and line.startswith(closer, i):
            stack.pop()
            step = len(closer)
        elif opened := _opener(line, i, context):
            stack.append(_CONTEXT_OF.get(opened, opened))
            step = len(opened)
        ran.append(line[i : i + step])
        judged.append(line[i : i + step])
        probe.append(line[i : i + step])
        i += step
    return ShellLine("".join(ran), tuple(env.items()), "".join(judged), "".join(probe), refusal)


def shell_lines(command: CustomCommand, arguments: str) -> list[ShellLine]:
    """The file's `` !`cmd` `` commands as they will run, the arguments in their environment."""
    return [bind_arguments(line, arguments.strip()) for line in command.shell_commands]


def header(command: CustomCommand, arguments: str) -> str:
    """The tags that open the user message of a command (the transcript draws `/name args` from them)."""
    return (
        f"<command-name>{command.name}</command-name>\n<command-args>{arguments.strip()}</command-args>\n"
        f"<command-file>{command.label}</command-file>\n"
    )


_HEADER = re.compile(
    r"<command-name>(?P<name>/[^<\n]*)</command-name>\n<command-args>(?P<args>[^\n]*)</command-args>\n"
    r"<command-file>(?P<file>[^<\n]*)</command-file>\n"
)


def parse_header(text: str) -> tuple[str, str, str, str] | None:
    """(name, arguments, file, body) of a command's user message; None for any other message."""
    found = _HEADER.match(text)
    if found is None:
        return None
    return found["name"], found["args"].strip(), found["file"], text[found.end() :]
