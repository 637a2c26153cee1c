"""Keys that come in one burst (`/new` and enter, typed fast or pasted) act on the text as
typed: the command list follows a message that waits its turn, and enter came first."""

from __future__ import annotations

from pathlib import Path

from tui_helpers import main_screen, make_app, wait_until

from todo_agent.tui.widgets.prompt import PromptInput, Suggestions


async def test_enter_right_after_typing_runs_the_command_typed(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test() as pilot:
        screen = main_screen(app)
        await wait_until(pilot, lambda: screen.runtime is not None and screen.is_attached)
        first = screen.runtime.sessions.id
        prompt = screen.query_one(PromptInput)
        prompt.focus()
        await pilot.press("slash")
        await wait_until(pilot, lambda: screen.query_one(Suggestions).display)  # the list for "/"
        prompt.insert("new")  # and enter before the list hears of it
        prompt.action_submit()
        await wait_until(pilot, lambda: screen.runtime.sessions.id != first, limit=10)
