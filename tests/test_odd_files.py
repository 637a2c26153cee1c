"""Files that are not files: a FIFO, a symlink loop, a directory where a file was. With a
task in progress the change recorder looks at them too; it must refuse them as cleanly as
the tools do without a task (no hang, no crash, no lost turn), and so must rewinding a
task whose file became one of them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_headless_e2e import tc, todo_agent
from textual.pilot import Pilot
from textual.widgets import SelectionList, Static
from tui_helpers import SIZE, main_screen, make_app, screen_text, send, turn_done, wait_until

from todo_agent.core.atomic import new_file_mode
from todo_agent.core.tasks.history import history_path
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.screens.rewind import RewindScreen

START_TASK = [
    {"tool_calls": [tc("TaskCreate", subject="touch odd files", activeForm="Touching odd files")]},
    {"tool_calls": [tc("TaskUpdate", taskId="1", status="in_progress")]},
]


def _headless(workspace: Path, tmp_path: Path, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run `-p` in bypassPermissions (the gate lets everything through to the recorder);
    a hang fails the test at 30 s instead of blocking the suite."""
    script = tmp_path / "script.json"
    finish = {"tool_calls": [tc("TaskUpdate", taskId="1", status="completed")]}
    script.write_text(json.dumps({"steps": [*START_TASK, *steps, finish, {"text": "done"}]}))
    result = todo_agent(
        workspace,
        None,
        "-p",
        "go",
        "--model",
        f"script:{script}",
        "--tasks",
        "v2",
        "--permission-mode",
        "bypassPermissions",
        "--output-format",
        "stream-json",
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    end = next(e for e in events if e["type"] == "TurnEnd")
    assert end["reason"] == "done" and end["final_text"] == "done"  # the turn was not lost
    return [e for e in events if e["type"] == "ToolFinished" and e["name"] not in ("TaskCreate", "TaskUpdate")]


def test_a_write_to_a_fifo_with_a_task_in_progress_is_refused_not_hung(workspace: Path, tmp_path: Path) -> None:
    os.mkfifo(workspace / "pipe")
    calls = [
        {"tool_calls": [tc("Write", file_path="pipe", content="x")]},
        {"tool_calls": [tc("Write", file_path="ok.txt", content="fine\n")]},
    ]
    finished = _headless(workspace, tmp_path, calls)
    assert [(e["name"], e["status"]) for e in finished] == [("Write", "error"), ("Write", "ok")]
    assert "not a regular file" in finished[0]["output"]


def test_a_write_to_a_symlink_loop_with_a_task_in_progress_is_refused(workspace: Path, tmp_path: Path) -> None:
    (workspace / "loop").symlink_to("loop")
    calls = [
        {"tool_calls": [tc("Write", file_path="loop", content="x")]},
        {"tool_calls": [tc("Edit", file_path="loop/x", old_string="", new_string="x")]},
        {"tool_calls": [tc("Write", file_path="ok.txt", content="fine\n")]},
    ]
    finished = _headless(workspace, tmp_path, calls)
    assert [e["status"] for e in finished] == ["error", "error", "ok"]
    assert "symbolic links" in finished[0]["output"]


def test_a_command_that_turns_a_file_into_a_fifo_is_recorded_not_hung(workspace: Path, tmp_path: Path) -> None:
    (workspace / "data.txt").write_text("old\n")
    calls = [{"tool_calls": [tc("Bash", command="rm data.txt && mkfifo data.txt && mkdir made")]}]
    finished = _headless(workspace, tmp_path, calls)
    assert [e["status"] for e in finished] == ["ok"]


# --- rewinding a task whose file became something else ----------------------------------


def _two_files_app(workspace: Path) -> TodoAgentApp:
    (workspace / "a.txt").write_text("old a\n")
    (workspace / "b.txt").write_text("old b\n")
    writes = [tc("Write", file_path="a.txt", content="new a\n"), tc("Write", file_path="b.txt", content="new b\n")]
    steps = [*START_TASK, {"tool_calls": writes}, {"text": "ok"}]
    return make_app(workspace, steps, tasks_version="v2", permission_mode="bypassPermissions")


async def _open_rewind(pilot: Pilot[Any]) -> RewindScreen:
    screen = main_screen(pilot.app)  # type: ignore[arg-type]
    screen.focus_tasks()
    screen.panel.list_view.index = 0
    await pilot.pause()
    await pilot.press("r")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, RewindScreen))
    rewinding = pilot.app.screen
    assert isinstance(rewinding, RewindScreen)
    return rewinding


@pytest.mark.parametrize("became", ["a directory", "a FIFO"])
async def test_rewind_over_a_directory_or_a_fifo_is_said_per_file(workspace: Path, became: str) -> None:
    """A later command replaced a task's file: the rewind says so for that file (no crash,
    no freeze: `ctrl+q` still quits) and puts the other file back."""
    app = _two_files_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await turn_done(pilot)
        (workspace / "a.txt").unlink()
        if became == "a directory":
            (workspace / "a.txt").mkdir()
            (workspace / "a.txt" / "keep.txt").write_text("mine\n")
        else:
            os.mkfifo(workspace / "a.txt")
        rewinding = await _open_rewind(pilot)
        plans = {f.path: f for f in rewinding.plan.files}
        assert became in plans["a.txt"].note + plans["a.txt"].conflict
        assert not plans["a.txt"].suggested and plans["b.txt"].suggested
        if became == "a FIFO":  # a choosable conflict with nothing to diff (a directory cannot be chosen)
            title = str(rewinding.query_one("#rewind-diff-title", Static).render())
            assert title == "a.txt: it is now a FIFO, not a file"
        await pilot.press("y")  # the chosen files: b.txt alone
        await wait_until(pilot, lambda: not isinstance(app.screen, RewindScreen))
        await pilot.press("ctrl+q")
    assert (workspace / "b.txt").read_text() == "old b\n"
    if became == "a directory":
        assert (workspace / "a.txt" / "keep.txt").read_text() == "mine\n"  # never deleted
    else:
        assert (workspace / "a.txt").is_fifo()


async def test_a_fifo_chosen_in_a_rewind_is_replaced_not_read(workspace: Path) -> None:
    app = _two_files_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await turn_done(pilot)
        (workspace / "a.txt").unlink()
        os.mkfifo(workspace / "a.txt")
        rewinding = await _open_rewind(pilot)
        rewinding.query_one(SelectionList).select("a.txt")
        await pilot.press("y")
        await wait_until(pilot, lambda: not isinstance(app.screen, RewindScreen))
        await wait_until(pilot, (workspace / "a.txt").is_file)
    assert (workspace / "a.txt").read_text() == "old a\n" and (workspace / "b.txt").read_text() == "old b\n"


async def test_a_symlink_rewound_to_a_file_does_not_take_its_targets_mode(workspace: Path) -> None:
    app = _two_files_app(workspace)
    target = workspace / "tool.sh"
    target.write_text("#!/bin/sh\n")
    target.chmod(0o4755)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await turn_done(pilot)
        (workspace / "a.txt").unlink()
        (workspace / "a.txt").symlink_to("tool.sh")
        rewinding = await _open_rewind(pilot)
        rewinding.query_one(SelectionList).select("a.txt")
        await pilot.press("y")
        await wait_until(pilot, lambda: not (workspace / "a.txt").is_symlink())
    restored = workspace / "a.txt"
    assert restored.read_text() == "old a\n" and restored.stat().st_mode & 0o7777 == new_file_mode()


# --- the plan history -----------------------------------------------------------------------


async def test_a_history_line_with_an_absurd_time_is_skipped_with_a_notice(workspace: Path) -> None:
    first = make_app(workspace, [*START_TASK, {"text": "ok"}], tasks_version="v2")
    async with first.run_test(size=SIZE) as pilot:
        await send(pilot, "plan")
        await turn_done(pilot)
        log = history_path(main_screen(first).runtime.session.tasks_path)
    first.runtime.session.close()  # type: ignore[union-attr]
    lines = log.read_text().splitlines()
    forged = json.loads(lines[-1])
    forged["at"] = 1e300
    log.write_text("\n".join([*lines[:-1], json.dumps(forged), ""]))
    again = make_app(workspace, [], tasks_version="v2", continue_latest=True)
    async with again.run_test(size=SIZE) as pilot:
        await send(pilot, "/todos history")
        await wait_until(pilot, lambda: "Task list history" in screen_text(again))
        text = screen_text(again)
        assert "1 line of the history could not be read and was skipped" in text
        assert "created #1" in text  # the readable version is listed
