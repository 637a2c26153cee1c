"""Every command in the slash-command table (`tui/commands.py`) is carried out by
`run_slash` (`tui/screens/slash.py`): a command added to the table without its `case`
would be completed, listed in `/help` and then do nothing, so it cannot ship silently.
And each is in the README's list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config
from todo_agent.tui.commands import SLASH_COMMANDS, SlashCommand
from todo_agent.tui.screens.slash import run_slash
from todo_agent.tui.transcript import Entry

README = Path(__file__).resolve().parent.parent / "README.md"


class RecordingHost:
    """The `CommandHost` side of the main screen, noting what each command asked of it."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.tasks_seen = ""
        self.calls: list[str] = []
        self.said: list[Entry] = []

    async def say(self, entry: Entry) -> None:
        self.calls.append(f"say {type(entry).__name__}")
        self.said.append(entry)

    async def new_session(self) -> None:
        self.calls.append("new_session")

    def choose_session(self) -> None:
        self.calls.append("choose_session")

    def open_shells(self) -> None:
        self.calls.append("open_shells")

    def open_rewind(self) -> None:
        self.calls.append("open_rewind")

    async def redo(self) -> None:
        self.calls.append("redo")

    def start_compact(self, focus: str) -> None:
        self.calls.append("start_compact")

    async def start_goal(self, goal: str) -> None:
        self.calls.append("start_goal")

    async def cycle_mode(self) -> None:
        self.calls.append("cycle_mode")

    async def show_mode(self) -> None:
        self.calls.append("show_mode")

    def show_sandbox(self) -> None:
        self.calls.append("show_sandbox")

    def switch_model(self, spec: str) -> bool:
        self.calls.append("switch_model")
        return True

    def quit(self) -> None:
        self.calls.append("quit")

    def custom_slash_commands(self) -> list[SlashCommand]:
        return []

    def copy_to_clipboard(self, text: str) -> None:
        self.calls.append("copy_to_clipboard")

    def in_background(self, job: object, name: str) -> None:
        self.calls.append(f"in_background {name}")


@pytest.mark.parametrize("command", SLASH_COMMANDS, ids=lambda c: c.name)
async def test_every_command_in_the_table_is_carried_out(workspace: Path, command: object) -> None:
    runtime = Runtime.create(Config(workspace=workspace, model="script:t"), model=ScriptedModel.from_data([]))
    host = RecordingHost(runtime)
    name = command.name  # type: ignore[attr-defined]
    await run_slash(host, name)
    assert host.calls, f"{name} is in the table but run_slash has no case for it"
    runtime.close()


def test_every_command_is_in_the_readme() -> None:
    listed = set(re.findall(r"`(/[a-z]+)", README.read_text(encoding="utf-8")))
    assert {c.name for c in SLASH_COMMANDS} <= listed
