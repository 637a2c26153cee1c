"""Snapshots of the main screens (pytest-textual-snapshot; `--snapshot-update` rewrites them).

Deterministic by construction: fixed size, animations off (spinners frozen, no cursor
blink), fixed startup notices, token counts and clock, a copy of the bundled demo project.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from textual.pilot import Pilot
from tui_helpers import SIZE, answer_approval, main_screen, make_app, send, turn_done, wait_settled, wait_until

from todo_agent.core.agents import child
from todo_agent.core.engine import batch
from todo_agent.core.events import Notice
from todo_agent.core.face.plan import Plan
from todo_agent.core.face.turn import Turn
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.permissions.modes import ApprovalRequest
from todo_agent.core.runtime import Runtime
from todo_agent.core.session.directory import SessionInfo
from todo_agent.core.settings import Config
from todo_agent.core.tasks.model import CheckRun, Task
from todo_agent.core.window.breakdown import Breakdown, Part, Spend
from todo_agent.core.window.tokens import TokenCounter
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.screens.approval import ApprovalScreen
from todo_agent.tui.screens.changes import ChangesScreen
from todo_agent.tui.screens.sessions import SessionsScreen
from todo_agent.tui.screens.shells import ShellsScreen
from todo_agent.tui.transcript import PlainEntry
from todo_agent.tui.widgets.prompt import Suggestions
from todo_agent.tui.widgets.status import StatusLine
from todo_agent.tui.widgets.task_panel import TaskPanel

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SnapCompare = Callable[..., bool]

DIFF = """\
--- a/posts.py
+++ b/posts.py
@@ -1,2 +1,4 @@
-def list_posts(posts):
-    return posts
+def list_posts(posts, page=1, page_size=20):
+    \"\"\"Return one page of posts (pages start at 1).\"\"\"
+    start = (page - 1) * page_size
+    return posts[start : start + page_size]"""


FROZEN_NOW = 1_768_400_000.0


@pytest.fixture(autouse=True)
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin what changes from run to run: the date notice, token counts, the time zone, and
    the clocks that time tasks and tool calls (so a slow run shows the same `<1s`)."""
    notices = [Notice("instructions loaded: AGENTS.md"), Notice("date 2026-01-15")]
    monkeypatch.setattr(Runtime, "startup_notices", lambda self: list(notices))
    # Token counts are estimates that move with every schema and prompt change: the status
    # line draws fixed ones, whether they come from an event or from the runtime.
    set_context = StatusLine.set_context
    monkeypatch.setattr(StatusLine, "set_context", lambda self, used, window: set_context(self, 12_345, 128_000))
    monkeypatch.setattr(TaskPanel, "clock", staticmethod(lambda: FROZEN_NOW))
    # Tool run times: a check that takes a second on a loaded machine would add "· 1.0s".
    monkeypatch.setattr(batch, "time", SimpleNamespace(monotonic=lambda: FROZEN_NOW))
    monkeypatch.setattr(child, "time", SimpleNamespace(monotonic=lambda: FROZEN_NOW, time=lambda: FROZEN_NOW))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    # The plan's cost is counted from the prompt, whose system message holds the temporary path.
    monkeypatch.setattr(Plan, "spend", lambda self: Spend(48_210, 1_012, 7))


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    project = tmp_path / "demo_project"
    shutil.copytree(EXAMPLES / "demo_project", project, ignore=shutil.ignore_patterns("__pycache__"))
    for path in project.iterdir():  # Glob orders by mtime; a checkout's mtimes are arbitrary
        os.utime(path, (1_700_000_000, 1_700_000_000))
    script = json.loads((EXAMPLES / "demo_script.json").read_text(encoding="utf-8"))
    return project, script


def demo_app(demo: tuple[Path, dict[str, Any]], *, idle: bool = False, **config: Any) -> TodoAgentApp:
    """The demo project on the demo script. `idle`: the picture is taken before any prompt,
    so the model has no steps (every script is played to its end, `tests/conftest.py`)."""
    project, script = demo
    steps, agents = ([], []) if idle else (script["steps"], script["agents"])
    model = ScriptedModel.from_data({"steps": steps, "agents": agents}, label="script:demo_script.json")
    app = make_app(project, model, **config)
    assert app.runtime is not None
    app.runtime.store.clock = lambda: FROZEN_NOW
    return app


async def run_demo_until_bash_approval(pilot: Pilot[Any], prompt: str) -> None:
    app = pilot.app
    await send(pilot, prompt)
    for tool in ("Write", "Edit"):  # the README sub-agent's Write, then the main agent's Edit
        await answer_approval(pilot, tool, "1")
    await wait_until(
        pilot,
        lambda: isinstance(app.screen, ApprovalScreen) and app.screen.request.tool == "Bash" and app.answers_now("1"),  # type: ignore[attr-defined]
    )
    # The approval can open before the screen below has drawn the batch before it: wait
    # for the Bash call's own line (it comes last) and for every event to be drawn.
    block = main_screen(app).conversation.last_tool_block  # type: ignore[arg-type]
    await wait_until(pilot, lambda: (found := block()) is not None and found.entry.name == "Bash" and found.waiting)
    await wait_settled(pilot)


def test_welcome(snap_compare: SnapCompare, workspace: Path) -> None:
    app = TodoAgentApp.for_config(Config(workspace=workspace), animations=False)
    assert snap_compare(app, terminal_size=SIZE)


def test_empty_session(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    assert snap_compare(demo_app(demo, idle=True), terminal_size=SIZE)


@pytest.mark.script_may_end_early("the picture is the plan stopped at its Bash approval")
def test_bash_approval_mid_plan(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await run_demo_until_bash_approval(pilot, demo[1]["prompt"])

    assert snap_compare(demo_app(demo), terminal_size=SIZE, run_before=run_before)


def test_demo_finished(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await run_demo_until_bash_approval(pilot, demo[1]["prompt"])
        await pilot.press("1")
        await turn_done(pilot)
        await wait_settled(pilot)
        await send(pilot, "/todos")
        conversation = main_screen(pilot.app).conversation  # type: ignore[arg-type]
        await wait_until(pilot, lambda: isinstance(conversation.entries[-1], PlainEntry))
        await pilot.pause()

    assert snap_compare(demo_app(demo), terminal_size=SIZE, run_before=run_before)


CONTEXT = Breakdown(
    (
        Part("system", 812),
        Part("instructions", 240),
        Part("tools", 3_301),
        Part("mcp:git", 1_460),
        Part("plan", 1_118),
        Part("attachments", 2_050),
        Part("conversation", 6_930),
    ),
    window=32_768,
    trigger=26_214,
    measured=True,
)


def test_context_after_the_demo(
    snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`/context`: the bar and the table (the figures fixed here: they come from a prompt that
    holds the temporary path; `tests/test_context.py` checks real ones against a server)."""
    monkeypatch.setattr(Turn, "context_breakdown", lambda self: CONTEXT)

    async def run_before(pilot: Pilot[Any]) -> None:
        await finish_demo(pilot, demo[1]["prompt"])
        await send(pilot, "/context")
        conversation = main_screen(pilot.app).conversation  # type: ignore[arg-type]
        await wait_until(pilot, lambda: isinstance(conversation.entries[-1], PlainEntry))
        await pilot.pause()

    assert snap_compare(demo_app(demo), terminal_size=SIZE, run_before=run_before)


def test_background_commands(
    snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`/shells` with one command running (its output open) and one that ended."""
    from todo_agent.core.tools import shells

    monkeypatch.setattr(shells, "time", SimpleNamespace(time=lambda: FROZEN_NOW))
    serve = 'echo "Serving HTTP on 0.0.0.0 port 8000"; echo "GET / HTTP/1.1 200"; sleep 300'
    steps = [
        {"tool_calls": [{"name": "Bash", "arguments": {"command": serve, "run_in_background": True}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo built; exit 2", "run_in_background": True}}]},
        "Both started.",
    ]
    app = make_app(demo[0], steps, permission_mode="bypassPermissions")

    async def run_before(pilot: Pilot[Any]) -> None:
        await send(pilot, "serve and build")
        await turn_done(pilot)
        found = main_screen(pilot.app).runtime.shells.shells  # type: ignore[arg-type]
        await wait_until(pilot, lambda: found["bash_1"].total >= 53 and not found["bash_2"].running)
        await send(pilot, "/shells")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ShellsScreen))
        await pilot.press("enter")
        await wait_until(pilot, lambda: pilot.app.screen.shown == "bash_1")  # type: ignore[attr-defined]
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_edit_approval_with_diff(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    request = ApprovalRequest(
        tool="Edit",
        arguments={"file_path": "posts.py"},
        summary="posts.py",
        preview=DIFF,
        preview_kind="diff",
        outside_workspace=False,
        suggested_rule="Edit(posts.py)",
        reason="Edit needs approval in default mode",
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        pilot.app.push_screen(ApprovalScreen(request))
        await pilot.pause()

    assert snap_compare(demo_app(demo, idle=True), terminal_size=SIZE, run_before=run_before)


def test_edit_approval_with_a_long_diff_at_80x24(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    """The choices and the rule stay visible; the diff shrinks, scrolls and says so."""
    added = "\n".join(f"+    page_{i} = {i}  # one of many new lines" for i in range(40))
    request = ApprovalRequest(
        tool="Edit",
        arguments={"file_path": "posts.py"},
        summary="posts.py",
        preview=DIFF + "\n" + added,
        preview_kind="diff",
        outside_workspace=False,
        suggested_rule="Edit(posts.py)",
        reason="Edit needs approval in default mode",
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = ApprovalScreen(request)
        pilot.app.push_screen(screen)

        await wait_until(pilot, lambda: pilot.app.screen is screen and screen.fitted)
        await pilot.pause()

    assert snap_compare(demo_app(demo, idle=True), terminal_size=(80, 24), run_before=run_before)


def test_feedback_box_outside_workspace(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    request = ApprovalRequest(
        tool="Write",
        arguments={"file_path": "/etc/motd"},
        summary="/etc/motd",
        preview="--- /etc/motd\n+++ /etc/motd\n@@ -0,0 +1 @@\n+hello",
        preview_kind="diff",
        outside_workspace=True,
        suggested_rule="Write(/etc/**)",
        reason="the path is outside the workspace",
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        pilot.app.push_screen(ApprovalScreen(request, queued=1))
        await pilot.pause()
        await pilot.press("f", *"write it to ./motd instead")

    assert snap_compare(demo_app(demo, idle=True), terminal_size=SIZE, run_before=run_before)


def test_panel_at_the_bottom_with_blocked_task(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    tasks = (
        Task("1", "Read the posts module", status="completed", tool_calls=2, started_at=0, progress_seconds=0.4),
        Task(
            "2",
            "Add page/page_size",
            activeForm="Adding pagination",
            status="in_progress",
            tool_calls=3,
            started_at=FROZEN_NOW - 72,
            progress_since=FROZEN_NOW - 72,
        ),
        Task("3", "Run the checks", blockedBy=("2",)),
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = main_screen(pilot.app)  # type: ignore[arg-type]
        screen.place_panel("bottom")
        await screen.panel.show(tasks)  # synthetic stats; `show_tasks` draws the store
        await pilot.pause()

    assert snap_compare(demo_app(demo, idle=True), terminal_size=SIZE, run_before=run_before)


def test_panel_marks_verified_unverified_and_failing_checks(
    snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]
) -> None:
    """☑ completed by its passing check, ☒ completed without one, a failing check in red
    (its exit first, so the narrow panel keeps it), a check that never ran."""
    check = "python -m pytest -q tests/test_api.py"
    passed = CheckRun(FROZEN_NOW - 30, 0, 2.1, "3 passed", check)
    failed = CheckRun(FROZEN_NOW - 5, 1, 1.2, "FAILED tests/test_api.py::test_page", check)
    tasks = (
        Task(
            "1", "Add page/page_size", status="completed", verify=check, verified_at=FROZEN_NOW - 30, checks=(passed,)
        ),
        Task("2", "Update the docs", status="completed"),
        Task(
            "3",
            "Fix the empty page",
            activeForm="Fixing the empty page",
            status="in_progress",
            started_at=FROZEN_NOW - 40,
            progress_since=FROZEN_NOW - 40,
            verify=check,
            checks=(failed,),
        ),
        Task("4", "Lint", verify="ruff check ."),
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = main_screen(pilot.app)  # type: ignore[arg-type]
        await screen.panel.show(tasks)
        await pilot.pause()

    assert snap_compare(demo_app(demo, idle=True), terminal_size=SIZE, run_before=run_before)


def test_help_and_slash_suggestions(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await send(pilot, "/help")
        await pilot.press("/", "m")
        await pilot.pause()

    assert snap_compare(demo_app(demo, idle=True), terminal_size=SIZE, run_before=run_before)


def test_at_completion(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    """`@po`: the demo project's files that match, the matched letters in bold."""

    async def run_before(pilot: Pilot[Any]) -> None:
        main_screen(pilot.app).runtime.file_index.build_now()  # type: ignore[arg-type]
        main_screen(pilot.app).query_one("#prompt").focus()  # type: ignore[arg-type]
        await pilot.press(*"explain @po")
        suggestions = main_screen(pilot.app).query_one(Suggestions)  # type: ignore[arg-type]
        await wait_until(pilot, lambda: suggestions.word is not None and suggestions.word.query == "po")
        await pilot.pause()

    assert snap_compare(demo_app(demo, idle=True), terminal_size=SIZE, run_before=run_before)


def test_custom_command_in_help(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    project, _ = demo
    commands = project / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review a file for bugs\nargument-hint: [file]\n---\nx\n")

    async def run_before(pilot: Pilot[Any]) -> None:
        await send(pilot, "/help")
        await pilot.press("/", "r")
        await pilot.pause()

    assert snap_compare(demo_app(demo, idle=True), terminal_size=SIZE, run_before=run_before)


def test_session_picker(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    base = 1_768_400_000.0
    sessions = [
        SessionInfo("20260114-101500-ab12", "Add pagination to list_posts", base, 48_213, Path("a.jsonl")),
        SessionInfo("20260113-090000-cd34", "Fix the flaky test in test_posts.py", base - 86_400, 812, Path("b.jsonl")),
    ]

    async def run_before(pilot: Pilot[Any]) -> None:
        pilot.app.push_screen(SessionsScreen(sessions))
        await pilot.pause()

    assert snap_compare(demo_app(demo, idle=True), terminal_size=SIZE, run_before=run_before)


def test_compact_notice(snap_compare: SnapCompare, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Token counts that do not depend on the temporary path inside the system prompt.
    monkeypatch.setattr(TokenCounter, "prompt_tokens", lambda self, messages, tools=(): 1000 * len(messages))
    monkeypatch.setattr(TokenCounter, "estimate", lambda self, messages, tools=(): 1000 * len(messages))
    answer = "Added `--verbose` to cli.py; it sets the log level to DEBUG. " * 8
    summary = "## Goal\nAdd a --verbose flag to cli.py and document it.\n## Remaining\nDocument the flag."
    app = make_app(workspace, [answer, "Documented it in README.md.", summary])

    async def run_before(pilot: Pilot[Any]) -> None:
        await send(pilot, "add a --verbose flag to cli.py")
        await turn_done(pilot)
        await send(pilot, "and document it in the README")
        await turn_done(pilot)
        await send(pilot, "/compact keep the flag's name")
        await wait_until(pilot, lambda: "compacted" in main_screen(pilot.app).conversation.entries[-1].text)  # type: ignore[arg-type, union-attr]
        await turn_done(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def finish_demo(pilot: Pilot[Any], prompt: str) -> None:
    await run_demo_until_bash_approval(pilot, prompt)
    await pilot.press("1")
    await turn_done(pilot)
    await wait_settled(pilot)


def test_panel_shows_what_each_task_changed(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    """The demo finished, the panel focused on task #2: its `1 file · +N −M` line."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await finish_demo(pilot, demo[1]["prompt"])
        screen = main_screen(pilot.app)  # type: ignore[arg-type]
        screen.focus_tasks()
        screen.panel.list_view.index = 1
        await wait_settled(pilot)

    assert snap_compare(demo_app(demo), terminal_size=SIZE, run_before=run_before)


def test_one_tasks_diff(snap_compare: SnapCompare, demo: tuple[Path, dict[str, Any]]) -> None:
    """`enter` on task #2 of the finished demo: its diff alone, coloured like an approval's."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await finish_demo(pilot, demo[1]["prompt"])
        screen = main_screen(pilot.app)  # type: ignore[arg-type]
        screen.focus_tasks()
        screen.panel.list_view.index = 1
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ChangesScreen))
        await pilot.pause()

    assert snap_compare(demo_app(demo), terminal_size=SIZE, run_before=run_before)


THOUGHT = (
    "The user wants pagination in list_posts. I should read posts.py first to see the current "
    "signature, then add page and page_size with sane defaults. [bold]not markup[/bold]\n\nThen the tests.\n"
)


@pytest.mark.parametrize("opened", [False, True], ids=["folded", "open"])
def test_a_thought_folded_and_open(
    snap_compare: SnapCompare, workspace: Path, monkeypatch: pytest.MonkeyPatch, opened: bool
) -> None:
    from todo_agent.tui import handler

    monkeypatch.setattr(handler, "time", SimpleNamespace(monotonic=lambda: FROZEN_NOW))  # "Thought for 1 s"
    app = make_app(workspace, [{"reasoning": THOUGHT, "text": "Here is the plan: read `posts.py`, then edit it."}])

    async def run_before(pilot: Pilot[Any]) -> None:
        await send(pilot, "add pagination")
        await turn_done(pilot)
        if opened:
            await pilot.press("ctrl+o")
        await wait_settled(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_rewind_to_a_prompt(snap_compare: SnapCompare, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`/rewind` after three prompts: newest first, each with what came after it."""
    from todo_agent.core.changes import checkpoint

    monkeypatch.setattr(checkpoint, "time", SimpleNamespace(time=lambda: FROZEN_NOW))
    steps = [
        {"tool_calls": [{"name": "Write", "arguments": {"file_path": "app.py", "content": "print(1)\n"}}]},
        "Made app.py.",
        {"tool_calls": [{"name": "TaskCreate", "arguments": {"subject": "Add tests"}}]},
        {"tool_calls": [{"name": "Write", "arguments": {"file_path": "test_app.py", "content": "def test(): ...\n"}}]},
        "Added a test.",
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "rm test_app.py"}}]},
        "Removed it.",
    ]
    app = make_app(workspace, steps, permission_mode="bypassPermissions")
    assert app.runtime is not None
    app.runtime.store.clock = lambda: FROZEN_NOW

    async def run_before(pilot: Pilot[Any]) -> None:
        for prompt in ("make app.py", "add a test for it", "remove the test again"):
            await send(pilot, prompt)
            await turn_done(pilot)
        await send(pilot, "/rewind")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "PromptsScreen")
        await pilot.press("down", "enter")
        await wait_settled(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
