"""The panel as the way to review work: what each task changed, its diff, rewind, undo, edit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_task_changes import A, B, contents, tc, three_tasks
from textual.pilot import Pilot
from textual.widgets import Input, SelectionList, Static
from tui_helpers import SIZE, main_screen, make_app, send, turn_done, wait_settled, wait_until

from todo_agent.core.tasks.model import Budget
from todo_agent.core.tasks.reminders import USER_EDITED
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.screens.changes import ChangesScreen
from todo_agent.tui.screens.rewind import RewindScreen
from todo_agent.tui.transcript import NoticeEntry, PlainEntry
from todo_agent.tui.widgets.task_panel import TaskItem


@pytest.fixture
def project(workspace: Path) -> Path:
    (workspace / "a.py").write_text(A)
    (workspace / "b.py").write_text(B)
    (workspace / "old.txt").write_text("old\nstuff\n")
    return workspace


def review_app(workspace: Path, extra: list[Any] = (), **config: Any) -> TodoAgentApp:  # type: ignore[assignment]
    return make_app(workspace, [*three_tasks(), *extra], permission_mode="bypassPermissions", **config)


def files_lines(app: TodoAgentApp) -> dict[str, str]:
    rows = main_screen(app).panel.list_view.query_children(TaskItem)
    return {row.task_value.id: str(row.query_one(".task-files", Static).render()) for row in rows}


async def focus_task(pilot: Pilot[Any], index: int) -> None:
    screen = main_screen(pilot.app)  # type: ignore[arg-type]
    screen.focus_tasks()
    screen.panel.list_view.index = index
    await pilot.pause()


async def run_three(pilot: Pilot[Any]) -> None:
    await send(pilot, "do the three things")
    await turn_done(pilot)
    await wait_settled(pilot)


async def test_the_panel_shows_what_each_task_changed(project: Path) -> None:
    app = review_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await run_three(pilot)
        assert files_lines(app) == {"1": "2 files · +4 −1", "2": "1 file · +2 −1", "3": "2 files · +0 −3"}
        await send(pilot, "/todos")
        await pilot.pause()
        printed = main_screen(app).conversation.entries[-1]
        assert isinstance(printed, PlainEntry)
        assert printed.text.splitlines()[:4] == [
            "☒ #1 Touch a",
            "    a.py  +2 −1",
            "    notes.txt  +2 −0 (created)",
            "☒ #2 Touch b",
        ]


async def test_enter_shows_one_tasks_diff_alone(project: Path) -> None:
    app = review_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await run_three(pilot)
        await focus_task(pilot, 1)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ChangesScreen))
        view = app.screen
        assert isinstance(view, ChangesScreen)
        assert view.diff == main_screen(app).runtime.changes.diff("2")
        text = str(view.query_one("#changes-diff Static", Static).render())
        assert "b/b.py" in text and "+TWO" in text and "a.py" not in text and "notes.txt" not in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is main_screen(app))


async def test_r_rewinds_a_task_and_the_next_request_tells_the_model(project: Path) -> None:
    app = review_app(project, [{"text": "Noted."}])
    async with app.run_test(size=SIZE) as pilot:
        await run_three(pilot)
        screen = main_screen(app)
        await focus_task(pilot, 2)
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen))
        choices = app.screen.query_one(SelectionList)
        assert sorted(choices.selected) == ["a.py", "old.txt"]  # nobody changed them since
        await pilot.press("y")
        await wait_until(pilot, (project / "old.txt").exists)
        await wait_settled(pilot)
        assert (project / "a.py").read_text() == "alpha\nBETA\nbeta2\ngamma\n"
        assert screen.runtime.store.get("3").status == "pending"  # type: ignore[union-attr]
        assert files_lines(app)["3"] == ""
        assert any(isinstance(e, NoticeEntry) and e.text.startswith("Rewound #3") for e in screen.conversation.entries)
        await send(pilot, "what now?")
        await turn_done(pilot)
        told = [m for m in screen.runtime.sessions.history if m["role"] == "user" and USER_EDITED in str(m["content"])]
        assert len(told) == 1 and 'rewound #3 "Again a": restored a.py, old.txt' in str(told[0]["content"])


async def test_a_conflict_is_shown_and_nothing_changes_without_confirmation(project: Path) -> None:
    app = review_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await run_three(pilot)
        await focus_task(pilot, 0)
        before = contents(project)
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen))
        dialog = app.screen
        assert list(dialog.query_one(SelectionList).selected) == ["notes.txt"]
        title = str(dialog.query_one("#rewind-diff-title", Static).render())
        assert title == "a.py: changed later by task #3; what changed since:"
        assert "-gamma" in str(dialog.query_one("#rewind-diff-text", Static).render())
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is main_screen(app))
        assert contents(project) == before
        assert main_screen(app).runtime.store.get("1").status == "completed"  # type: ignore[union-attr]
        # Confirmed per file: choosing the conflicting a.py too puts it back.
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen))
        await pilot.press("space")  # a.py, highlighted first
        await pilot.press("y")
        await wait_until(pilot, lambda: (project / "a.py").read_text() == A)
        assert not (project / "notes.txt").exists()


async def test_u_undoes_a_panel_edit_and_e_edits_a_subject(project: Path) -> None:
    app = review_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await run_three(pilot)
        screen = main_screen(app)
        store = screen.runtime.store
        await focus_task(pilot, 1)
        await pilot.press("space")
        await wait_until(pilot, lambda: store.get("2").status == "pending")  # type: ignore[union-attr]
        await pilot.press("u")
        await wait_until(pilot, lambda: store.get("2").status == "completed")  # type: ignore[union-attr]
        await wait_settled(pilot)
        assert store.versions()[-1].what == 'undid "marked #2 pending"'
        await pilot.press("e")
        await pilot.pause()
        add = screen.panel.query_one("#task-add")
        assert add.has_focus and add.value == "Touch b"  # type: ignore[attr-defined]
        await pilot.press(*" [b]", "enter")  # typed after the subject, not over it
        await wait_until(pilot, lambda: store.get("2").subject == "Touch b [b]")  # type: ignore[union-attr]
        await wait_settled(pilot)
        assert [t.subject for t in screen.panel.tasks] == ["Touch a", "Touch b [b]", "Again a"]
        await pilot.press("u")
        await wait_until(pilot, lambda: store.get("2").subject == "Touch b")  # type: ignore[union-attr]
        await send(pilot, "/todos history")
        await pilot.pause()
        history = screen.conversation.entries[-1]
        assert isinstance(history, PlainEntry)
        assert 'person  renamed #2 "Touch b" to "Touch b [b]"' in history.text
        assert 'person  undid "renamed #2' in history.text


async def test_untrusted_file_text_is_never_markup_in_the_diff(project: Path) -> None:
    script = [
        {"tool_calls": [tc("TaskCreate", subject="Hostile")]},
        {"tool_calls": [tc("TaskUpdate", taskId="1", status="in_progress")]},
        {"tool_calls": [tc("Write", file_path="[red]x[/].txt", content="[bold]no[/bold] \x1b[2J\n")]},
        {"text": "done"},
    ]
    app = make_app(project, script, permission_mode="bypassPermissions")
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await turn_done(pilot)
        await focus_task(pilot, 0)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ChangesScreen))
        text = str(app.screen.query_one("#changes-diff Static", Static).render())
        assert "+++ b/[red]x[/].txt" in text and "+[bold]no[/bold] ␛[2J" in text


async def test_after_continue_the_history_and_the_changes_are_still_there(project: Path) -> None:
    first = review_app(project)
    async with first.run_test(size=SIZE) as pilot:
        await run_three(pilot)
        lines = files_lines(first)
        versions = main_screen(first).runtime.plan.versions()
    first.runtime.session.close()  # type: ignore[union-attr]
    again = make_app(project, [], continue_latest=True)
    async with again.run_test(size=SIZE) as pilot:
        await wait_settled(pilot)
        assert files_lines(again) == lines
        assert main_screen(again).runtime.plan.versions() == versions
        await focus_task(pilot, 1)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(again.screen, ChangesScreen))
        assert "+TWO" in again.screen.diff  # type: ignore[attr-defined]


async def test_a_subject_over_the_limit_in_the_panel_is_refused_and_kept_to_shorten(project: Path) -> None:
    app = make_app(project, [])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        screen.focus_tasks()
        await pilot.pause()
        await pilot.press("a")
        add = screen.panel.query_one("#task-add", Input)
        long = "Refactor " + "x" * 200
        add.value = long
        await pilot.press("enter")
        await pilot.pause()
        assert add.display and add.has_focus and add.value == long  # still there, to shorten
        assert screen.runtime.store.snapshot() == ()
        assert any("at most 200 characters; this one is 209" in str(n.message) for n in app._notifications)
        add.value = long[:200]
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(screen.runtime.store.snapshot()) == 1)
        assert not add.display


async def test_v_sets_edits_and_removes_a_check_and_the_model_is_told(project: Path) -> None:
    app = review_app(project, [{"text": "Noted."}])
    async with app.run_test(size=SIZE) as pilot:
        await run_three(pilot)
        screen = main_screen(app)
        store = screen.runtime.store
        await focus_task(pilot, 1)
        await pilot.press("v")
        await pilot.pause()
        add = screen.panel.query_one("#task-add", Input)
        assert add.has_focus and add.value == ""
        await pilot.press(*"python -m pytest -q", "enter")
        await wait_until(pilot, lambda: store.get("2").verify == "python -m pytest -q")  # type: ignore[union-attr]
        await wait_settled(pilot)
        row = list(screen.panel.list_view.query_children(TaskItem))[1]
        assert str(row.query_one(".task-check", Static).render()) == "⚙ python -m pytest -q"
        await pilot.press("v")  # the input holds the check, to edit
        await pilot.pause()
        assert add.value == "python -m pytest -q"
        await pilot.press(*" tests", "enter")
        await wait_until(pilot, lambda: store.get("2").verify == "python -m pytest -q tests")  # type: ignore[union-attr]
        await send(pilot, "what now?")
        await turn_done(pilot)
        told = [m for m in screen.runtime.sessions.history if m["role"] == "user" and USER_EDITED in str(m["content"])]
        assert len(told) == 1 and "set #2's check to `python -m pytest -q tests`" in str(told[0]["content"])
        await focus_task(pilot, 1)
        await pilot.press("v")
        await pilot.pause()
        add.value = ""  # emptied: the check goes
        await pilot.press("enter")
        await wait_until(pilot, lambda: store.get("2").verify == "")  # type: ignore[union-attr]
        await pilot.press("u")
        await wait_until(pilot, lambda: store.get("2").verify == "python -m pytest -q tests")  # type: ignore[union-attr]


async def test_b_sets_raises_and_removes_a_budget_and_a_typo_changes_nothing(project: Path) -> None:
    app = review_app(project, [{"text": "Noted."}])
    async with app.run_test(size=SIZE) as pilot:
        await run_three(pilot)
        screen = main_screen(app)
        store = screen.runtime.store
        await focus_task(pilot, 1)
        await pilot.press("b")
        await pilot.pause()
        add = screen.panel.query_one("#task-add", Input)
        assert add.has_focus and add.value == ""
        await pilot.press(*"3 requests, 20k tokens", "enter")
        await wait_until(pilot, lambda: store.get("2").budget == Budget(3, 20_000))  # type: ignore[union-attr]
        await wait_settled(pilot)
        row = list(screen.panel.list_view.query_children(TaskItem))[1]
        assert str(row.query_one(".task-budget", Static).render()) == "budget 0/3 requests · 0/20k tokens"
        await pilot.press("b")  # the input holds the budget in words, to edit
        await pilot.pause()
        assert add.value == "3 requests, 20k tokens"
        add.value = "ten requests"
        await pilot.press("enter")
        await pilot.pause()
        assert store.get("2").budget == Budget(3, 20_000)  # type: ignore[union-attr]
        await focus_task(pilot, 1)
        await pilot.press("b")
        await pilot.pause()
        add.value = "50 requests"  # the person may raise it
        await pilot.press("enter")
        await wait_until(pilot, lambda: store.get("2").budget == Budget(50))  # type: ignore[union-attr]
        await send(pilot, "what now?")
        await turn_done(pilot)
        told = [m for m in screen.runtime.sessions.history if m["role"] == "user" and USER_EDITED in str(m["content"])]
        assert "set #2's budget to 50 requests" in str(told[-1]["content"])
        await focus_task(pilot, 1)
        await pilot.press("b")
        await pilot.pause()
        add.value = ""
        await pilot.press("enter")
        await wait_until(pilot, lambda: store.get("2").budget is None)  # type: ignore[union-attr]
