"""`!command`: the person's own shell command, run at once, without the model.

It runs like a Bash call (`core/tools/bash.py`: its own process group, the same output
cap, killed with its group by esc), shows as one, and needs no approval: the person typed
it. What it changed is recorded against the task in progress like any Bash call's (the
`tool_start` / `tool_done` observers). The command and its output then go into the history
as one user message, so the model sees them with the next prompt (as Claude Code's bash
mode does):

    <bash-input>git status</bash-input>
    <bash-output>…</bash-output>

Interactive programs get no terminal (stdin is empty): `!git commit` without `-m` fails
rather than waiting for an editor nobody can see.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from ..events import Event, ToolFinished, ToolStarted
from ..lifecycle import Lifecycle, ToolRecord
from ..tools.base import short
from ..tools.bash import MAX_TIMEOUT, capped_output, child_env, run_command, with_note
from ..tools.results import ToolError, ToolResult

TIMEOUT = MAX_TIMEOUT
"""Seconds a `!` command may run (the Bash tool's longest); esc stops it sooner."""
KILLED = "Killed by esc"
_MESSAGE = re.compile(
    r"<bash-input>(?P<command>.*?)</bash-input>\n<bash-output>\n?(?P<output>.*)</bash-output>\s*", re.DOTALL
)


_FRAMING = re.compile(
    r"(&(?:amp;)*lt;|<)(\s*/?\s*(?:bash-input|bash-output|system-reminder|command-name|command-args|command-file"
    r"|attachments|summary)\b)",
    re.IGNORECASE,
)
"""The start of a tag that frames what the person said (`</bash-output>`, `<system-reminder>`…),
or of one already escaped (`&lt;…`, `&amp;lt;…`)."""


def _escaped(text: str) -> str:
    """`text` unable to close its tags or open new ones: `<` of a framing tag becomes `&lt;`
    (and an `&lt;` there one level more, `&amp;lt;`, so `_unescaped` gives the text back)."""
    return _FRAMING.sub(lambda m: ("&lt;" if m[1] == "<" else m[1].replace("&", "&amp;", 1)) + m[2], text)


def _unescaped(text: str) -> str:
    return _FRAMING.sub(lambda m: ("<" if m[1].lower() == "&lt;" else m[1].replace("&amp;", "&", 1)) + m[2], text)


def shell_message(command: str, output: str) -> str:
    """The user message of a `!` command. Its output (a file the person `!cat`s, a page
    they `!curl`) cannot close the tags and go on as the person's own words."""
    return f"<bash-input>{_escaped(command)}</bash-input>\n<bash-output>\n{_escaped(output)}\n</bash-output>"


def parse_shell_message(text: str) -> tuple[str, str] | None:
    """(command, output) of a `shell_message`, as they were; None for any other message."""
    found = _MESSAGE.fullmatch(text)
    if found is None:
        return None
    return _unescaped(found["command"]), _unescaped(found["output"].removesuffix("\n"))


@dataclass
class PersonShell:
    """What running one `!` command needs from the agent."""

    workspace: Path
    hidden_env: frozenset[str]
    lifecycle: Lifecycle
    remember: Callable[[str], str]
    """Puts the command's message into the history (cut to fit the window); returns it as kept."""
    on_interrupt: list[Event]
    """Where the events that close the command's block go when esc cancels it."""

    async def run(self, command: str) -> AsyncIterator[Event]:
        call_id = f"shell_{secrets.token_hex(4)}"
        arguments = {"command": command}
        summary = short(command)
        yield ToolStarted(call_id, "Bash", arguments, summary)
        await self.lifecycle.notify_tool_start(ToolRecord("Bash", "execute", 0.0, False, call_id, arguments))
        output = capped_output()
        started = time.monotonic()
        try:
            result = await run_command(command, self.workspace, TIMEOUT, child_env(self.hidden_env), output)
        except ToolError as exc:
            result = ToolResult(f"Error: {exc}", is_error=True)
        except asyncio.CancelledError:
            text = with_note(output.text(), KILLED)
            elapsed = time.monotonic() - started
            record = ToolRecord("Bash", "execute", elapsed, True, call_id, arguments)
            self.on_interrupt.append(ToolFinished(call_id, "Bash", text, True, "cancelled", elapsed, summary))
            self.on_interrupt.extend(await self.lifecycle.notify_tool_done(record))
            self.remember(shell_message(command, text))
            raise
        elapsed = time.monotonic() - started
        record = ToolRecord("Bash", "execute", elapsed, result.is_error, call_id, arguments)
        events = await self.lifecycle.notify_tool_done(record)
        kept = self.remember(shell_message(command, result.output))
        output_kept = (parse_shell_message(kept) or (command, result.output))[1]
        yield ToolFinished(
            call_id, "Bash", output_kept, result.is_error, "error" if result.is_error else "ok", elapsed, summary
        )
        for event in events:
            yield event
