"""A running command's latest line of output under its call, while it runs (`ToolOutput`)."""

from __future__ import annotations

from pathlib import Path

from tui_helpers import bash_step, main_screen, make_app, screen_text, send, turn_done, wait_until

from todo_agent.tui.handler import last_line


async def test_a_running_command_shows_its_latest_line_until_it_ends(workspace: Path, tmp_path: Path) -> None:
    release = tmp_path / "release"
    command = f"echo compiling; echo 'step 2 of 3'; while [ ! -e {release} ]; do sleep 0.05; done; echo finished"
    app = make_app(workspace, [bash_step(command), {"text": "built"}], permission_mode="bypassPermissions")
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "build it")
        await wait_until(pilot, lambda: "⎿  step 2 of 3" in screen_text(app))
        app.save_screenshot(str(tmp_path / "live.svg"))
        release.touch()
        await turn_done(pilot)
        text = screen_text(app)
        assert "⎿  step 2 of 3" not in text and "built" in text
        assert main_screen(app).runtime.sessions.history[-2]["content"].endswith("finished")


def test_the_latest_line_skips_blank_ones_and_carriage_returns() -> None:
    assert last_line("one\ntwo\n\n") == "two"
    assert last_line("progress 10%\rprogress 90%\r") == "progress 90%"
    assert last_line("x" * 500) == "x" * 200
    assert last_line("\n\n") == ""
