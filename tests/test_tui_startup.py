"""Start-up: the model client is built beside the UI, and a prompt sent before it is ready says so."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest
from textual.widgets import Static
from tui_helpers import SIZE, main_screen, make_app, screen_text, send, turn_done, wait_until

from todo_agent.core.runtime import Runtime


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


async def test_what_start_up_loaded_is_kept_out_of_the_collectors_way(workspace: Path) -> None:
    gc.unfreeze()
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert gc.get_freeze_count() > 10_000  # Textual, the app, the model client: not walked by every full collection
    gc.unfreeze()
