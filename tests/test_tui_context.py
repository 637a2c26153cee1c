"""`/context` and the reminder's folded line in the app, driven as a person would (issue 31)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from tui_helpers import main_screen, make_app, send, turn_done, wait_until

from todo_agent.tui.transcript import PlainEntry, ReminderEntry


async def context_total(pilot: Pilot[Any]) -> tuple[int, str]:
    conversation = main_screen(pilot.app).conversation  # type: ignore[arg-type]
    before = len(conversation.entries)
    await send(pilot, "/context")
    await wait_until(pilot, lambda: len(conversation.entries) > before + 1)
    entry = conversation.entries[-1]
    assert isinstance(entry, PlainEntry) and entry.kind == "context"
    found = re.match(r"([\d,]+) / ([\d,]+) tokens", entry.text)
    assert found is not None, entry.text
    return int(found.group(1).replace(",", "")), entry.text


async def test_context_shows_each_part_and_grows_with_the_conversation(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Run pytest -q before you finish.\n")
    answer = "Here is the plan, at length. " * 200
    steps = [{"tool_calls": [{"name": "TaskCreate", "arguments": {"subject": "Add pagination"}}]}, answer]
    app = make_app(workspace, steps, permission_mode="bypassPermissions")
    async with app.run_test(size=(120, 40)) as pilot:
        first, text = await context_total(pilot)
        for label in ("system prompt", "project instructions", "built-in tools", "the plan", "free before compaction"):
            assert label in text
        await send(pilot, "plan it")
        await turn_done(pilot)
        second, text = await context_total(pilot)
        assert second > first + 500  # the 5,800-character answer, a task call and its result
        assert "conversation" in text


async def test_an_edit_with_no_task_in_progress_shows_the_reminder_as_a_folded_line(workspace: Path) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    steps = [
        {"tool_calls": [{"name": "TaskCreate", "arguments": {"subject": "Change x"}}]},
        {"tool_calls": [{"name": "Edit", "arguments": {"file_path": "app.py", "old_string": "1", "new_string": "2"}}]},
        "Changed x.",
    ]
    app = make_app(workspace, steps, permission_mode="bypassPermissions")
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, "change x")
        await turn_done(pilot)
        conversation = main_screen(pilot.app).conversation  # type: ignore[arg-type]
        (reminder,) = [e for e in conversation.entries if isinstance(e, ReminderEntry)]
        assert reminder.detail.startswith("You changed files while no task is in progress: app.py.")
        assert "☐ #1 Change x" in reminder.content  # what the model got, unfolded on a click
