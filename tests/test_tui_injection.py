"""Untrusted text reaches the screen literally, through every widget that shows it.

Each case puts strings that break markup parsers (`[/bold]`, `[red]x[/]`, ...) and raw
terminal controls (clear screen, window title, OSC 8 hyperlinks, C1 controls) into one
widget through the real path, then checks that the app still runs, the brackets are on
screen as typed, and no control character made it into the rendered output.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tui_helpers import (
    HOSTILE,
    LITERALS,
    SIZE,
    GatedModel,
    bash_step,
    main_screen,
    make_app,
    screen_text,
    send,
    turn_done,
    wait_until,
)

from todo_agent.core.events import Notice, TasksUpdated
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.handler import EventHandler
from todo_agent.tui.screens.approval import ApprovalScreen
from todo_agent.tui.screens.sessions import SessionsScreen
from todo_agent.tui.transcript import AssistantEntry
from todo_agent.tui.widgets import markdown_blocks

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def assert_literal_on_screen(app: TodoAgentApp, *literals: str, payloads_shown: bool = False) -> None:
    assert app.is_running
    svg = app.export_screenshot()
    assert not CONTROL.search(svg.replace("\n", "")), "a control character reached the screen"
    text = screen_text(app)
    for literal in literals or LITERALS:
        assert literal in text, f"{literal!r} is not on screen:\n{text}"
    if not payloads_shown:  # OSC payloads are gone, not printed
        assert "title" not in text and "http://x" not in text


async def test_user_prompt_and_notices(workspace: Path) -> None:
    app = make_app(workspace, ["ok"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, HOSTILE)
        await turn_done(pilot)
        assert_literal_on_screen(app)
        screen = main_screen(app)
        await EventHandler(screen).handle(Notice(HOSTILE, "error"))
        await pilot.pause()
        await screen.conversation.clear()
        await EventHandler(screen).handle(Notice(HOSTILE, "warning"))
        await pilot.pause()
        assert_literal_on_screen(app)


async def test_assistant_markdown_live_and_finished(workspace: Path) -> None:
    model = GatedModel(f"Result: {HOSTILE}\n\n- item {HOSTILE}\n")
    app = make_app(workspace, model)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        screen = main_screen(app)
        await wait_until(pilot, lambda: screen.conversation.live is not None and "C1" in screen.conversation.live.text)
        await pilot.pause()
        assert_literal_on_screen(app)
        model.release.set()
        await turn_done(pilot)
        assert screen.conversation.live is None and AssistantEntry(model.text) in screen.conversation.entries
        assert_literal_on_screen(app)


async def test_a_long_fence_and_paragraph_drawn_in_slices(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of a long block reach the screen by other paths (code highlighted on its own,
    a paragraph's lines as inline Markdown): still literal, live and finished."""
    monkeypatch.setattr(markdown_blocks, "SLICE_LINES", 4)
    lines = "".join(f"line {n} {HOSTILE}\n" for n in range(30))
    model = GatedModel(f"```\n{lines}```\n\n{lines}")
    app = make_app(workspace, model)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        screen = main_screen(app)
        await wait_until(pilot, lambda: screen.conversation.live is not None and not screen.conversation.live.dirty)
        await pilot.pause()
        live = screen.conversation.live
        assert live is not None and {p.kind for p in live.final_pieces} >= {"code", "paragraph"}
        assert_literal_on_screen(app)
        screen.conversation.release_anchor()
        screen.conversation.scroll_home(animate=False, immediate=True)  # the code slices
        await pilot.pause()
        assert_literal_on_screen(app)
        model.release.set()
        await turn_done(pilot)
        assert screen.conversation.live is None
        assert_literal_on_screen(app)


async def test_tool_output_summary_and_expanded(workspace: Path) -> None:
    (workspace / "evil.txt").write_text(HOSTILE + "\nsecond line\n")
    app = make_app(workspace, [bash_step("cat evil.txt"), "done"], permission_mode="bypassPermissions")
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "show it")
        await turn_done(pilot)
        assert_literal_on_screen(app)
        screen = main_screen(app)
        block = screen.conversation.last_tool_block()
        assert block is not None
        await screen.conversation.toggle_output(block)
        await pilot.pause()
        assert block.expanded and "second line" in screen.conversation.block_text(block)
        assert not CONTROL.search(screen.conversation.block_text(block))
        assert_literal_on_screen(app)


async def test_task_subjects_and_active_forms(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        store = screen.runtime.store  # the panel draws the store's latest state
        for literal in LITERALS:
            await store.create(f"{literal}\x1b[2J", active_form=f"{literal}\x1b]0;title\x07")
        await store.update("1", status="in_progress")
        await EventHandler(screen).handle(TasksUpdated(store.snapshot()))
        await pilot.pause()
        assert_literal_on_screen(app)
        await send(pilot, "/todos")
        await pilot.pause()
        assert_literal_on_screen(app)


async def test_approval_summary_and_preview(workspace: Path) -> None:
    app = make_app(workspace, [bash_step(f"echo '{HOSTILE}'")])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "run it")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        await pilot.pause()
        assert_literal_on_screen(app, *LITERALS, payloads_shown=True)
        assert "␛[2J" in screen_text(app)  # the approval shows controls instead of dropping them
        await pilot.press("n")
        await turn_done(pilot)


async def test_approval_diff_preview(workspace: Path) -> None:
    (workspace / "a.txt").write_text("plain\n")
    edit = {"file_path": "a.txt", "old_string": "plain", "new_string": HOSTILE}
    app = make_app(workspace, [{"tool_calls": [{"name": "Edit", "arguments": edit}]}])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "edit it")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        await pilot.pause()
        assert app.is_running
        svg = app.export_screenshot()
        assert not CONTROL.search(svg.replace("\n", ""))
        await pilot.press("n")
        await turn_done(pilot)


async def test_session_titles_in_the_picker(workspace: Path) -> None:
    first = make_app(workspace, ["ok"])
    async with first.run_test(size=SIZE) as pilot:
        await send(pilot, HOSTILE)
        await turn_done(pilot)
        await send(pilot, "/new")
        await pilot.pause()
        await send(pilot, "/resume")
        await wait_until(pilot, lambda: isinstance(first.screen, SessionsScreen))
        await pilot.pause()
        assert_literal_on_screen(first, "[/bold]", "[red]x[/]")
