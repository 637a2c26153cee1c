"""`/goal` in the app: turns until the plan is proven, its standing on the status line,
`esc` stops it. Scripted models over real files and real checks, in real Textual."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import call
from test_task_checks import CHECK, CHECK_PY, update
from tui_helpers import SIZE, main_screen, make_app, send, turn_done, wait_settled, wait_until

from todo_agent.core.goal import TERMS
from todo_agent.tui.transcript import AssistantEntry, NoticeEntry
from todo_agent.tui.widgets.task_panel import TaskItem


async def test_goal_runs_to_verified_without_another_prompt_and_the_status_line_follows(workspace: Path) -> None:
    (workspace / "check.py").write_text(CHECK_PY)
    script = [
        {"tool_calls": [call("TaskCreate", subject="Fix the API", verify=CHECK)]},
        update("1", status="completed"),  # refused: the check fails
        {"text": "I think it is fine."},  # the goal sends it back
        {"tool_calls": [call("Write", file_path="fixed.txt", content="yes\n")]},
        update("1", status="completed"),
        {"text": "Fixed and proven."},
    ]
    app = make_app(workspace, script, permission_mode="acceptEdits", allow=[f"Bash({CHECK})"])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        shown: list[str] = []
        set_goal = screen.status.set_goal

        def record(text: str) -> None:
            shown.append(text)
            set_goal(text)

        screen.status.set_goal = record  # type: ignore[method-assign]
        await send(pilot, "/goal fix the API")
        await turn_done(pilot)
        await wait_settled(pilot)
        assert shown[0] == "goal 0/0 verified · 0 min · 0 tok" and shown[-1] == ""
        assert any(text.startswith("goal 0/1 verified") for text in shown)
        notices = [e.text for e in screen.conversation.entries if isinstance(e, NoticeEntry)]
        assert "goal not reached (0/1 verified): the model is sent back to work (1)" in notices
        assert "goal reached: 1/1 verified" in notices
        answers = [e.text for e in screen.conversation.entries if isinstance(e, AssistantEntry)]
        assert answers == ["I think it is fine.", "Fixed and proven."]  # each once: the goal's standing cuts none
        (row,) = screen.panel.list_view.query_children(TaskItem)
        assert row.task_value.verified and row.has_class("-verified")
        assert [m["content"] for m in screen.runtime.sessions.history if m["content"] == TERMS] == [TERMS]
        assert not screen.query_one("#status-goal").display


async def test_goal_without_text_on_an_empty_list_says_how_and_runs_nothing(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "/goal")
        await wait_until(pilot, lambda: isinstance(screen.conversation.entries[-1], NoticeEntry))
        assert "The task list is empty: /goal TEXT names the goal" in screen.conversation.entries[-1].text  # type: ignore[attr-defined]
        assert not screen.busy and screen.runtime.goal is None


@pytest.mark.script_may_end_early("esc stops the goal")
async def test_escape_stops_a_goal(workspace: Path) -> None:
    script = [
        {"tool_calls": [call("TaskCreate", subject="Wait")]},
        {"tool_calls": [call("Bash", command="sleep 30")]},
        {"text": "never"},
    ]
    app = make_app(workspace, script, permission_mode="bypassPermissions")
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await send(pilot, "/goal wait a while")
        await wait_until(pilot, lambda: screen.status._activity == "running Bash")
        await pilot.press("escape")
        await turn_done(pilot)
        goal = screen.runtime.goal
        assert goal is not None and goal.over and goal.continuations == 0
        assert not screen.query_one("#status-goal").display
