"""`/rewind` and `/redo` in the app, driven with Pilot over a scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import OptionList

from tests.tui_helpers import main_screen, make_app, screen_text, send, turn_done, wait_until
from todo_agent.tui.screens.prompt_rewind import PromptsScreen
from todo_agent.tui.screens.rewind import RewindScreen
from todo_agent.tui.widgets.prompt import PromptInput


def tc(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


SCRIPT = [
    tc("Write", file_path="a.txt", content="first\n"),
    "One.",
    tc("Write", file_path="a.txt", content="second\n"),
    "Two.",
    tc("Write", file_path="b.txt", content="third\n"),
    "Three.",
]


async def three_prompts(pilot: Any) -> None:
    for prompt in ("make a", "change a", "make b"):
        await send(pilot, prompt)
        await turn_done(pilot)


async def test_rewind_to_the_second_prompt_and_redo(workspace: Path) -> None:
    app = make_app(workspace, SCRIPT, permission_mode="bypassPermissions")
    async with app.run_test(size=(120, 40)) as pilot:
        await three_prompts(pilot)
        screen = main_screen(app)
        await send(pilot, "/rewind")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptsScreen))
        options = app.screen.query_one(OptionList)
        assert options.option_count == 3
        options.highlighted = 1  # newest first: "change a"
        await pilot.press("enter", "b")
        await wait_until(pilot, lambda: (workspace / "a.txt").read_text() == "first\n")
        prompt = screen.query_one(PromptInput)
        await wait_until(pilot, lambda: prompt.text == "change a")
        assert not (workspace / "b.txt").exists()
        assert [m["content"] for m in app.runtime.session.messages if m["role"] == "user"][:1] == ["make a"]
        assert "Rewound: the conversation is cut back" in screen_text(app)
        assert "make b" not in screen_text(app)

        prompt.text = ""
        await send(pilot, "/redo")
        await wait_until(pilot, (workspace / "b.txt").exists)
        assert (workspace / "a.txt").read_text() == "second\n"
        await wait_until(pilot, lambda: "Redone" in screen_text(app))
        assert "make b" in screen_text(app)


async def test_a_file_changed_outside_is_asked_about(workspace: Path) -> None:
    app = make_app(workspace, SCRIPT, permission_mode="bypassPermissions")
    async with app.run_test(size=(120, 40)) as pilot:
        await three_prompts(pilot)
        (workspace / "b.txt").write_text("mine\n")
        await send(pilot, "/rewind")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptsScreen))
        await pilot.press("enter", "f")  # the newest prompt, files only
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen))
        assert "changed outside todo-agent since" in screen_text(app)
        await pilot.press("y")  # nothing chosen: left alone
        await wait_until(pilot, lambda: "Left as they are: b.txt" in screen_text(app))
        assert (workspace / "b.txt").read_text() == "mine\n"
        assert main_screen(app).query_one(PromptInput).text == ""  # files only: the conversation stays


async def test_escape_twice_on_an_empty_prompt_opens_rewind(workspace: Path) -> None:
    app = make_app(workspace, SCRIPT[:2], permission_mode="bypassPermissions")
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, "make a")
        await turn_done(pilot)
        await pilot.press("escape")
        assert not isinstance(app.screen, PromptsScreen)
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptsScreen))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, PromptsScreen))
