"""The approval dialog at any terminal size: the choices stay on screen, the preview
shrinks and scrolls, and a command is shown whole, hidden characters included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import OptionList
from tui_helpers import bash_step, make_app, screen_text, send, wait_until

from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.screens.approval import ApprovalScreen, FeedbackInput
from todo_agent.tui.widgets.preview import render_preview

SIZES = [(120, 36), (80, 24), (60, 20)]
CHOICES = ("1 Yes", "2 Yes, and don't ask again for", "3 No, and stop", "f No, and tell")

LONG_DIFF = "\n".join(
    ["--- a/posts.py", "+++ b/posts.py", "@@ -1,2 +1,41 @@"] + [f"+    page_{i} = {i}" for i in range(40)]
)


def edit_request(preview: str = LONG_DIFF) -> ApprovalRequest:
    return ApprovalRequest(
        tool="Edit",
        arguments={"file_path": "posts.py"},
        summary="posts.py",
        preview=preview,
        preview_kind="diff",
        outside_workspace=False,
        suggested_rule="Edit(posts.py)",
        reason="Edit needs approval in default mode",
    )


def bash_request(command: str) -> ApprovalRequest:
    return ApprovalRequest(
        "Bash", {"command": command}, "run it", command, "command", False, "Bash(pytest:*)", "Bash needs approval"
    )


def inside(widget: Widget, outer: Widget) -> bool:
    """Whether `widget` is drawn whole inside `outer`'s border (and on screen)."""
    content = outer.region.shrink(outer.styles.gutter)
    return content.contains_region(widget.region) and widget.screen.region.contains_region(widget.region)


async def open_dialog(pilot: Pilot[Any], request: ApprovalRequest) -> ApprovalScreen:
    screen = ApprovalScreen(request)
    pilot.app.push_screen(screen)
    await wait_until(pilot, lambda: pilot.app.screen is screen and screen.fitted)
    await pilot.pause()
    return screen


def assert_choices_visible(app: TodoAgentApp, screen: ApprovalScreen) -> None:
    text = screen_text(app)
    for choice in CHOICES:
        assert choice in text, f"{choice!r} is not on screen:\n{text}"
    assert inside(screen.query_one(OptionList), screen.query_one("#approval-dialog"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_long_diff_leaves_the_choices_and_the_feedback_box_on_screen(
    workspace: Path, size: tuple[int, int]
) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=size) as pilot:
        screen = await open_dialog(pilot, edit_request())
        assert_choices_visible(app, screen)
        assert "Edit(posts.py)" in screen_text(app)  # the rule `2` would add
        assert "more lines · pgdn scrolls" in screen_text(app)  # and the diff says it goes on
        await pilot.press("f")
        await wait_until(pilot, lambda: screen.fitted)
        await pilot.pause()
        box = screen.query_one(FeedbackInput)
        assert box.has_focus and inside(box, screen.query_one("#approval-dialog"))
        assert_choices_visible(app, screen)
        await pilot.press(*"use a smaller page", "enter")
        await wait_until(pilot, lambda: app.screen is not screen)  # the feedback was sent


async def test_keys_typed_right_after_f_go_into_the_feedback_box(workspace: Path) -> None:
    """`f` and the feedback after it arrive together (typed fast, pasted, a busy machine):
    the `a` of "use an offset" must be text, not "yes, and don't ask again"."""
    app = make_app(workspace, [])
    async with app.run_test(size=(80, 24)) as pilot:
        answers: list[ApprovalAnswer | None] = []
        screen = ApprovalScreen(edit_request())
        app.push_screen(screen, callback=answers.append)
        await wait_until(pilot, lambda: app.screen is screen and screen.fitted)
        feedback = "use an offset of 1 2 or 3 if you can"  # every answer key, as text
        for key in "f" + feedback:  # all queued before the app handles the first
            app.post_message(events.Key(key if key != " " else "space", key))
        box = screen.query_one(FeedbackInput)
        await wait_until(pilot, lambda: box.value == feedback or app.screen is not screen)
        assert app.screen is screen and box.has_focus and not answers
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(answers))
        assert answers == [ApprovalAnswer("feedback", feedback)]


async def test_a_short_preview_is_not_padded(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_dialog(pilot, edit_request("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b"))
        assert screen.query_one("#approval-preview").region.height == 5
        assert not screen.query_one("#approval-more").display


async def test_pgdn_scrolls_the_preview_to_its_last_line(workspace: Path) -> None:
    command = "\n".join(f"echo {i}" for i in range(60))
    app = make_app(workspace, [])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_dialog(pilot, bash_request(command))
        assert "echo 59" not in screen_text(app)
        first = str(screen.query_one("#approval-more").render())
        assert first.startswith("↓ ") and first.endswith("more lines · pgdn scrolls")
        for _ in range(10):
            await pilot.press("pagedown")
        await pilot.pause()
        assert "echo 59" in screen_text(app)
        assert str(screen.query_one("#approval-more").render()).startswith("↑ ")
        assert_choices_visible(app, screen)
        assert isinstance(app.screen, ApprovalScreen)  # scrolling answered nothing


def test_a_command_is_shown_whole_with_blank_runs_collapsed() -> None:
    shown = render_preview("pytest -q" + "\n" * 81 + "touch x", "command").plain
    assert shown.splitlines() == ["$ pytest -q", "  ⋯ 80 blank lines", "  touch x"]
    # One blank line is kept as it is; a carriage return is not drawn as a line break.
    assert render_preview("a\n\nb\rc", "command").plain.splitlines() == ["$ a", "  ", "  b␍c"]


async def test_the_approval_shows_every_line_of_a_command(workspace: Path) -> None:
    command = "pytest -q" + "\n" * 80 + "touch x"
    app = make_app(workspace, [bash_step(command)])
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "run the tests")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.fitted)
        await pilot.pause()
        text = screen_text(app)
        assert "touch x" in text and "⋯ 79 blank lines" in text  # 80 line breaks
        assert_choices_visible(app, app.screen)  # type: ignore[arg-type]


async def test_control_and_invisible_characters_are_flagged(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(pilot, bash_request("echo ok\x1b[2K\rrm -rf ~ #\u200b"))
        text = screen_text(app)
        assert "⚠ Contains control or invisible characters" in text
        assert "echo ok␛[2K␍rm -rf ~ #<U+200B>" in text
        await open_dialog(pilot, bash_request("pytest -q"))
        assert "invisible characters" not in screen_text(app)


async def test_an_answer_faster_than_the_layout_closes_the_dialog_cleanly(workspace: Path) -> None:
    """Answered while its layout callbacks were still queued (a quick key on a loaded
    machine): they run on a dialog already taken down and must do nothing, not crash."""
    app = make_app(workspace, [])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_dialog(pilot, edit_request())
        await pilot.press("1")
        await wait_until(pilot, lambda: screen not in app.screen_stack and not screen.children)
        screen._fit_preview()  # what `call_after_refresh` had queued
        screen._show_more()
        screen.on_resize()
        await pilot.pause()
        assert screen.fitted and app.is_running and app.return_code is None
