"""`todo-agent --demo`: the bundled script answers a declined call honestly, and the demo
leaves no temporary directory (or session) behind."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from tui_helpers import SIZE, answer_approval, main_screen, make_app, screen_text, send, turn_done, wait_until

from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.frontends import cli
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.screens.approval import ApprovalScreen
from todo_agent.tui.transcript import AssistantEntry


@pytest.fixture
def demo() -> Any:
    with cli.demo_workspace() as (workspace, model, prompt):
        yield workspace, ScriptedModel.from_file(model.removeprefix("script:")), prompt


def said(app: TodoAgentApp) -> str:
    return "\n".join(e.text for e in main_screen(app).conversation.entries if isinstance(e, AssistantEntry))


async def test_the_demo_runs_to_its_end_when_everything_is_approved(demo: Any) -> None:
    workspace, model, prompt = demo
    app = make_app(workspace, model, demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, prompt)
        await answer_approval(pilot, "Write", "1")  # the README sub-agent's, labelled with it and its task
        assert app.runtime is not None
        assert {row.agent_id for row in app.runtime.team.rows()} == {"explore-1", "general-2"}
        await answer_approval(pilot, "Edit", "1")
        await answer_approval(pilot, "Bash", "1")
        await turn_done(pilot)
        assert "passes (3 checks)" in said(app)
        outcomes = {r.agent_id: r.status for r in app.runtime.team.rows()}
        assert outcomes == {"explore-1": "completed", "general-2": "completed"}
        assert [t.status for t in app.runtime.plan.tasks()] == ["completed"] * 5
        assert "## Listing posts" in await asyncio.to_thread((workspace / "README.md").read_text, encoding="utf-8")
    model.assert_complete()


async def test_the_two_sub_agents_run_side_by_side(demo: Any) -> None:
    """While the README sub-agent waits for its approval, the explorer goes on working."""
    workspace, model, prompt = demo
    app = make_app(workspace, model, demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, prompt)
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.request.tool == "Write")
        assert app.screen.request.agent == "general-2 · #4 Document pagination"  # type: ignore[attr-defined]
        assert app.runtime is not None
        explorer = app.runtime.team_runner.children["explore-1"]
        await wait_until(pilot, lambda: explorer.phase == "done")  # it finished while general-2 waited
        assert explorer.status == "completed"
        await pilot.press("1")
        await answer_approval(pilot, "Edit", "1")
        await answer_approval(pilot, "Bash", "1")
        await turn_done(pilot)
    model.assert_complete()


@pytest.mark.parametrize("keys", [("n",), ("f", *"use an offset instead", "enter")], ids=["no", "feedback"])
async def test_declining_the_edit_ends_the_demo_honestly(demo: Any, keys: tuple[str, ...]) -> None:
    workspace, model, prompt = demo
    app = make_app(workspace, model, demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, prompt)
        await answer_approval(pilot, "Write", "1")
        await answer_approval(pilot, "Edit", *keys)
        await turn_done(pilot)
        if keys == ("n",):  # the turn stopped; the script answers the next message
            await send(pilot, "why did you stop?")
            await turn_done(pilot)
        assert "I left `posts.py` as it was" in said(app)
        assert "passes" not in said(app) and "Traceback" not in screen_text(app)
        store = main_screen(app).runtime.store
        statuses = [(t.id, t.status) for t in store.snapshot()]
        assert statuses == [
            ("1", "completed"),
            ("2", "pending"),
            ("3", "completed"),
            ("4", "completed"),
            ("5", "pending"),
        ]
    model.assert_complete()
    assert "page_size" not in await asyncio.to_thread((workspace / "posts.py").read_text, encoding="utf-8")


@pytest.mark.parametrize("keys", [("n",), ("f", *"run pytest instead", "enter")], ids=["no", "feedback"])
async def test_declining_the_checks_does_not_claim_they_pass(demo: Any, keys: tuple[str, ...]) -> None:
    workspace, model, prompt = demo
    app = make_app(workspace, model, demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, prompt)
        await answer_approval(pilot, "Write", "1")
        await answer_approval(pilot, "Edit", "1")
        await answer_approval(pilot, "Bash", *keys)
        await turn_done(pilot)
        if keys == ("n",):
            await send(pilot, "ok")
            await turn_done(pilot)
        assert "I did not run the checks" in said(app) and "passes" not in said(app)
        statuses = [t.status for t in main_screen(app).runtime.store.snapshot()]
        assert statuses == ["completed", "completed", "completed", "completed", "pending"]
    model.assert_complete()


@pytest.mark.script_may_end_early("quits the demo at its first approval, as a person might")
def test_the_demo_directory_is_gone_after_the_app_exits(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> None:
    seen: dict[str, Any] = {}
    real_run = TodoAgentApp.run

    async def quit_at_the_first_approval(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        seen["cwd"], seen["home"] = Path.cwd(), os.environ["TODO_AGENT_HOME"]
        seen["sessions"] = await asyncio.to_thread(lambda: list(Path(seen["home"]).rglob("*.jsonl")))
        await pilot.press("ctrl+q")

    def run_headless(self: TodoAgentApp, **_: Any) -> Any:  # the real app, without a terminal
        return real_run(self, headless=True, size=SIZE, auto_pilot=quit_at_the_first_approval)

    monkeypatch.setattr(TodoAgentApp, "run", run_headless)
    before = Path.cwd()
    assert cli.run(cli.build_parser().parse_args(["--demo"])) == 0
    demo_root = seen["cwd"].parent
    assert seen["cwd"].name == "demo_project" and demo_root.name.startswith("todo-agent-demo-")
    assert seen["sessions"] and Path(seen["home"]).is_relative_to(demo_root)  # the session was there
    assert not demo_root.exists() and Path.cwd() == before
    assert os.environ["TODO_AGENT_HOME"] == str(isolated_home / "todo-agent")  # put back


async def test_declining_the_sub_agents_readme_leaves_its_task_pending_and_the_demo_goes_on(demo: Any) -> None:
    workspace, model, prompt = demo
    app = make_app(workspace, model, demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, prompt)
        await answer_approval(pilot, "Write", "f", *"not now", "enter")
        await answer_approval(pilot, "Edit", "1")
        await answer_approval(pilot, "Bash", "1")
        await turn_done(pilot)
        assert app.runtime is not None
        assert {r.agent_id: r.status for r in app.runtime.team.rows()}["general-2"] == "partial"
        tasks = app.runtime.plan.tasks()
        assert [t.status for t in tasks] == ["completed", "completed", "completed", "pending", "completed"]
        assert tasks[3].attempts[-1].summary == "It stays pending: you asked me not to write the README."
        assert not (workspace / "README.md").exists()
    model.assert_complete()
