"""The first frame comes before the agent core: a prompt that takes keys at once.

`TodoAgentApp.starting` (what `todo-agent` runs) draws `StartScreen` and builds the
`Runtime` in a thread; what is typed meanwhile is kept, and what is sent is sent once
the runtime is ready.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from textual.widgets import Static
from tui_helpers import SIZE, main_screen, make_config, screen_text, turn_done, wait_until

from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.runtime import Runtime
from todo_agent.core.session.directory import SessionError
from todo_agent.core.settings import Config
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.approvals import ApprovalBroker
from todo_agent.tui.screens.starting import StartScreen
from todo_agent.tui.widgets.prompt import PromptInput


@contextmanager
def held_start(workspace: Path, steps: list[Any]) -> Iterator[tuple[TodoAgentApp, threading.Event]]:
    """The app as `todo-agent` starts it, whose runtime (on a scripted model) is built only
    once the event is set: the core still importing, on a slow machine."""
    release = threading.Event()
    built: list[Runtime] = []

    def create(config: Config, broker: ApprovalBroker) -> Runtime:
        release.wait(60)
        runtime = Runtime.create(config, approver=broker.approve, model=ScriptedModel.from_data(steps))
        built.append(runtime)
        return runtime

    try:
        yield TodoAgentApp.starting(make_config(workspace), create=create, animations=False), release
    finally:
        release.set()
        for runtime in built:
            runtime.close()


async def test_the_first_frame_takes_keys_before_the_runtime_and_sends_them_after(workspace: Path) -> None:
    with held_start(workspace, ["hello back"]) as (app, release):
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, StartScreen))
            start = app.screen
            activity = start.query_one("#status-activity", Static)
            await wait_until(pilot, lambda: str(activity.render()).startswith("starting…"))
            await pilot.press(*"hello", "enter", *"more")
            await wait_until(pilot, lambda: "› hello" in screen_text(app))
            assert app.runtime is None and start.query_one(PromptInput).text == "more"
            release.set()
            await wait_until(pilot, lambda: app.runtime is not None and main_screen(app).is_current)
            await turn_done(pilot)
            screen = main_screen(app)
            await wait_until(pilot, lambda: "hello back" in screen_text(app))
            assert screen.query_one(PromptInput).text == "more"  # the draft, not sent
            assert [m["content"] for m in screen.runtime.sessions.history if m["role"] == "user"] == ["hello"]


async def test_the_first_frame_shows_the_keys_that_work_and_shift_tab_is_one(workspace: Path) -> None:
    with held_start(workspace, []) as (app, release):
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, StartScreen))
            start = app.screen
            mode = start.query_one("#status-mode", Static)
            await wait_until(pilot, lambda: str(mode.render()) == "default (shift+tab)")
            await wait_until(pilot, lambda: "Quit" in screen_text(app).splitlines()[-1])  # the footer, once drawn
            footer = screen_text(app).splitlines()[-1]
            assert "shift+tab Mode" in footer and "^q Quit" in footer
            assert "Interrupt" not in footer and "Tasks" not in footer  # keys of the main screen, not here
            await pilot.press("shift+tab", "shift+tab")  # from the prompt, as on the main screen
            await wait_until(pilot, lambda: str(mode.render()) == "plan (shift+tab)")
            assert app.runtime is None
            release.set()
            await wait_until(pilot, lambda: app.runtime is not None and main_screen(app).is_current)
            screen = main_screen(app)
            assert screen.runtime.mode == "plan"  # the mode chosen while starting
            await wait_until(
                pilot, lambda: str(screen.status.query_one("#status-mode", Static).render()).startswith("plan")
            )
            await pilot.press("shift+tab")
            await wait_until(pilot, lambda: screen.runtime.mode == "default")  # the same cycle goes on


async def test_an_error_building_the_runtime_ends_the_app_and_is_kept(workspace: Path) -> None:
    def create(config: Config, broker: ApprovalBroker) -> Runtime:
        raise SessionError("session abc is in use by another todo-agent")

    app = TodoAgentApp.starting(make_config(workspace), create=create, animations=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.starter is not None and app.starter.error is not None)
        await wait_until(pilot, lambda: app.return_code == 2)
    assert app.return_code == 2
    assert app.starter is not None and isinstance(app.starter.error, SessionError)


CHILD = r"""
import json, sys, tempfile
from pathlib import Path
from todo_agent.core.settings import Config
from todo_agent.tui.app import TodoAgentApp

workspace = Path(tempfile.mkdtemp())
script = workspace / "s.json"
script.write_text('{"steps": []}')
app = TodoAgentApp.starting(Config(workspace=workspace, model=f"script:{script}"))
seen = {}

def first_frame() -> None:
    seen["modules"] = sorted(m for m in sys.modules if m.startswith(("todo_agent", "openai")))
    seen["screen"] = type(app.screen).__name__
    seen["prompt"] = app.screen.query_one("#prompt").has_focus

app.call_after_refresh(first_frame)
app.call_after_refresh(lambda: app.call_later(app.exit))
app.run(headless=True, size=(120, 36))
app.starter.join()
if app.starter.runtime is not None:
    app.starter.runtime.close()
print(json.dumps(seen))
"""


def test_the_first_frame_is_drawn_before_the_agent_core_is_imported(tmp_path: Path) -> None:
    env_home = {"TODO_AGENT_HOME": str(tmp_path / "home")}
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=120, env=env_home | _env()
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["screen"] == "StartScreen" and seen["prompt"]
    modules = seen["modules"]
    assert "todo_agent.tui.app" in modules  # the probe ran in the app
    assert "todo_agent.core.runtime" not in modules
    assert "todo_agent.tui.screens.main" not in modules
    assert "todo_agent.core.permissions.shell" not in modules  # the shell reader: ~10 ms, not needed yet
    assert not [m for m in modules if m.startswith("openai")]


def _env() -> dict[str, str]:
    return dict(os.environ)


def test_on_a_terminal_the_first_frame_written_shows_the_prompt(tmp_path: Path) -> None:
    """What reaches a real terminal, not what Textual computed: a first frame drawn inside
    Textual's start-up batch is computed and never written, and the prompt then appeared
    only with the main screen, half a second later."""
    script = tmp_path / "s.json"
    script.write_text('{"steps": []}', encoding="utf-8")
    workspace = tmp_path / "project"
    workspace.mkdir()
    env = _env() | {"TODO_AGENT_HOME": str(tmp_path / "home"), "TERM": "xterm-256color"}
    command = [sys.executable, "-m", "todo_agent.frontends.cli", "--model", f"script:{script}"]
    output = _terminal_output_until(command, workspace, env, b"ready")
    text = re.sub(r"\x1b\[[0-9;?$]*[A-Za-z]|\x1b\][^\x07]*\x07", "", output.decode("utf-8", "replace"))
    # A frame is written top to bottom: the prompt (above the status line) comes before
    # the status line's first "starting…" only when both are in the first frame.
    first_frame = text[: text.index("starting…")]
    assert "Ask todo-agent…" in first_frame, first_frame
    assert "ready" not in first_frame  # the start screen's own status line, from the first frame


def _terminal_output_until(command: list[str], cwd: Path, env: dict[str, str], mark: bytes) -> bytes:
    """Run `command` on a 120×40 pseudo-terminal; its output up to `mark`, then ctrl+q."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdin=secondary, stdout=secondary, stderr=secondary, start_new_session=True
    )
    os.close(secondary)
    output = b""
    deadline = time.monotonic() + 60
    try:
        while mark not in output and time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 1)
            if ready:
                try:
                    output += os.read(primary, 65536)
                except OSError:  # the app ended: its terminal is gone
                    break
        assert mark in output, output[-2000:]
        os.write(primary, b"\x11")  # ctrl+q
        while True:  # drain, or the app blocks writing its last frame
            ready, _, _ = select.select([primary], [], [], 1)
            if process.poll() is not None:
                break
            if ready:
                try:
                    os.read(primary, 65536)
                except OSError:
                    break
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(primary)
    return output
