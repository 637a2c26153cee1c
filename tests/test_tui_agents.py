"""Sub-agents in the real app (Pilot): one approval queue, each child visible and stoppable."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent_helpers import agent, call, gate_children
from tui_helpers import main_screen, make_app, screen_text, send, turn_done, wait_settled, wait_until

from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.tui.screens.approval import ApprovalScreen
from todo_agent.tui.transcript import AssistantEntry, ToolEntry


def writer(n: int) -> dict[str, Any]:
    return {
        "match": f"write file {n}",
        "steps": [
            {"tool_calls": [call("Write", file_path=f"f{n}.txt", content=f"{n}\n")]},
            {"tool_calls": [call("Glob", pattern="*"), call("TaskUpdate", taskId=str(n), status="completed")]},
            {"text": f"wrote f{n}.txt"},
        ],
    }


async def test_three_children_ask_at_once_and_each_approval_is_answered_in_turn(workspace: Path) -> None:
    script = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject=f"File {n}") for n in (1, 2, 3)]},
            {"tool_calls": [agent(f"File {n}", f"write file {n}", task_id=str(n)) for n in (1, 2, 3)]},
            {"text": "two written, one declined"},
        ],
        "agents": [
            writer(1),
            {
                "match": "write file 2",
                "steps": [
                    {"tool_calls": [call("Write", file_path="f2.txt", content="2\n")]},
                    {"text": "I was told not to"},
                    {"text": "so #2 is not done"},
                ],
            },
            writer(3),
        ],
    }
    app = make_app(workspace, ScriptedModel.from_data(script))
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, "write three files")
        asked: list[tuple[str, str, int]] = []
        answers = {"general-1": "1", "general-2": "f", "general-3": "1"}
        for _ in range(3):
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
            screen = app.screen
            assert isinstance(screen, ApprovalScreen)
            request = screen.request
            if not asked:  # the three ask at once: the first one's dialog counts the others
                await wait_until(pilot, lambda s=screen: s.queued == 2)
            asked.append((request.agent, request.arguments["file_path"], screen.queued))
            agent_id = request.agent.split(" · ")[0]
            assert f"⚑ {request.agent} asks" in screen_text(app)
            await wait_until(pilot, lambda key=answers[agent_id]: app.answers_now(key))  # not a double tap
            if answers[agent_id] == "f":
                await pilot.press("f", *"not this one", "enter")
            else:
                await pilot.press(answers[agent_id])
            await wait_until(pilot, lambda s=screen: app.screen is not s)
        await turn_done(pilot)
        # Each was labelled with its agent and task; the others waited and were counted.
        assert sorted((who, path) for who, path, _ in asked) == [
            ("general-1 · #1 File 1", "f1.txt"),
            ("general-2 · #2 File 2", "f2.txt"),
            ("general-3 · #3 File 3", "f3.txt"),
        ]
        assert [queued for _, _, queued in asked] == [2, 1, 0]  # none lost: the first saw two more waiting
        # Each answer went to its own call only.
        assert (workspace / "f1.txt").read_text() == "1\n" and (workspace / "f3.txt").read_text() == "3\n"
        assert not (workspace / "f2.txt").exists()
        assert [t.status for t in app.runtime.plan.tasks()] == ["completed", "pending", "completed"]  # type: ignore[union-attr]


async def test_the_task_row_shows_its_child_o_opens_its_transcript_live_and_x_stops_it(workspace: Path) -> None:
    script = {
        "steps": [
            {
                "tool_calls": [
                    call("TaskCreate", subject="Slow", activeForm="Doing slow"),
                    call("TaskCreate", subject="Fast"),
                ]
            },
            {"tool_calls": [agent("Slow", "the slow one", task_id="1"), agent("Fast", "the fast one", task_id="2")]},
            {"text": "one stopped, one done"},
        ],
        "agents": [
            {
                "match": "the slow one",
                "steps": [
                    {"text": "Looking around first.", "tool_calls": [call("Bash", command="sleep 60")]},
                ],
            },
            {
                "match": "the fast one",
                "steps": [
                    {"tool_calls": [call("Glob", pattern="*"), call("TaskUpdate", taskId="2", status="completed")]},
                    {"text": "fast done"},
                ],
            },
        ],
    }
    model = ScriptedModel.from_data(script)
    app = make_app(workspace, model, permission_mode="bypassPermissions")
    assert app.runtime is not None
    release = asyncio.Event()
    gate_children(app.runtime, {"the fast one": {1: release}})
    async with app.run_test(size=(130, 40)) as pilot:
        screen = main_screen(app)
        await send(pilot, "go")
        await wait_until(pilot, lambda: "general-1: Bash sleep 60" in screen_text(app))
        text = screen_text(app)
        assert "⎿  general-1 · Bash sleep 60" in text  # the live line under its Agent call
        screen.focus_tasks()
        screen.panel.list_view.index = 0
        await pilot.press("o")
        await wait_until(pilot, lambda: screen.viewing == "general-1")
        shown = screen.agent_view.entries
        assert shown[0].text.startswith("the slow one")  # type: ignore[union-attr]
        assert any(isinstance(e, AssistantEntry) and e.text == "Looking around first." for e in shown)
        assert any(isinstance(e, ToolEntry) and e.name == "Bash" for e in shown)
        assert "general-1 · #1: its own transcript" in screen_text(app)
        screen.panel.list_view.focus()
        await pilot.press("x")
        await wait_until(pilot, lambda: app.runtime.team_runner.children["general-1"].phase == "done")  # type: ignore[union-attr]
        assert app.runtime.team_runner.children["general-2"].phase == "running"  # type: ignore[union-attr]
        await wait_until(
            pilot,
            lambda: any(
                "general-1 ended: cancelled (stopped by you)" in getattr(e, "text", "")
                for e in screen.agent_view.entries
            ),
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: screen.viewing is None and screen.conversation.display)
        release.set()
        await turn_done(pilot)
        await wait_settled(pilot)
        tasks = app.runtime.plan.tasks()
        assert [(t.status, t.attempts[-1].outcome) for t in tasks] == [
            ("pending", "cancelled"),
            ("completed", "completed"),
        ]
        assert "cancelled (general-1)" in screen_text(app)  # the row: its attempt


async def test_a_shared_list_shows_another_processs_change_within_a_second(workspace: Path) -> None:
    from todo_agent.core.session.directory import task_list_path
    from todo_agent.core.tasks.store import TaskStore

    app = make_app(workspace, ScriptedModel.from_data({"steps": []}), task_list="team")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = main_screen(app)
        other = TaskStore.load(task_list_path("team"))  # another process's store of the same list
        await asyncio.to_thread(lambda: asyncio.run(other.create("Made elsewhere")))
        started = asyncio.get_running_loop().time()
        await wait_until(pilot, lambda: [t.subject for t in screen.panel.tasks] == ["Made elsewhere"])
        assert asyncio.get_running_loop().time() - started < 1.0
