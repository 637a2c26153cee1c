"""Start-up: the model client is built beside the UI, and a prompt sent before it is ready says so."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest
from textual.widgets import Static
from tui_helpers import SIZE, main_screen, make_app, make_config, screen_text, send, turn_done, wait_until

from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.approvals import ApprovalBroker
from todo_agent.tui.screens.main import MainScreen
from todo_agent.tui.screens.starting import StartScreen


async def test_a_prompt_sent_before_the_client_is_ready_says_connecting(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ready = threading.Event()
    started = threading.Event()

    def slow_warm_up(self: Runtime) -> None:  # `import openai` on a slow machine
        started.set()
        ready.wait(10)

    monkeypatch.setattr(Runtime, "warm_up", slow_warm_up)
    app = make_app(workspace, ["hello back"])
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await wait_until(pilot, started.is_set)
        await send(pilot, "hello")
        activity = screen.status.query_one("#status-activity", Static)
        await wait_until(pilot, lambda: str(activity.render()).startswith("connecting…"))
        assert "hello back" not in screen_text(app)
        ready.set()
        await turn_done(pilot)
        assert "hello back" in screen_text(app)


async def test_the_client_is_built_once_the_first_frame_is_out(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[bool] = []
    app = make_app(workspace, [])

    def warm_up(self: Runtime) -> None:
        calls.append(app.screen is main_screen(app) and main_screen(app).conversation.size.height > 0)

    monkeypatch.setattr(Runtime, "warm_up", warm_up)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(calls))
        assert calls == [True]  # after the main screen was laid out, and only once


def starting_app(workspace: Path, release: threading.Event, built: list[Runtime], answers: list[str]) -> TodoAgentApp:
    """What `todo-agent` runs: the start screen first, the runtime built in a thread once
    `release` is set."""

    def create(config: Config, broker: ApprovalBroker) -> Runtime:
        release.wait(60)
        runtime = Runtime.create(config, approver=broker.approve, model=ScriptedModel.from_data(answers))
        built.append(runtime)
        return runtime

    return TodoAgentApp.starting(make_config(workspace), create=create, animations=False)


async def test_with_nothing_waiting_the_client_is_built_after_the_main_screens_first_frame(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`import openai` in the start-up thread would share the interpreter with drawing the
    main screen (a resumed conversation) and delay it; nobody waits for the model yet."""
    calls: list[tuple[str, bool]] = []
    release, built = threading.Event(), []
    app = starting_app(workspace, release, built, [])

    def warm_up(self: Runtime) -> None:
        screen = app.screen
        drawn = isinstance(screen, MainScreen) and screen.conversation.size.height > 0
        calls.append((threading.current_thread().name, drawn))

    monkeypatch.setattr(Runtime, "warm_up", warm_up)
    try:
        async with app.run_test(size=SIZE) as pilot:
            release.set()
            await wait_until(pilot, lambda: bool(calls))
            await app.workers.wait_for_complete()
            assert [drawn for _, drawn in calls] == [True]  # once, by the main screen, after its first frame
            assert "todo-agent-start" not in [thread for thread, _ in calls]
    finally:
        release.set()
        for runtime in built:
            runtime.close()


async def test_a_prompt_sent_on_the_start_screen_builds_the_client_at_once(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    release, built = threading.Event(), []
    monkeypatch.setattr(Runtime, "warm_up", lambda self: threads.append(threading.current_thread().name))
    app = starting_app(workspace, release, built, ["hello back"])
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, StartScreen))
            await pilot.press(*"hello", "enter")
            await wait_until(pilot, lambda: "› hello" in screen_text(app))
            release.set()
            await wait_until(pilot, lambda: bool(threads))
            assert threads[0] == "todo-agent-start"  # not after the main screen: the prompt waits for it
            await turn_done(pilot)
            await wait_until(pilot, lambda: "hello back" in screen_text(app))
    finally:
        release.set()
        for runtime in built:
            runtime.close()


async def test_what_start_up_loaded_is_kept_out_of_the_collectors_way(workspace: Path) -> None:
    gc.unfreeze()
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert gc.get_freeze_count() > 10_000  # Textual, the app, the model client: not walked by every full collection
    gc.unfreeze()
