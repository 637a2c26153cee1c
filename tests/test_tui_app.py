"""The whole app on the real core, driven by Pilot with a scripted model."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from textual import events
from textual._time import get_time
from textual.widgets import OptionList, Static
from textual.worker import Worker, WorkerState
from tui_helpers import (
    SIZE,
    GatedModel,
    bash_step,
    main_screen,
    make_app,
    screen_text,
    send,
    task_steps,
    turn_done,
    wait_until,
)

from todo_agent.core.events import Event
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.permissions.rules import Rule
from todo_agent.core.settings import Config
from todo_agent.core.tasks.model import Task
from todo_agent.tui.app import DOUBLE_TAP, TodoAgentApp
from todo_agent.tui.commands import looks_like_command
from todo_agent.tui.screens.approval import ApprovalScreen
from todo_agent.tui.screens.main import MainScreen
from todo_agent.tui.screens.sessions import SessionsScreen
from todo_agent.tui.screens.welcome import WelcomeScreen
from todo_agent.tui.screens.work_area import WorkArea
from todo_agent.tui.transcript import (
    AssistantEntry,
    Entry,
    NoticeEntry,
    PlainEntry,
    ReminderEntry,
    ToolEntry,
    UserEntry,
)
from todo_agent.tui.widgets.prompt import PromptInput, Suggestions
from todo_agent.tui.widgets.task_panel import TaskItem, TaskPanel


def _entries(where: TodoAgentApp | list[Entry]) -> list[Entry]:
    return where if isinstance(where, list) else main_screen(where).conversation.entries


def notices(where: TodoAgentApp | list[Entry]) -> list[str]:
    return [e.text for e in _entries(where) if isinstance(e, NoticeEntry)]


def tools(where: TodoAgentApp | list[Entry]) -> list[ToolEntry]:
    return [e for e in _entries(where) if isinstance(e, ToolEntry)]


def toasts(app: TodoAgentApp) -> list[str]:
    return [n.message for n in app._notifications]


# --- a turn, start to end ---------------------------------------------------------------


async def test_a_turn_streams_runs_tools_and_updates_the_panel(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    model = ScriptedModel.from_data(
        [
            {"text": "Two steps.", "tool_calls": task_steps("Read notes", "Summarise", start=None)[0]["tool_calls"]},
            {"tool_calls": [{"name": "TaskUpdate", "arguments": {"taskId": "1", "status": "in_progress"}}]},
            {"tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}]},
            "The notes say **hello**.",
            "Still on #1: the stop check asked me to go on.",
        ]
    )
    app = make_app(workspace, model)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "summarise the notes")
        await turn_done(pilot)
        screen = main_screen(app)
        entries = screen.conversation.entries
        assert entries[entries.index(UserEntry("summarise the notes")) + 1] == AssistantEntry("Two steps.")
        assert [(t.name, t.status) for t in tools(app)] == [
            ("TaskCreate", "ok"),
            ("TaskCreate", "ok"),
            ("TaskUpdate", "ok"),
            ("Read", "ok"),
        ]
        assert AssistantEntry("The notes say **hello**.") in entries
        items = [i.task_value for i in screen.panel.query(TaskItem)]
        assert [(t.id, t.status) for t in items] == [("1", "in_progress"), ("2", "pending")]
        assert "(0/2 completed)" in str(screen.panel.query_one("#task-progress-label").visual)  # type: ignore[attr-defined]
        assert not screen.status.busy
    model.assert_complete()


async def test_tool_calls_counted_to_a_task_refresh_the_panel(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    steps = [
        *task_steps("Read the notes"),
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}]},
        {"tool_calls": [{"name": "Glob", "arguments": {"pattern": "*.txt"}}]},
        "Read them.",
        "Still reading.",  # the stop check's one continuation (#1 is left in progress)
    ]
    app = make_app(workspace, steps)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "read")
        await turn_done(pilot)
        row = main_screen(app).panel.query_one(TaskItem)
        # Only the attribution's update carries the counts: nothing else changed after the start.
        assert row.task_value.tool_calls == 2
        assert "2 calls" in str(row.query_one(".task-meta", Static).visual)


# --- approvals ---------------------------------------------------------------------------


async def _approval_run(workspace: Path, keys: list[str], steps: list[object]) -> tuple[list[Entry], ScriptedModel]:
    model = ScriptedModel.from_data(steps)
    app = make_app(workspace, model)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "say hi")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        await pilot.press(*keys)
        await turn_done(pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        return main_screen(app).conversation.entries, model


async def test_approval_yes_runs_the_command(workspace: Path) -> None:
    entries, model = await _approval_run(workspace, ["1"], [bash_step("echo hi"), "done"])
    (tool,) = tools(entries)
    assert (tool.status, tool.output.strip()) == ("ok", "hi")
    model.assert_complete()


async def test_the_status_line_says_it_waits_for_the_person(workspace: Path) -> None:
    app = make_app(workspace, [bash_step("echo hi"), "done"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "say hi")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        activity = main_screen(app).status.query_one("#status-activity", Static)
        assert str(activity.render()).startswith("waiting for your approval · Bash")
        conversation = main_screen(app).conversation
        await wait_until(pilot, lambda: conversation.last_tool_block() is not None)
        block = conversation.last_tool_block()
        assert block is not None and block.waiting
        assert "⎿  waiting for your approval…" in conversation.block_text(block)
        await pilot.press("1")
        await turn_done(pilot)
        assert str(activity.render()) == "ready"


async def test_a_protected_path_offers_no_rule_that_would_change_nothing(workspace: Path) -> None:
    # `.todo-agent/` asks whatever the allow rules say: "don't ask again" would only look
    # like an answer. The dialog leaves it out, and `2` does nothing.
    write = {"tool_calls": [{"name": "Write", "arguments": {"file_path": ".todo-agent/x.toml", "content": "a"}}]}
    app = make_app(workspace, [write, "done"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "write it")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        modal = app.screen
        assert isinstance(modal, ApprovalScreen)
        options = modal.query_one(OptionList)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert not any("don't ask again" in p for p in prompts), prompts
        await pilot.press("2")
        await pilot.pause()
        assert app.screen is modal
        await pilot.press("1")
        await turn_done(pilot)
        assert main_screen(app).runtime.permissions.session_allow == []
        assert (workspace / ".todo-agent" / "x.toml").read_text() == "a"


async def test_approval_y_is_yes_too(workspace: Path) -> None:
    entries, model = await _approval_run(workspace, ["y"], [bash_step("echo hi"), "done"])
    assert tools(entries)[0].status == "ok"
    model.assert_complete()


async def test_approval_always_adds_the_rule_and_stops_asking(workspace: Path) -> None:
    steps = [bash_step("echo one", "c1"), bash_step("echo two", "c2"), "done"]
    model = ScriptedModel.from_data(steps)
    app = make_app(workspace, model)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "echo twice")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        modal = app.screen
        assert isinstance(modal, ApprovalScreen)
        assert "Bash(echo:*)" in str(modal.query_one(OptionList).get_option_at_index(1).prompt)
        await pilot.press("2")
        await turn_done(pilot)
        assert Rule.parse("Bash(echo:*)") in main_screen(app).runtime.permissions.session_allow
        assert [t.output.strip() for t in tools(app)] == ["one", "two"]
    model.assert_complete()


@pytest.mark.script_may_end_early("the second step is a sentinel: `model.used == 1` proves it was never asked for")
async def test_approval_no_stops_the_turn(workspace: Path) -> None:
    entries, model = await _approval_run(workspace, ["3"], [bash_step("echo hi"), "never used"])
    (tool,) = tools(entries)
    assert tool.status == "denied"
    assert any("declined" in n for n in notices(entries))
    assert model.used == 1


@pytest.mark.script_may_end_early("the second step is a sentinel: `model.used == 1` proves it was never asked for")
async def test_approval_escape_is_no(workspace: Path) -> None:
    entries, model = await _approval_run(workspace, ["escape"], [bash_step("echo hi"), "never used"])
    assert tools(entries)[0].status == "denied" and model.used == 1


async def test_approval_feedback_goes_to_the_model_and_the_turn_goes_on(workspace: Path) -> None:
    entries, model = await _approval_run(
        workspace, ["f", *"use printf", "enter"], [bash_step("echo hi"), "OK, printf then."]
    )
    (tool,) = tools(entries)
    assert tool.status == "denied" and "use printf" in tool.output
    last_request = model.requests[-1]
    assert any(m.get("role") == "tool" and "use printf" in str(m.get("content")) for m in last_request)
    assert entries[-1] == AssistantEntry("OK, printf then.")
    model.assert_complete()


async def test_approval_for_an_edit_shows_the_diff_and_outside_paths(workspace: Path, tmp_path: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    outside = tmp_path / "elsewhere.txt"
    steps = [
        {
            "tool_calls": [
                {"name": "Edit", "arguments": {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}}
            ]
        },
        {"tool_calls": [{"name": "Write", "arguments": {"file_path": str(outside), "content": "hi"}}]},
    ]
    model = ScriptedModel.from_data(steps)
    app = make_app(workspace, model)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "edit")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        modal = app.screen
        assert isinstance(modal, ApprovalScreen) and modal.request.tool == "Edit"
        assert not modal.query("#approval-outside")
        await pilot.press("y")
        await wait_until(
            pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking and app.screen is not modal
        )
        second = app.screen
        assert isinstance(second, ApprovalScreen) and second.request.tool == "Write"
        assert "outside the workspace" in str(second.query_one("#approval-outside").visual)  # type: ignore[attr-defined]
        await pilot.press("n")
        await turn_done(pilot)
    assert (workspace / "a.py").read_text() == "x = 2\n"
    assert not outside.exists()


# --- interrupting ------------------------------------------------------------------------


async def test_escape_interrupts_mid_stream(workspace: Path) -> None:
    model = GatedModel("Let me think about th")
    app = make_app(workspace, model)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "think")
        screen = main_screen(app)
        await wait_until(pilot, lambda: screen.conversation.live is not None and bool(screen.conversation.live.text))
        await pilot.press("escape")
        await turn_done(pilot)
        assert screen.conversation.live is None
        assert AssistantEntry("Let me think about th") in screen.conversation.entries
        assert any("interrupted" in n for n in notices(app))
        history = screen.runtime.sessions.history
        assert history[-1]["role"] == "assistant" and "interrupted" in history[-1]["content"]
        assert not screen.runtime.agent.busy


async def test_escape_interrupts_a_running_bash(workspace: Path) -> None:
    model = ScriptedModel.from_data([bash_step("sleep 30")])
    app = make_app(workspace, model, permission_mode="bypassPermissions")
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "wait")
        screen = main_screen(app)
        await wait_until(pilot, lambda: bool(tools(app)) and screen.runtime.agent.busy)
        await pilot.press("escape")
        await turn_done(pilot)
        (tool,) = tools(app)
        assert tool.status == "cancelled"
        history = screen.runtime.sessions.history
        assert history[-1]["role"] == "tool" and history[-1]["tool_call_id"] == "call_bash"


async def test_prompts_sent_while_busy_are_queued(workspace: Path) -> None:
    gated = GatedModel("first")
    app = make_app(workspace, gated)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "one")
        screen = main_screen(app)
        await wait_until(pilot, lambda: screen.conversation.live is not None)
        await send(pilot, "two")
        assert any("Queued" in t for t in toasts(app))
        gated.release.set()
        await wait_until(pilot, lambda: UserEntry("two") in screen.conversation.entries)
        await turn_done(pilot)
        assert len(gated.requests) == 2


# --- sessions ----------------------------------------------------------------------------


async def test_continue_restores_the_conversation_and_the_panel(workspace: Path) -> None:
    steps = [
        *task_steps("Read code", "Fix bug"),
        {"tool_calls": [{"name": "Glob", "arguments": {"pattern": "*"}}]},
        "paused",
    ]
    first = make_app(workspace, steps)
    async with first.run_test(size=SIZE) as pilot:
        await send(pilot, "fix it")
        await turn_done(pilot)
        session_id = main_screen(first).runtime.session.id
    first.runtime.session.close()  # type: ignore[union-attr]

    again = make_app(workspace, [], continue_latest=True)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = main_screen(again)
        assert screen.runtime.session.id == session_id
        entries = screen.conversation.entries
        assert entries[0] == UserEntry("fix it")
        assert [t.name for t in tools(again)] == ["TaskCreate", "TaskCreate", "TaskUpdate", "Glob"]
        assert AssistantEntry("paused") in entries
        assert any("resumed session" in n for n in notices(again))
        panel = [(i.task_value.subject, i.task_value.status) for i in screen.panel.query(TaskItem)]
        assert panel == [("Read code", "in_progress"), ("Fix bug", "pending")]


async def test_reminders_are_one_folded_line_each_live_and_resumed(workspace: Path) -> None:
    """Each reminder the model got is drawn as one dim folded line, never as its tags, and a
    resumed session draws the same lines."""
    (workspace / "notes.txt").write_text("hello\n")
    read = {"tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}]}
    steps = [*task_steps("Read the notes", start=None), read, read, "Stopping."]
    first = make_app(workspace, steps, reminder_interval=1)
    async with first.run_test(size=SIZE) as pilot:
        await send(pilot, "read")
        await turn_done(pilot)
        screen = main_screen(first)
        sent = [
            str(m["content"]) for m in screen.runtime.sessions.history if "<system-reminder>" in str(m.get("content"))
        ]
        assert len(sent) >= 2  # the interval's, with nothing in progress
        live = [e for e in _entries(first) if isinstance(e, ReminderEntry)]
        assert [f"<system-reminder>\n{e.content}\n</system-reminder>" for e in live] == sent
        assert "system-reminder" not in screen_text(first)
        session_id = screen.runtime.session.id
    first.runtime.session.close()  # type: ignore[union-attr]

    again = make_app(workspace, [], resume=session_id)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert [e for e in _entries(again) if isinstance(e, ReminderEntry)] == live  # as it looked live
        assert "system-reminder" not in screen_text(again)


async def test_new_and_resume_commands(workspace: Path) -> None:
    app = make_app(workspace, [*task_steps("Only task"), "ok"])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "plan it")
        await turn_done(pilot)
        old_id = screen.runtime.session.id
        await send(pilot, "/new")
        await pilot.pause()
        assert screen.runtime.session.id != old_id
        assert not screen.panel.tasks and not tools(app)
        await send(pilot, "/resume")
        await wait_until(pilot, lambda: isinstance(app.screen, SessionsScreen))
        picker = app.screen
        assert isinstance(picker, SessionsScreen)
        assert [s.id for s in picker.sessions] == [old_id]
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.runtime.session.id == old_id)
        await pilot.pause()
        assert [t.subject for t in screen.panel.tasks] == ["Only task"]
        assert UserEntry("plan it") in screen.conversation.entries


async def test_resume_flag_without_an_id_opens_the_picker(workspace: Path) -> None:
    app = make_app(workspace, [], resume="")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, SessionsScreen))
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main_screen(app)


# --- slash commands and keys -----------------------------------------------------------------


async def test_slash_commands(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "other.json"
    # Two answers: a task is still in progress, so the turn is asked to go on once.
    script.write_text(json.dumps({"steps": ["hi", "still on it"]}))
    app = make_app(workspace, [*task_steps("Write tests", "Ship")])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "plan")
        await turn_done(pilot)
        await send(pilot, "/todos")
        await pilot.pause()
        printed = screen.conversation.entries[-1]
        assert isinstance(printed, PlainEntry)
        *listing, cost = printed.text.splitlines()
        assert listing == ["◼ #1 Write tests  ← Doing Write tests", "☐ #2 Ship", "(0/2 completed)"]
        assert re.fullmatch(
            r"The plan has cost \d+\.\d% of this session's prompt tokens \([\d,]+ of [\d,]+, 2 requests\)\.", cost
        )
        await send(pilot, "/mode plan")
        await pilot.pause()
        assert screen.runtime.permissions.mode == "plan" and screen.status.mode == "plan"
        await send(pilot, "/mode")
        await pilot.pause()
        assert screen.runtime.permissions.mode == "default"  # cycling skips bypass
        await send(pilot, "/mode bypassPermissions")
        await pilot.pause()
        assert screen.runtime.permissions.mode == "bypassPermissions"  # by name it is reachable
        await send(pilot, "/mode nonsense")
        await pilot.pause()
        assert "Unknown mode" in notices(app)[-1]
        await send(pilot, "/model")
        await pilot.pause()
        assert notices(app)[-1] == "model: script:test"
        await send(pilot, f"/model script:{script}")
        # The status line names a script by its file name; the config keeps the full spec.
        await wait_until(pilot, lambda: screen.runtime.config.model == f"script:{script}")
        assert screen.runtime.model_name == f"script:{script.name}"
        await send(pilot, "who answers now?")
        await turn_done(pilot)
        answers = [e for e in screen.conversation.entries if isinstance(e, AssistantEntry)]
        assert answers[-2:] == [AssistantEntry("hi"), AssistantEntry("still on it")]  # the new model answered
        await send(pilot, "/help")
        await pilot.pause()
        help_entry = screen.conversation.entries[-1]
        assert isinstance(help_entry, PlainEntry) and "/resume" in help_entry.text and "ctrl+t" in help_entry.text
        await send(pilot, "/frobnicate")
        await pilot.pause()
        assert "Unknown command /frobnicate" in notices(app)[-1]
        await send(pilot, "/quit")
        await pilot.pause()
    assert app.return_code == 0


async def test_shift_tab_cycles_the_permission_mode(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await pilot.press("shift+tab")
        assert screen.runtime.permissions.mode == "acceptEdits" == screen.status.mode
        await pilot.pause()
        assert notices(app)[-1] == "permission mode: acceptEdits"  # the flag's name, as /mode says it
        assert "acceptEdits (shift+tab)" in str(screen.status.query_one("#status-mode", Static).render())
        await pilot.press("shift+tab", "shift+tab")
        assert screen.runtime.permissions.mode == "default"
        await pilot.pause()
        assert notices(app)[-2:] == [f"permission mode: {m}" for m in ("plan", "default")]


async def test_the_demo_does_not_switch_to_a_real_model(workspace: Path) -> None:
    app = make_app(workspace, [], demo=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "/model gpt-4o")
        await pilot.pause()
        refusal = "the demo runs a scripted model; start todo-agent without --demo to use a real one"
        assert notices(app)[-1] == refusal
        assert screen.runtime.config.model == "script:test" and screen.runtime.model_name == "script:test"
        await send(pilot, "/model")  # showing the model is fine
        await pilot.pause()
        assert notices(app)[-1] == "model: script:test"


async def test_switching_to_a_real_model_without_a_key_warns_at_once(workspace: Path) -> None:
    app = make_app(workspace, [])  # a scripted session: no key, no base URL
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "/model gpt-4o-mini")
        await pilot.pause()
        assert notices(app)[-1] == (
            "cannot use gpt-4o-mini: OPENAI_API_KEY is not set and there is no --base-url; "
            "set one and start todo-agent again (the model stays script:test)"
        )
        assert screen.runtime.config.model == "script:test" and screen.status.query_one("#status-model")
    keyed = make_app(workspace, [], api_key="sk-test")
    async with keyed.run_test(size=SIZE) as pilot:
        await send(pilot, "/model gpt-4o-mini")
        await wait_until(pilot, lambda: main_screen(keyed).runtime.config.model == "gpt-4o-mini")


async def test_the_palette_screenshot_says_where_it_went(workspace: Path, isolated_home: Path) -> None:
    blocked = isolated_home / "blocked"
    blocked.write_text("a file where the folder should be")
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p", *"screenshot")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("Screenshot saved to" in t for t in toasts(app)))
        saved = Path(next(t for t in toasts(app) if "saved to" in t).split("saved to ", 1)[1])
        # No ~/Downloads here (a server): it goes beside the sessions, not into the project.
        assert saved.parent == isolated_home / "todo-agent" / "screenshots" and saved.suffix == ".svg"
        assert "<svg" in await asyncio.to_thread(saved.read_text, encoding="utf-8")
        await asyncio.to_thread((isolated_home / "Downloads").mkdir)
        app.deliver_screenshot()
        await wait_until(pilot, lambda: sum("Screenshot saved to" in t for t in toasts(app)) == 2)
        assert f"saved to {isolated_home / 'Downloads'}" in toasts(app)[-1]
        app.deliver_screenshot(path=str(blocked / "shots"))
        await wait_until(pilot, lambda: "Could not save the screenshot" in toasts(app)[-1])
        assert str(blocked / "shots") in toasts(app)[-1] and "Not a directory" in toasts(app)[-1]


async def test_ctrl_t_toggles_the_panel_and_says_when_it_is_empty(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        assert screen.panel.display
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert not screen.panel.display
        assert any("No tasks yet" in t for t in toasts(app))
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert screen.panel.display


async def test_a_hidden_panel_prints_the_list_only_when_it_changed(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    read = {"tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}]}
    steps = [
        *task_steps("Read the notes", "Report"),  # two batches: created, then #1 started
        read,  # the batch only counts a call to #1: the list reads the same
        read,
        {"tool_calls": [{"name": "TaskUpdate", "arguments": {"taskId": "1", "status": "completed"}}]},
        "Done reading.",
    ]
    app = make_app(workspace, steps, task_panel="hidden")
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "read")
        await turn_done(pilot)
        printed = [e.text for e in screen.conversation.entries if isinstance(e, PlainEntry)]
        assert [p.splitlines()[0] for p in printed] == [
            "☐ #1 Read the notes",
            "◼ #1 Read the notes  ← Doing Read the notes",
            "☒ #1 Read the notes",
        ]


async def test_bottom_and_hidden_panel_settings(workspace: Path) -> None:
    app = make_app(workspace, [*task_steps("One")], task_panel="hidden")
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        assert not screen.panel.display
        await send(pilot, "go")
        await turn_done(pilot)
        printed = [e for e in screen.conversation.entries if isinstance(e, PlainEntry)]
        assert printed and "☐ #1 One" in printed[0].text  # hidden panel: the list shows inline
        screen.place_panel("bottom")
        await pilot.pause()
        assert screen.panel.display and screen.panel.region.width > 100


async def test_the_panel_shrinks_in_a_narrow_window(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=(60, 30)) as pilot:
        await pilot.pause()
        screen = main_screen(app)
        assert screen.panel.region.width == 24
        assert screen.conversation.region.width >= 34
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert main_screen(app).panel.region.width == 44


async def test_ctrl_c_twice_quits(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert "Press ctrl+c again to quit" in toasts(app)
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_code == 0


async def test_editing_the_plan_from_the_panel(workspace: Path) -> None:
    app = make_app(workspace, [*task_steps("First", "Second")])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "plan")
        await turn_done(pilot)

        def store() -> tuple[Task, ...]:
            return screen.runtime.store.snapshot()

        await pilot.press("tab")  # from the prompt to the plan
        assert screen.panel.list_view.has_focus
        assert screen.panel.list_view.index == 0
        await pilot.press("a", *"Third", "enter")
        await wait_until(pilot, lambda: [t.subject for t in store()] == ["First", "Second", "Third"])
        await wait_until(pilot, lambda: len(screen.panel.tasks) == 3)
        assert screen.panel.list_view.index == 2  # the highlight follows the task just added
        await pilot.press("K")
        await wait_until(pilot, lambda: [t.subject for t in store()] == ["First", "Third", "Second"])
        await pilot.press("space")
        await wait_until(pilot, lambda: store()[1].status == "completed")
        await pilot.press("d")
        await wait_until(pilot, lambda: [t.subject for t in store()] == ["First", "Second"])
        await pilot.pause()
        assert [t.subject for t in screen.panel.tasks] == ["First", "Second"]
        assert screen.runtime.store.take_user_changes()  # the next request tells the model
        await screen.runtime.store.drain()


async def test_command_palette_lists_commands_and_toggles(workspace: Path) -> None:
    from todo_agent.tui.palette import palette_entries

    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        entries = palette_entries(main_screen(app))
        titles = [e.title for e in entries]
        assert any(t.startswith("/todos") for t in titles) and "Toggle the task panel" in titles
        for entry in entries:  # a command's description shows once, in the title
            assert not entry.help or entry.help not in entry.title, entry
        assert {e.title: e.help for e in entries}["/mode  Cycle the permission mode, or set one by name"] == (
            "/mode [MODE]"
        )
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"toggle the task")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: not main_screen(app).panel.display)


async def test_every_binding_has_a_description() -> None:
    from textual.binding import Binding

    from todo_agent.tui.screens.approval import ApprovalScreen, FeedbackInput
    from todo_agent.tui.screens.main import MainScreen
    from todo_agent.tui.screens.sessions import SessionsScreen
    from todo_agent.tui.widgets.prompt import PromptInput
    from todo_agent.tui.widgets.task_panel import AddTaskInput, TaskListView

    for owner in (TodoAgentApp, MainScreen, ApprovalScreen, FeedbackInput, SessionsScreen, WelcomeScreen):
        for binding in owner.BINDINGS:
            assert isinstance(binding, Binding) and binding.description, (owner, binding)
    for owner in (PromptInput, TaskListView, AddTaskInput):  # type: ignore[assignment]
        for binding in owner.BINDINGS:
            assert isinstance(binding, Binding) and binding.description and binding.tooltip, (owner, binding)


# --- starting -----------------------------------------------------------------------------


def test_the_welcome_page_names_the_real_settings_file(
    monkeypatch: pytest.MonkeyPatch, isolated_home: Path, tmp_path: Path
) -> None:
    from todo_agent.tui.screens.welcome import welcome_text

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "elsewhere"))
    assert f"`{tmp_path / 'elsewhere' / 'todo-agent' / 'settings.toml'}`" in welcome_text()
    mac = isolated_home / "Library" / "Application Support" / "todo-agent" / "settings.toml"
    assert "`~/Library/Application Support/todo-agent/settings.toml`" in welcome_text(mac)


async def test_without_a_model_the_welcome_screen_explains_setup(workspace: Path) -> None:
    config = Config(workspace=workspace)
    assert not config.has_model
    app = TodoAgentApp.for_config(config, animations=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, WelcomeScreen)
        from textual.widgets import Markdown

        text = app.screen.query_one(Markdown).source
        for needle in (
            "OPENAI_API_KEY",
            "http://localhost:11434/v1",
            "http://localhost:8000/v1",
            "--port 8080",
            "--demo",
            "`~/.config/todo-agent/settings.toml`",  # where this platform keeps it; project files may not set base_url
        ):
            assert needle in text
        assert ".todo-agent/settings.toml" not in text.replace("~/.config/todo-agent/settings.toml", "")
        await pilot.press("q")
    assert app.return_code == 0


def test_openai_is_not_imported_before_the_first_frame(workspace: Path) -> None:
    program = f"""
import sys, asyncio
from pathlib import Path
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config
from todo_agent.core.tasks.model import Task
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.screens.main import MainScreen
assert "openai" not in sys.modules, "imported by the TUI modules"
seen = {{}}
original_mount = MainScreen.on_mount
async def on_mount(self):
    seen["at_mount"] = "openai" in sys.modules
    await original_mount(self)
MainScreen.on_mount = on_mount
original_warm = Runtime.warm_up
def warm_up(self):
    seen["warm_up_called"] = True
    original_warm(self)
Runtime.warm_up = warm_up
config = Config(workspace=Path({str(workspace)!r}), model="gpt-4o-mini", api_key="sk-test")
app = TodoAgentApp.for_config(config, animations=False)
async def main():
    async with app.run_test() as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
asyncio.run(main())
assert seen == {{"at_mount": False, "warm_up_called": True}}, seen
assert "openai" in sys.modules
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", program], check=False, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "ok", result.stderr[-3000:]


async def test_interrupting_while_an_approval_waits_closes_it(workspace: Path) -> None:
    app = make_app(workspace, [bash_step("echo hi")])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "run")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        screen = main_screen(app)
        screen.interrupt()  # e.g. from the command palette
        await turn_done(pilot)
        assert app.screen is screen
        assert tools(app)[0].status == "cancelled"
        assert any("interrupted" in n for n in notices(app))


def failing_turn(message: str) -> Callable[[str], AsyncIterator[Event]]:
    """A stand-in for `Agent.run_turn` that fails with `message` before any event."""

    async def broken(prompt: str) -> AsyncIterator[Event]:
        raise RuntimeError(message)
        yield  # pragma: no cover - makes this an async generator

    return broken


async def test_a_failing_turn_is_reported_and_the_app_goes_on(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(workspace, ["fine"])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)

        monkeypatch.setattr(screen.runtime.agent, "run_turn", failing_turn("boom"))
        await send(pilot, "go")
        await turn_done(pilot)
        assert any("The turn failed: RuntimeError: boom" in n for n in notices(app))
        assert any("boom" in t for t in toasts(app))
        monkeypatch.undo()
        await send(pilot, "again")
        await turn_done(pilot)
        assert main_screen(app).conversation.entries[-1] == AssistantEntry("fine")


async def test_a_turn_is_finished_once_when_its_messages_come_late(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a busy machine the worker's RUNNING message can be read after it has failed; the
    failure is still reported once (it was twice: `is_finished` was read, not the message)."""
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        monkeypatch.setattr(screen.runtime.agent, "run_turn", failing_turn("boom"))
        handle = MainScreen.on_worker_state_changed

        async def late(self: MainScreen, event: Worker.StateChanged) -> None:
            if event.worker.group == "turn" and event.state == WorkerState.RUNNING:
                await asyncio.gather(event.worker.wait(), return_exceptions=True)  # read after the failure
            await handle(self, event)

        await wait_until(pilot, screen._ready.is_set)  # the model client is built
        monkeypatch.setattr(MainScreen, "on_worker_state_changed", late)
        await send(pilot, "go")
        await wait_until(pilot, lambda: any("boom" in t for t in toasts(app)))
        await turn_done(pilot)
        assert len([t for t in toasts(app) if "boom" in t]) == 1
        assert len([n for n in notices(app) if "The turn failed" in n]) == 1


async def test_model_errors_show_as_notices(workspace: Path) -> None:
    app = make_app(workspace, [])  # the script has no step: the core reports an error
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        await turn_done(pilot)
        assert any("the script has no step 1" in n for n in notices(app))
        assert app.is_running


async def test_pageup_scrolls_the_conversation_from_the_prompt(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        conversation = main_screen(app).conversation
        await conversation.load([NoticeEntry(f"line {n}") for n in range(80)])
        await pilot.pause()
        bottom = conversation.scroll_y
        assert bottom > 0 and main_screen(app).query_one("#prompt").has_focus
        await pilot.press("pageup")
        await wait_until(pilot, lambda: conversation.scroll_y < bottom)
        await pilot.press("pagedown", "pagedown")
        await wait_until(pilot, lambda: conversation.scroll_y == conversation.max_scroll_y)


# --- reviewed defects -------------------------------------------------------------------


def _two_calls() -> dict[str, object]:
    return {
        "tool_calls": [
            {"id": "c1", "name": "Bash", "arguments": {"command": "echo one"}},
            {"id": "c2", "name": "Bash", "arguments": {"command": "echo two"}},
        ]
    }


async def test_a_call_cancelled_by_an_earlier_no_keeps_its_arguments(workspace: Path) -> None:
    app = make_app(workspace, [_two_calls()])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        await pilot.press("n")
        await turn_done(pilot)
        assert [(t.summary, t.status) for t in tools(app)] == [("echo one", "denied"), ("echo two", "cancelled")]
        assert "⏺ Bash(echo two)" in screen_text(app)


async def test_a_double_tap_does_not_answer_the_next_approval(workspace: Path) -> None:
    app = make_app(workspace, [_two_calls()])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        first = app.screen
        tap = events.Key("y", "y")
        app.post_message(tap)
        await wait_until(
            pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking and app.screen is not first
        )
        second = app.screen
        assert isinstance(second, ApprovalScreen) and second.request.summary == "echo two"
        # The second press of a double tap, typed before the second question existed (the
        # loop was busy, say), and a third a moment after it appeared. Times are set, not
        # taken from the clock: however slow the machine, they are a double tap.
        again, late = events.Key("y", "y"), events.Key("y", "y")
        again.time = second.shown_at - 0.05
        late.time = second.shown_at + 0.01
        app.post_message(again)
        app.post_message(late)
        await pilot.pause()
        await pilot.pause()
        assert app.screen is second, "a key meant for the first question answered the second"
        # Read and answered: a key typed once the double-tap window is over counts.
        answer = events.Key("n", "n")
        answer.time = late.time + DOUBLE_TAP + 0.01
        app.post_message(answer)
        await turn_done(pilot)
        assert [(t.summary, t.status) for t in tools(app)] == [("echo one", "ok"), ("echo two", "denied")]


async def test_answers_now_says_whether_a_key_would_answer_the_open_approval(workspace: Path) -> None:
    app = make_app(workspace, [_two_calls()])
    async with app.run_test(size=SIZE) as pilot:
        assert not app.answers_now("y")  # nothing asks
        await send(pilot, "go")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        first = app.screen
        assert app.answers_now("y")
        tap = events.Key("y", "y")
        tap.time = get_time() + 60  # the double-tap window stays open for the whole test
        app.post_message(tap)
        await wait_until(
            pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking and app.screen is not first
        )
        assert not app.answers_now("y") and app.answers_now("n")
        await pilot.press("n")
        await turn_done(pilot)
        assert [(t.summary, t.status) for t in tools(app)] == [("echo one", "ok"), ("echo two", "denied")]


async def test_keys_typed_after_the_modal_opened_still_answer_it(workspace: Path) -> None:
    entries, _ = await _approval_run(workspace, ["2"], [bash_step("echo hi"), "done"])
    assert tools(entries)[0].status == "ok"


async def test_a_resumed_session_shows_failed_and_declined_calls(workspace: Path) -> None:
    (workspace / "log.txt").write_text("Error: disk quota exceeded at 03:00\nretrying ok\n")
    steps = [
        {"tool_calls": [{"id": "r1", "name": "Read", "arguments": {"file_path": str(workspace / "log.txt")}}]},
        bash_step("false", "b1"),
        "ok",
        bash_step("rm -rf build", "b2"),
    ]
    first = make_app(workspace, steps)
    async with first.run_test(size=SIZE) as pilot:
        await send(pilot, "look")
        await wait_until(pilot, lambda: isinstance(first.screen, ApprovalScreen) and first.screen.asking)
        await pilot.press("y")
        await turn_done(pilot)
        await send(pilot, "next")
        await wait_until(pilot, lambda: isinstance(first.screen, ApprovalScreen) and first.screen.asking)
        await pilot.press("n")
        await turn_done(pilot)
        live = [(t.name, t.status) for t in tools(first)]
        session_id = main_screen(first).runtime.session.id
    first.runtime.session.close()  # type: ignore[union-attr]
    assert live == [("Read", "ok"), ("Bash", "error"), ("Bash", "denied")]

    again = make_app(workspace, [], resume=session_id)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert [(t.name, t.status) for t in tools(again)] == live


async def test_an_edit_and_a_stale_redraw_at_once_show_the_store(workspace: Path) -> None:
    app = make_app(workspace, [*task_steps("First", "Second", "Third", start=None), "done"])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "plan")
        await turn_done(pilot)
        store = screen.runtime.store
        for status in ("completed", "pending", "in_progress", "completed"):
            stale = store.snapshot()  # what a `TasksUpdated` still in flight carries
            await asyncio.gather(
                screen.query_one(WorkArea)._task_status(TaskPanel.StatusChange("1", status)),  # the person's edit
                screen.show_tasks(stale),
            )
            # Redraws that overlap, the event's (older than the store) last.
            await asyncio.gather(screen.panel.show(store.snapshot()), screen.show_tasks(stale))
            await pilot.pause()
            shown = [(i.task_value.id, i.task_value.status) for i in screen.panel.query(TaskItem)]
            assert shown == [(t.id, t.status) for t in screen.runtime.store.snapshot()]
            assert shown[0] == ("1", status)


async def test_history_walks_past_slash_commands(workspace: Path) -> None:
    app = make_app(workspace, ["a1"])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "first prompt")
        await turn_done(pilot)
        await send(pilot, "/todos")
        await send(pilot, "/help")
        await pilot.pause()
        prompt = screen.query_one(PromptInput)
        seen = []
        for _ in range(3):
            await pilot.press("up")
            seen.append(prompt.text)
            assert not screen.query_one(Suggestions).display
        assert seen == ["/help", "/todos", "first prompt"]
        await pilot.press("down")
        assert prompt.text == "/todos"
        await pilot.press("enter")  # a recalled command runs as it is
        await pilot.pause()
        assert isinstance(screen.conversation.entries[-1], PlainEntry)


def test_what_counts_as_a_mistyped_command() -> None:
    assert looks_like_command("/compact") and looks_like_command(" /hlep ")
    assert not looks_like_command("/tmp is full, please clean it")
    assert not looks_like_command("/usr/lib")
    assert not looks_like_command("/")
    assert not looks_like_command("hello")


async def test_a_prompt_that_starts_with_a_path_is_sent(workspace: Path) -> None:
    app = make_app(workspace, ["cleaning", "listing"])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "/tmp is full, please clean it")
        await turn_done(pilot)
        assert screen.conversation.entries[-2:] == [
            UserEntry("/tmp is full, please clean it"),
            AssistantEntry("cleaning"),
        ]
        await send(pilot, "/usr/lib")
        await turn_done(pilot)
        assert screen.conversation.entries[-1] == AssistantEntry("listing")
        await send(pilot, "/compcat")
        await pilot.pause()
        assert notices(app)[-1] == "Unknown command /compcat; /help lists them."
        assert not any("Unknown command /tmp" in n or "Unknown command /usr" in n for n in notices(app))


async def test_prose_after_a_command_without_arguments_is_a_prompt(workspace: Path) -> None:
    app = make_app(workspace, ["on it"])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "/quit the retry loop after 3 attempts in worker.py")
        await turn_done(pilot)
        assert app.is_running
        assert screen.conversation.entries[-1] == AssistantEntry("on it")


async def test_a_held_key_does_not_answer_the_next_approval(workspace: Path) -> None:
    app = make_app(workspace, [_two_calls(), "done"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        first = app.screen
        tap = events.Key("y", "y")
        app.post_message(tap)
        await wait_until(
            pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking and app.screen is not first
        )
        second = app.screen
        assert isinstance(second, ApprovalScreen)
        # Auto-repeat from the first press on: each press within the window of the one
        # before, some before the second question appeared (a slow machine) and some after.
        last = tap.time
        while last < second.shown_at + 3 * DOUBLE_TAP:
            last += DOUBLE_TAP * 0.8
            repeat = events.Key("y", "y")
            repeat.time = last
            app.post_message(repeat)
            await pilot.pause()
        assert app.screen is second, "a held key answered the second question"
        answer = events.Key("y", "y")
        answer.time = last + DOUBLE_TAP + 0.01  # after a pause
        app.post_message(answer)
        await turn_done(pilot)
        assert [t.status for t in tools(app)] == ["ok", "ok"]


async def test_ctrl_c_twice_quits_from_an_approval(workspace: Path) -> None:
    app = make_app(workspace, [bash_step("echo hi")])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert "Press ctrl+c again to quit" in toasts(app)
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_code == 0


async def test_ctrl_c_still_copies_selected_text(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        prompt = main_screen(app).query_one(PromptInput)
        prompt.focus()
        prompt.text = "some draft"
        prompt.move_cursor(prompt.document.end)
        await pilot.press("shift+left", "shift+left", "ctrl+c")
        await pilot.pause()
        assert app.clipboard == "ft"
        assert app.is_running and "Press ctrl+c again to quit" not in toasts(app)


async def test_the_approval_shows_its_own_keys(workspace: Path) -> None:
    app = make_app(workspace, [bash_step("echo hi")])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "Always" in footer and "No, with feedback" in footer
        assert "Interrupt" not in footer and "Tasks" not in footer
        activity = str(main_screen(app).status.query_one("#status-activity", Static).render())
        assert activity.endswith("esc = no") and "esc to interrupt" not in activity
        await pilot.press("n")
        await turn_done(pilot)


async def test_escape_outside_the_prompt_goes_back_to_it(workspace: Path) -> None:
    model = GatedModel()
    app = make_app(workspace, model)
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "go")
        await wait_until(pilot, lambda: screen.busy and bool(model.requests))
        prompt = screen.query_one(PromptInput)
        screen.focus_tasks()
        await pilot.press("a")  # the add-task input
        await pilot.press("escape")
        assert prompt.has_focus and not screen.query_one("#task-add").display
        screen.focus_tasks()
        await pilot.press("escape")
        assert prompt.has_focus
        await pilot.pause()
        assert screen.busy and not any("interrupted" in n for n in notices(app))
        await pilot.press("escape")  # from the prompt: now it interrupts
        await turn_done(pilot)
        assert any("interrupted" in n for n in notices(app))


async def test_a_failure_message_is_not_read_as_markup(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)

        monkeypatch.setattr(screen.runtime.agent, "run_turn", failing_turn("bad [/bold] and [@click=app.quit]x[/]"))
        await send(pilot, "go")
        await turn_done(pilot)
        await pilot.pause()
        (toast,) = [n for n in app._notifications if "bad" in n.message]
        assert not toast.markup
        assert "[@click=app.quit]x[/]" in screen_text(app)
        assert app.is_running
