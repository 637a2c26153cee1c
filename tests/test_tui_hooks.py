"""Hooks in the TUI: notices for hooks that block or fail, the project-hook trust prompt,
SessionStart before the first prompt, a blocked prompt given back."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_tui_handler import run
from textual.pilot import Pilot
from tui_helpers import SIZE, bash_step, main_screen, make_app, screen_text, send, trust_question, turn_done, wait_until

from todo_agent.core.events import HookResult, Notice
from todo_agent.core.face.turn import Turn
from todo_agent.core.hooks.spec import HookSpec
from todo_agent.core.hooks.trust import trust_path
from todo_agent.core.mcp.config import ServerSpec
from todo_agent.core.runtime import Runtime
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.screens import trust
from todo_agent.tui.screens.hook_trust import HookTrustScreen
from todo_agent.tui.screens.mcp_trust import McpTrustScreen
from todo_agent.tui.transcript import NoticeEntry
from todo_agent.tui.widgets.prompt import PromptInput


def notices(app: TodoAgentApp) -> list[str]:
    return [e.text for e in main_screen(app).conversation.entries if isinstance(e, NoticeEntry)]


async def test_handler_shows_hooks_that_block_or_fail_and_nothing_for_the_rest() -> None:
    blocked = HookResult("PreToolUse", "./guard.sh", "blocked", 2, "no pushes")
    failed = HookResult("PostToolUse", "ruff format", "failed", 1, "ruff: command not found")
    timed_out = HookResult("Stop", "./slow.sh", "timeout", None, "timed out after 5 s; it was killed")
    fine = HookResult("PreToolUse", "./guard.sh", "ok", 0)
    assert await run(blocked, failed, timed_out, fine) == [
        ("entry", NoticeEntry("PreToolUse hook blocked: ./guard.sh (exit 2): no pushes", "warning")),
        ("entry", NoticeEntry("PostToolUse hook failed: ruff format (exit 1): ruff: command not found", "warning")),
        ("entry", NoticeEntry("Stop hook timed out: ./slow.sh: timed out after 5 s; it was killed", "warning")),
    ]


async def test_a_blocked_tool_call_shows_the_hooks_notice(workspace: Path) -> None:
    hook = HookSpec("PreToolUse", "echo 'git push is blocked here' >&2; exit 2", matcher="Bash")
    app = make_app(workspace, [bash_step("git push"), {"text": "ok, not pushing"}], hooks=[hook])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "push")
        await turn_done(pilot)
        assert (
            "PreToolUse hook blocked: echo 'git push is blocked here' >&2; exit 2 (exit 2): git push is blocked here"
            in notices(app)
        )
        text = screen_text(app)
        assert "PreToolUse hook blocked" in text and "ok, not pushing" in text


async def test_a_blocked_prompt_goes_back_into_the_prompt_box(workspace: Path) -> None:
    hook = HookSpec("UserPromptSubmit", "echo 'mention a ticket number' >&2; exit 2")
    app = make_app(workspace, [], hooks=[hook])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "fix the login bug")
        await turn_done(pilot)
        screen = main_screen(app)
        prompt = screen.query_one(PromptInput)
        assert prompt.text == "fix the login bug" and prompt.cursor_location == (0, len("fix the login bug"))
        assert "prompt not sent: a UserPromptSubmit hook blocked it: mention a ticket number" in notices(app)
        assert "prompt not sent" in screen_text(app)
        assert app.runtime is not None and app.runtime.sessions.history == []


async def test_session_start_runs_before_the_first_prompt_and_its_failure_shows(workspace: Path) -> None:
    hooks = [
        HookSpec("SessionStart", "echo 'on branch main'"),
        HookSpec("SessionStart", "echo 'git: not a repository' >&2; exit 1"),
    ]
    app = make_app(workspace, [{"text": "hello"}], hooks=hooks)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: any("SessionStart hook failed" in n for n in notices(app)))
        await send(pilot, "hi")
        await turn_done(pilot)
        assert app.runtime is not None
        assert "on branch main" in str(app.runtime.sessions.history[1]["content"])


async def test_untrusted_project_hooks_are_listed_and_run_only_after_yes(workspace: Path) -> None:
    hooks = [
        HookSpec("UserPromptSubmit", "echo project-context", source="project"),
        HookSpec("PreToolUse", "./check.sh", matcher="Bash", source="project"),
    ]
    app = make_app(workspace, [{"text": "one"}], hooks=hooks)
    async with app.run_test(size=SIZE) as pilot:
        await trust_question(pilot, HookTrustScreen)
        await wait_until(pilot, lambda: "Run this project's hooks?" in screen_text(app))
        text = screen_text(app)
        assert "UserPromptSubmit  echo project-context" in text and "PreToolUse [Bash]  ./check.sh" in text
        await pilot.press("y")
        await wait_until(pilot, lambda: not isinstance(app.screen, HookTrustScreen))
        await send(pilot, "hi")
        await turn_done(pilot)
        assert app.runtime is not None
        assert "project-context" in str(app.runtime.sessions.history[1]["content"])
        assert str(workspace) in json.loads(trust_path().read_text())
    # Accepted once: the next start does not ask.
    again = make_app(workspace, [], hooks=hooks)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not isinstance(again.screen, HookTrustScreen)


async def test_declined_project_hooks_do_not_run_and_are_asked_again(workspace: Path) -> None:
    hooks = [HookSpec("UserPromptSubmit", "echo project-context", source="project")]
    app = make_app(workspace, [{"text": "one"}], hooks=hooks)
    async with app.run_test(size=SIZE) as pilot:
        await trust_question(pilot, HookTrustScreen)
        await pilot.press("n")
        await wait_until(pilot, lambda: any("project hooks not run this session" in n for n in notices(app)))
        await send(pilot, "hi")
        await turn_done(pilot)
        assert app.runtime is not None and len(app.runtime.sessions.history) == 2  # the prompt and the answer only
    assert not trust_path().exists()
    again = make_app(workspace, [], hooks=hooks)
    async with again.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(again.screen, HookTrustScreen))


def test_trust_prompt_snapshot(snap_compare: Callable[..., bool], workspace: Path, monkeypatch: Any) -> None:
    """What the person sees before a cloned repository's hooks may run."""
    monkeypatch.setattr(Runtime, "startup_notices", lambda self: [Notice("date 2026-01-15")])
    monkeypatch.setattr(Turn, "context_usage", lambda self: (0, 128_000))
    hooks = [
        HookSpec("PreToolUse", "jq -r .tool_input.command | grep -q 'git push' && exit 2; exit 0", "Bash"),
        HookSpec("PostToolUse", 'ruff format --quiet "$(jq -r .tool_input.file_path)"', "Edit|Write"),
        HookSpec("TaskCompleted", "python -m pytest -q -x >&2 || exit 2"),
        HookSpec("SessionStart", "git status --short"),
    ]

    async def run_before(pilot: Pilot[Any]) -> None:
        pilot.app.push_screen(HookTrustScreen(hooks, Path("/home/you/shop/.todo-agent/settings.toml")))
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, HookTrustScreen))
        await pilot.pause()

    assert snap_compare(make_app(workspace, []), terminal_size=SIZE, run_before=run_before)


HIDDEN = [
    HookSpec("PreToolUse", "echo two\x1b]0; true;touch X\x07", "Bash", source="project"),
    HookSpec("SessionStart", "echo one" + "\n" * 61 + "touch Y", source="project"),
]
"""Commands a cloned repository could bring: the first sets the window title to hide its
tail, the second pushes its tail sixty blank lines down."""


async def test_the_trust_prompt_shows_every_byte_that_will_run(workspace: Path) -> None:
    app = make_app(workspace, [], hooks=HIDDEN)
    async with app.run_test(size=SIZE) as pilot:
        await trust_question(pilot, HookTrustScreen)
        await wait_until(pilot, lambda: "Run this project's hooks?" in screen_text(app))
        text = screen_text(app)
        assert "PreToolUse [Bash]  echo two␛]0; true;touch X␇" in text
        assert "SessionStart  echo one" in text and "⋯ 60 blank lines" in text and "touch Y" in text
        assert "holds control or invisible characters" in text
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, HookTrustScreen))
    assert not (workspace / "X").exists() and not (workspace / "Y").exists()


def test_trust_prompt_with_hidden_commands_snapshot(
    snap_compare: Callable[..., bool], workspace: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(Runtime, "startup_notices", lambda self: [Notice("date 2026-01-15")])
    monkeypatch.setattr(Turn, "context_usage", lambda self: (0, 128_000))

    async def run_before(pilot: Pilot[Any]) -> None:
        pilot.app.push_screen(HookTrustScreen(HIDDEN, Path("/home/you/cloned/.todo-agent/settings.toml")))
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, HookTrustScreen))
        await pilot.pause()

    assert snap_compare(make_app(workspace, []), terminal_size=SIZE, run_before=run_before)


async def test_keys_typed_as_the_hook_question_appears_do_not_answer_it(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `y` typed for the prompt as the question opens must not run a repository's hooks."""
    monkeypatch.setattr(trust, "TYPING_GRACE", 600.0)  # "right after it appeared", however slow the machine
    app = make_app(workspace, [], hooks=HIDDEN)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, HookTrustScreen) and app.screen.shown_at < math.inf)
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, HookTrustScreen)
        await trust_question(pilot, HookTrustScreen)
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, HookTrustScreen))
    assert not trust_path().exists()


async def test_the_mcp_trust_question_shows_every_byte_a_server_would_run(workspace: Path) -> None:
    """As for hooks: an argument that sets the window title (and hides what follows it in the
    title) or pushes the rest of the command sixty lines down is shown whole."""
    spec = ServerSpec(
        "docs", "mcp.json", ".mcp.json", "stdio", command="sh",
        args=("-c", "echo ok\x1b]0; true;touch X\x07" + "\n" * 61 + "touch Y"),
    )  # fmt: skip
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(McpTrustScreen([spec]))
        await trust_question(pilot, McpTrustScreen)
        text = screen_text(app)
        assert "echo ok␛]0; true;touch X␇" in text and "⋯ 60 blank lines" in text and "touch Y" in text
        assert "hold control or invisible characters" in text
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, McpTrustScreen))
