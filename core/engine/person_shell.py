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


def shell_message(command: str, output: str) -> str:
    return f"<bash-input>{command}</bash-input>\n<bash-output>\n{output}\n</bash-output>"


def parse_shell_message(text: str) -> tuple[str, str] | None:
    """(command, output) of a `shell_message`; None for any other message."""
    found = _MESSAGE.fullmatch(text)
    return (found["command"], found["output"].removesuffix("\n")) if found else None


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
