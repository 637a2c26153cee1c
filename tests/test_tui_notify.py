"""Told when it needs you: the bell, the desktop notification and the title, written to a real
terminal (a pty) only when it is in the background; and the person's `Notification` hook."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_stop_signals import _OnTerminal
from textual import events
from tui_helpers import SIZE, bash_step, main_screen, make_app, make_config, send, turn_done, wait_until

from todo_agent.core.hooks.spec import HookSpec
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.approvals import ApprovalBroker
from todo_agent.tui.notify import BEL, RESTORE_TITLE, SAVE_TITLE, Attention, desktop_notification
from todo_agent.tui.screens import main as main_module
from todo_agent.tui.screens.approval import ApprovalScreen
from todo_agent.tui.screens.starting import StartScreen
from todo_agent.tui.widgets.prompt import PromptInput

OSC = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def _attention(mode: str = "auto", focused: bool = False, **env: str) -> tuple[Attention, list[str]]:
    written: list[str] = []
    return Attention(mode, written.append, lambda: focused, env), written  # type: ignore[arg-type]


def test_in_the_background_it_rings_notifies_and_says_so_in_the_title() -> None:
    attention, written = _attention(TERM="xterm-256color")
    assert attention.needed("Bash waits for your approval")
    assert written == [
        f"{BEL}\x1b]9;todo-agent: Bash waits for your approval{BEL}{SAVE_TITLE}"
        f"\x1b]2;todo-agent: Bash waits for your approval{BEL}"
    ]
    attention.needed("again")
    assert SAVE_TITLE not in written[-1]  # the person's title is saved once
    attention.seen()
    attention.seen()
    assert written[2:] == [RESTORE_TITLE]  # and given back once


def test_nothing_when_focused_or_off_and_only_the_bell_with_bell() -> None:
    focused, written = _attention(focused=True)
    assert not focused.needed("x") and written == []
    off, written = _attention("off")
    assert not off.needed("x") and written == []
    bell, written = _attention("bell")
    assert bell.needed("x") and written[0].startswith(BEL) and "\x1b]9;" not in written[0]


def test_the_sequence_fits_the_terminal() -> None:
    assert desktop_notification("t", "b", {"TERM": "foot"}) == f"\x1b]777;notify;t;b{BEL}"
    assert desktop_notification("t", "a;b", {"TERM": "rxvt-unicode-256color"}) == f"\x1b]777;notify;t;a,b{BEL}"
    wrapped = desktop_notification("t", "b", {"TERM": "tmux-256color", "TMUX": "/tmp/tmux-0/default,1,0"})
    assert wrapped == f"\x1bPtmux;\x1b\x1b]9;t: b{BEL}\x1b\\"
    # What it says cannot carry a sequence of its own.
    assert desktop_notification("t", "x\x1b]2;evil\x07y", {}) == f"\x1b]9;t: x ]2,evil y{BEL}"


# --- a real terminal ------------------------------------------------------------------------


def _app_in_a_terminal(workspace: Path, tmp_path: Path, *extra: str) -> _OnTerminal:
    """The app on a model that talks for about two seconds, then asks to run a command."""
    script = tmp_path / "script.json"
    step = {**bash_step("echo hi"), "text": "Working on it, one moment, nearly there."}
    script.write_text(json.dumps({"chunk_delay": 0.2, "steps": [step]}), encoding="utf-8")
    command = [sys.executable, "-m", "todo_agent.frontends.cli", "--model", f"script:{script}", *extra]
    return _OnTerminal(command, workspace)


def _read_until(app: _OnTerminal, mark: bytes, seconds: float = 60, seen: bytes = b"") -> bytes:
    """What the terminal is sent from now until `mark` is in `seen` (read before) followed
    by it, or `seconds` passed: a mark that came with the last read is not waited for."""
    import select

    output = b""
    deadline = time.monotonic() + seconds
    while mark not in seen + output and time.monotonic() < deadline:
        if select.select([app.fd], [], [], 0.1)[0]:
            output += os.read(app.fd, 65536)
    return output


@pytest.mark.parametrize("focused", [False, True])
def test_an_approval_in_a_background_terminal_rings_and_notifies(
    workspace: Path, tmp_path: Path, focused: bool
) -> None:
    app = _app_in_a_terminal(workspace, tmp_path)
    try:
        assert b"ready" in _read_until(app, b"ready")
        os.write(app.fd, b"go\r")
        # Typing is focus (Textual takes a key as focus in): the person leaves while it works.
        seen = _read_until(app, b"Working")
        os.write(app.fd, b"\x1b[I" if focused else b"\x1b[O")  # the terminal reports focus in / out
        seen += _read_until(app, b"Allow Bash?")
        seen += _read_until(app, b"\x1b]9;", seconds=3 if focused else 30, seen=seen)
        assert b"Allow Bash?" in seen
        bare = OSC.sub(b"", seen)
        if focused:
            assert b"\x1b]9;" not in seen and BEL.encode() not in bare
        else:
            assert b"\x1b]9;todo-agent: Bash waits for your approval\x07" in seen
            assert BEL.encode() in bare  # the bell itself, not an OSC's terminator
            assert b"\x1b]2;todo-agent: Bash waits for your approval\x07" in seen
            os.write(app.fd, b"\x1b[I")  # back to the terminal: its title is given back
            assert RESTORE_TITLE.encode() in _read_until(app, RESTORE_TITLE.encode(), seconds=30)
        os.write(app.fd, b"n")
        os.write(app.fd, b"\x11")  # ctrl+q
        assert app.wait(30) == 0
    finally:
        app.close_terminal()
        app.kill()


# --- in the app -----------------------------------------------------------------------------


async def test_a_long_turn_ending_in_the_background_is_told(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(main_module, "LONG_TURN", 0.0)  # every turn is long enough
    app = make_app(workspace, ["done", "done again"])
    written: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        app.attention._write = written.append
        await send(pilot, "first")
        await turn_done(pilot)
        assert written == []  # looked at: nothing
        app.app_focus = False  # the person went to another window (a key press would bring focus back)
        await main_screen(app).submit("second")
        await turn_done(pilot)
        await wait_until(pilot, lambda: bool(written))
        assert "todo-agent: the turn is done" in written[0] and written[0].startswith(BEL)


async def test_the_notification_hook_runs_with_claude_codes_fields(workspace: Path) -> None:
    record = workspace / "told.jsonl"
    hook = HookSpec("Notification", f"cat >> {record}; echo >> {record}", matcher="permission_prompt")
    app = make_app(workspace, [bash_step("echo hi"), "ok"], hooks=[hook])
    async with app.run_test(size=SIZE) as pilot:
        app.app_focus = False
        await main_screen(app).submit("go")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await wait_until(pilot, lambda: record.exists() and record.read_text().strip() != "")
        told: dict[str, Any] = json.loads(record.read_text().splitlines()[0])
        assert told["hook_event_name"] == "Notification"
        assert told["notification_type"] == "permission_prompt"
        assert told["message"] == "Bash waits for your approval"
        assert told["terminal_focused"] is False
        await pilot.press("y")
        await turn_done(pilot)
        assert main_screen(app).runtime.sessions.history[-1]["content"] == "ok"


async def test_keys_work_after_the_terminal_was_in_the_background_during_start_up(workspace: Path) -> None:
    """The terminal reported focus out while the first frame was up (tmux `focus-events on`
    and another window chosen): the main screen came up with nothing focused, and every key
    was dropped until a click."""
    release = threading.Event()

    def create(config: Config, broker: ApprovalBroker) -> Runtime:
        release.wait(60)
        return Runtime.create(config, approver=broker.approve, model=ScriptedModel.from_data([]))

    app = TodoAgentApp.starting(make_config(workspace), create=create, animations=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, StartScreen))
            app.post_message(events.AppBlur())
            await wait_until(pilot, lambda: not app.app_focus)
            release.set()
            await wait_until(pilot, lambda: app.runtime is not None and main_screen(app).is_current)
            await pilot.press(*"hi")
            assert main_screen(app).query_one(PromptInput).text == "hi"
    finally:
        release.set()
        if app.runtime is not None:
            app.runtime.close()
