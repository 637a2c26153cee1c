"""No MCP server process is left, however todo-agent ends: quit, a closed terminal, SIGTERM
(app and headless), the end of `-p`, and `/new` (which starts fresh servers).

Each test runs the real `todo-agent` with two user-configured servers: the SDK-built test
server, whose first call starts a child in its process group, and a server whose start
hangs. The servers note their pids (and their children's) in a directory; afterwards,
every one of them must be gone.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp_helpers import HANG_SERVER, TEST_SERVER, alive, kill_all, pids, wait_gone
from test_stop_signals import _OnTerminal

from todo_agent.core.settings import user_settings_path

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="watches processes through /proc")


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes"
    path.mkdir()
    return path


@pytest.fixture(autouse=True)
def _servers(notes: Path) -> None:
    env = {"TEST_SERVER_DIR": str(notes)}
    user_settings_path().parent.mkdir(parents=True, exist_ok=True)
    user_settings_path().write_text(
        f"""
[mcp_servers.a]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(TEST_SERVER))}, "stdio"]
env = {{ TEST_SERVER_DIR = {json.dumps(str(notes))} }}

[mcp_servers.hang]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(HANG_SERVER))}]
env = {{ TEST_SERVER_DIR = {json.dumps(env["TEST_SERVER_DIR"])} }}
startup_timeout_sec = 120
""",
        encoding="utf-8",
    )


def _script(tmp_path: Path) -> Path:
    """Start a child of the server, then run a long command (the turn is busy when killed)."""
    script = tmp_path / "script.json"
    steps = [
        {"tool_calls": [{"name": "mcp__a__spawn_child", "arguments": {}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "exec sleep 300"}}]},
        "done",
    ]
    script.write_text(json.dumps(steps), encoding="utf-8")
    return script


def _command(script: Path, *extra: str) -> list[str]:
    mode = ["--permission-mode", "bypassPermissions"]
    return [sys.executable, "-m", "todo_agent.frontends.cli", "--model", f"script:{script}", *mode, *extra]


def _wait_for(notes: Path, pattern: str, count: int, poll: object = None, seconds: float = 60) -> list[Path]:
    deadline = time.monotonic() + seconds
    while len(found := sorted(notes.glob(pattern))) < count:
        assert time.monotonic() < deadline, f"waited for {count} {pattern} in {notes}"
        if callable(poll):
            poll()
        time.sleep(0.05)
    return found


def _no_orphans(notes: Path) -> None:
    everything = pids(notes)
    left = wait_gone(everything)
    kill_all(left)
    assert everything and not left, f"MCP server processes outlived todo-agent: {left}"


class _Recording(_OnTerminal):
    """A terminal that keeps what the app wrote on it."""

    seen = b""

    def read_until(self, mark: bytes, seconds: float = 60) -> bool:
        deadline = time.monotonic() + seconds
        start = len(self.seen)
        while mark not in self.seen[start:] and time.monotonic() < deadline:
            if self.fd >= 0 and select.select([self.fd], [], [], 0.05)[0]:
                try:
                    self.seen += os.read(self.fd, 65536)
                except OSError:
                    break
        return mark in self.seen[start:]


def _settle(app: _OnTerminal, notes: Path) -> None:
    """Both servers started, the test server connected and its child running."""
    assert app.read_until(b"mcp 1/2")  # the test server is up; the other hangs
    os.write(app.fd, b"go\r")
    _wait_for(notes, "child-*", 1, poll=lambda: app.read_until(b"\x00", 0.05))


@pytest.mark.parametrize(("how", "status"), [("ctrl+q", 0), ("window closed", 129), ("SIGTERM", 143)])
def test_leaving_the_app_leaves_no_server(workspace: Path, tmp_path: Path, notes: Path, how: str, status: int) -> None:
    app = _Recording(_command(_script(tmp_path)), workspace)
    try:
        _settle(app, notes)
        assert len(pids(notes)) == 3 and all(alive(p) for p in pids(notes))
        # what the servers wrote on stderr went to their logs, never to the terminal
        assert b"test server starting" not in app.seen and b"hanging on purpose" not in app.seen
        if how == "window closed":
            os.kill(app.pid, signal.SIGCONT)
            app.read_until(b"\x1b[?1049h", seconds=1)
            os.kill(app.pid, signal.SIGHUP)
            app.close_terminal()
        elif how == "SIGTERM":
            os.kill(app.pid, signal.SIGTERM)
        else:
            os.write(app.fd, b"\x11")
        assert app.wait(30) == status
    finally:
        app.close_terminal()
        app.kill()
        _no_orphans(notes)


def test_new_stops_the_servers_and_starts_fresh_ones(workspace: Path, tmp_path: Path, notes: Path) -> None:
    app = _OnTerminal(_command(_script(tmp_path)), workspace)
    try:
        _settle(app, notes)
        os.write(app.fd, b"\x1b")  # esc: the running command stops
        assert app.read_until(b"interrupted")
        first = pids(notes)
        os.write(app.fd, b"/new\r")
        _wait_for(notes, "server-*", 4, poll=lambda: app.read_until(b"\x00", 0.05))
        assert wait_gone(first) == [], "the old session's servers (or their children) outlived /new"
        os.write(app.fd, b"\x11")
        assert app.wait(30) == 0
    finally:
        app.close_terminal()
        app.kill()
        _no_orphans(notes)


def test_sigterm_in_headless_mode_leaves_no_server(workspace: Path, tmp_path: Path, notes: Path) -> None:
    process = subprocess.Popen(
        _command(_script(tmp_path), "-p", "go"), cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        # headless waits for the hanging server: its timeout is long, so SIGTERM comes meanwhile
        _wait_for(notes, "server-*", 2, poll=process.poll)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 143, err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        _no_orphans(notes)


def test_the_end_of_p_leaves_no_server(workspace: Path, tmp_path: Path, notes: Path) -> None:
    settings = user_settings_path()
    settings.write_text(settings.read_text().replace("startup_timeout_sec = 120", "startup_timeout_sec = 1"))
    script = tmp_path / "short.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "mcp__a__spawn_child", "arguments": {}}]}, "done"]))
    done = subprocess.run(
        _command(script, "-p", "go", "--output-format", "json"),
        check=False,
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 0 and result["result"] == "done", done.stderr
    states = {s["name"]: s["state"] for s in result["mcp_servers"]}
    assert states == {"a": "connected", "hang": "failed"}
    assert "MCP server hang is not available: it did not finish starting within 1 s" in done.stderr
    assert len(list(notes.glob("child-*"))) == 1
    _no_orphans(notes)
