"""`/shells` and the status line's count, driven as a person would (issue 32)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import OptionList, Static
from tui_helpers import main_screen, make_app, send, turn_done, wait_until

from todo_agent.tui.screens.shells import ShellsScreen

SERVE = 'echo "Serving HTTP on 0.0.0.0 port 8000"; sleep 300'


def background(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "Bash", "arguments": {"command": command, "run_in_background": True}}]}


async def test_shells_lists_shows_output_and_stops_a_command(workspace: Path) -> None:
    app = make_app(workspace, [background(SERVE), "It serves."], permission_mode="bypassPermissions")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = main_screen(app)
        await send(pilot, "serve the docs")
        await turn_done(pilot)
        shell = screen.runtime.shells.shells["bash_1"]
        await wait_until(pilot, lambda: shell.total > 0)
        count = screen.status.query_one("#status-shells", Static)
        await wait_until(pilot, lambda: str(count.content) == "⚙ 1 shell")

        await send(pilot, "/shells")
        await wait_until(pilot, lambda: isinstance(app.screen, ShellsScreen))
        listing = app.screen.query_one("#shells-list", OptionList)
        assert listing.option_count == 1 and "Serving HTTP" in str(listing.get_option_at_index(0).prompt)
        await pilot.press("enter")
        output = app.screen.query_one("#shells-output", Static)
        await wait_until(pilot, lambda: "Serving HTTP on 0.0.0.0 port 8000" in str(output.content))
        await pilot.press("x")
        await wait_until(pilot, lambda: not shell.running)
        assert shell.killed
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ShellsScreen))
        await wait_until(pilot, lambda: not count.display)


async def test_quitting_stops_the_background_commands(workspace: Path) -> None:
    app = make_app(workspace, [background(SERVE), "It serves."], permission_mode="bypassPermissions")
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, "serve")
        await turn_done(pilot)
        shell = main_screen(app).runtime.shells.shells["bash_1"]
        assert shell.running
    assert not shell.running and shell.with_session  # the app's unmount stopped it
