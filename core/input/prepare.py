"""From what the person typed to what the model gets: the turn's `prepare_prompt` seam.

1. A custom slash command (`custom_commands.py`) becomes its prompt. Its `` !`cmd` ``
   lines run first, each checked by the permission gate as a Bash call: a deny rule
   stops the command (nothing is sent); an allow rule (or `bypassPermissions`) lets a
   line run. Otherwise a line from the person's own files runs (they wrote it), and one
   from a project file runs only once the person approved this version of the file
   (`approvals.py`); that approval also covers the file's `allowed-tools`, which a
   project file cannot grant itself. Headless, nobody can approve: a project file's lines
   then need an allow rule or an approval given earlier in the app.
2. `@path` mentions (`mentions.py`) in the prompt, or in the command's text (not in its
   commands' output), attach files, folders and images in one message after the prompt.

Events on the way: `CommandExpanded`, one `Attached` per mention; then a `PreparedPrompt`.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace

from ..events import CommandExpanded, Event, Notice
from ..lifecycle import PreparedPrompt
from ..model.base import ChatModel
from ..permissions.command_forms import analyse
from ..permissions.modes import ApprovalRequest, Approver
from ..permissions.policy import Decision, PermissionPolicy
from ..permissions.rules import Rule
from ..sandbox import Sandbox
from ..tools.bash import BASH, DEFAULT_TIMEOUT, child_env, run_command
from ..tools.results import ToolError
from .approvals import approve, is_approved
from .custom_commands import CommandSet, CustomCommand, ShellLine, expand, header, shell_lines
from .mentions import Attacher, attachment_content


def split_command(text: str) -> tuple[str, str]:
    """(`/name`, arguments) of a prompt that starts with a slash word; ("", "") otherwise."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return "", ""
    name, _, arguments = stripped.partition(" ")
    first, _, rest = name.partition("\n")  # `/review` then a new line of arguments
    return first, f"{rest} {arguments}".strip() if rest else arguments.strip()


@dataclass
class InputPreparer:
    """The `prepare_prompt` of one runtime (everything it needs, asked for when a prompt comes)."""

    permissions: PermissionPolicy
    commands: Callable[[], Awaitable[CommandSet]]
    """The custom commands as the files are now (read again, in a thread, for each prompt)."""
    attacher: Callable[[], Attacher]
    approver: Callable[[], Approver | None]
    model_for: Callable[[CustomCommand], ChatModel | str]
    """A command's `model`: the client to use, or why it cannot be used."""
    hidden_env: frozenset[str]
    sandbox: Sandbox | None = None
    """A command file's `` !`cmd` `` lines are the model's kind of command: sandboxed like Bash."""

    async def __call__(self, text: str) -> AsyncIterator[Event | PreparedPrompt]:
        name, arguments = split_command(text)
        command = (await self.commands()).commands.get(name) if name else None
        prepared = PreparedPrompt(text)
        mentioned = text
        if command is not None:
            outcome: list[tuple[PreparedPrompt, str]] = []
            async for event in self._expand(command, arguments, outcome):
                yield event
            prepared, mentioned = outcome[0]
            if prepared.refusal:
                yield prepared
                return
        if "@" not in mentioned:
            yield prepared
            return
        attacher = self.attacher()
        taken = await asyncio.to_thread(attacher.take_all, mentioned)
        for item in taken:
            yield item.attachment
        if taken:
            prepared = replace(prepared, follow=(attachment_content(taken),))
        yield prepared

    async def _expand(
        self, command: CustomCommand, arguments: str, outcome: list[tuple[PreparedPrompt, str]]
    ) -> AsyncIterator[Event]:
        """Run the command's shell lines if they may run, and put in `outcome` the prompt
        it makes (or a refusal) and the text to look for `@` mentions in."""
        lines = shell_lines(command, arguments)
        rules, problems = _rules(command.allowed_tools)
        for problem in problems:
            yield Notice(f"{command.label}: allowed-tools {problem}; ignored", "warning")
        refusal, approved = await self._may_run(command, lines, rules)
        if refusal:
            outcome.append((PreparedPrompt("", refusal=refusal), ""))
            return
        model: ChatModel | None = None
        if command.model:
            found = self.model_for(command)
            if isinstance(found, str):
                yield Notice(f"{command.label}: model {command.model!r} not used: {found}", "warning")
            else:
                model = found
        outputs = [await self._run(line) for line in lines]
        body = expand(command, arguments, outputs)
        yield CommandExpanded(command.name, command.label, body)
        if command.scope == "project" and rules and not approved:
            yield Notice(f"{command.label}: its allowed-tools apply once you approve the file in the app", "warning")
            rules = ()
        mentioned = expand(command, arguments, [""] * len(lines))
        outcome.append((PreparedPrompt(header(command, arguments) + body, model=model, allow=rules), mentioned))

    async def _may_run(
        self, command: CustomCommand, lines: list[ShellLine], rules: tuple[str, ...]
    ) -> tuple[str, bool]:
        """(why not, whether the person approved this version). Asks when it must."""
        refused, asking = self._judge(command, lines)
        if refused:
            return refused, False
        if command.scope == "user":
            return "", True  # the person's own file: its lines are theirs
        approved = is_approved(command.path, command.digest)
        if approved or not (asking or rules):
            return "", approved
        approver = self.approver()
        if approver is None:
            if not asking:
                return "", False  # only its allowed-tools wait for an approval: they are left out
            return (
                f"{command.name} not sent: {command.label} is a project file, and in -p mode its shell commands "
                f"run only when an allow rule covers them or you approved this version in the app "
                f"({'; '.join(line.text for line in asking)})",
                False,
            )
        answer = await approver(_request(command, asking, rules))
        if answer.decision not in ("yes", "always"):
            return f"{command.name} not sent: you declined its shell commands", False
        with contextlib.suppress(OSError):  # not saved: it runs this time, and the next time asks again
            approve(command.path, command.digest)
        return "", True

    def _judge(self, command: CustomCommand, lines: list[ShellLine]) -> tuple[str, list[ShellLine]]:
        """Why a line may not run at all (a placeholder bash would evaluate, a deny rule on
        the line as it runs or with its arguments written in), and the lines the gate asks about."""
        asking: list[ShellLine] = []
        for line in lines:
            if refusal := _refusal(line):
                return f"{command.name} not sent: in its command `{line.text}`, {refusal}", []
            ran, judged = self._decide(line.text), self._decide(line.judged)
            if ran.verdict == "deny":
                return f"{command.name} not sent: its command `{line.text}` is denied ({ran.reason})", []
            if judged.verdict == "deny":
                why = f"with the arguments in (`{line.judged}`), is denied ({judged.reason})"
                return f"{command.name} not sent: its command `{line.text}`, {why}", []
            if "ask" in (ran.verdict, judged.verdict):
                asking.append(line)
        return "", asking

    def _decide(self, text: str) -> Decision:
        return self.permissions.decide(BASH, {"command": text})

    async def _run(self, line: ShellLine) -> str:
        env = {**child_env(self.hidden_env), **dict(line.env)}
        try:
            result = await run_command(
                line.text, self.permissions.workspace, DEFAULT_TIMEOUT, env, sandbox=self.sandbox
            )
        except ToolError as exc:
            return f"Error: {exc}"
        return result.output


def _rules(allowed: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    good: list[str] = []
    problems: list[str] = []
    for text in allowed:
        try:
            good.append(str(Rule.parse(text)))
        except ValueError as exc:
            problems.append(str(exc))
    return tuple(good), problems


def _refusal(line: ShellLine) -> str:
    """Why an argument could be code in `line`: a placeholder where bash evaluates text, or
    one the shell reader says decides what runs (`sh -c "$1"`, `$1 --version`, `git $1`)."""
    if line.refusal:
        return line.refusal
    if not line.env:
        return ""
    plain = set(analyse(line.probe).unknown)  # what it cannot see with no argument deciding anything
    added = [why for why in analyse(line.text).unknown if why not in plain]
    return f"an argument would decide what runs ({added[0]})" if added else ""


def _shown(lines: list[ShellLine]) -> str:
    """The commands as they run, then the arguments they read this time (in the environment)."""
    values = dict(pair for line in lines for pair in line.env)
    given = [f"# with {name}={_literal(value)}" for name, value in values.items()]
    return "\n".join([*(line.text for line in lines), *given])


def _literal(value: str) -> str:
    """`value` as one shell word on one line (`$'…'` when it holds a line break or a control)."""
    if value.isprintable():
        return shlex.quote(value)
    escaped = "".join(
        ch if ch.isprintable() and ch not in "\\'" else _ESCAPES.get(ch, f"\\u{ord(ch):04x}") for ch in value
    )
    return f"$'{escaped}'"


_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _request(command: CustomCommand, lines: list[ShellLine], rules: tuple[str, ...]) -> ApprovalRequest:
    runs = f"runs {len(lines)} shell command{'s' if len(lines) != 1 else ''} before its prompt is sent"
    grants = f"allows {', '.join(rules)} during the turn" if rules else ""
    summary = f"{command.label} " + " and ".join(part for part in (runs if lines else "", grants) if part)
    return ApprovalRequest(
        tool=command.name,
        arguments={"file": str(command.path)},
        summary=summary,
        preview=_shown(lines) if lines else "\n".join(rules),
        preview_kind="command",
        outside_workspace=False,
        suggested_rule="",
        reason="it is a project file: it came with the repository",
        remembered_for=command.label,
    )
