"""SIGTERM and a closed terminal stop todo-agent as quitting does: the running command dies too.

Each test runs the real `todo-agent` in a process whose model starts a `Bash` command
that records its pid and sleeps. Python's default for either signal is to die on the
spot, which left that command (its own process group) running with no one to stop it.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="watches the command through /proc")

COMMAND = "echo $$ > sleeper.pid; exec sleep 300"


def _script(tmp_path: Path) -> Path:
    script = tmp_path / "script.json"
    calls = [{"name": "Bash", "arguments": {"command": COMMAND, "description": "sleep"}}]
    script.write_text(json.dumps([{"tool_calls": calls}, "done"]), encoding="utf-8")
    return script


def _command(script: Path, *extra: str) -> list[str]:
    mode = ["--permission-mode", "bypassPermissions"]
    return [sys.executable, "-m", "todo_agent.frontends.cli", "--model", f"script:{script}", *mode, *extra]


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return "Z" not in stat.read_text().split()[2]
    except FileNotFoundError:
        return False


def _sleeper(workspace: Path, process: subprocess.Popen[bytes], drain: int | None = None) -> int:
    """The pid of the running command, once it runs (reading the terminal meanwhile)."""
    pid_file = workspace / "sleeper.pid"
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert process.poll() is None, "todo-agent ended before the command ran"
        assert time.monotonic() < deadline, "the command never started"
        if drain is not None and select.select([drain], [], [], 0.05)[0]:
            os.read(drain, 65536)
        else:
            time.sleep(0.05)
    pid = int(pid_file.read_text())
    assert _alive(pid)
    return pid


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _kill_leftover(workspace: Path) -> None:
    """Whatever the verdict, leave no sleeper behind."""
    pid_file = workspace / "sleeper.pid"
    if pid_file.exists() and pid_file.read_text().strip() and _alive(pid := int(pid_file.read_text())):
        os.kill(pid, signal.SIGKILL)


def test_sigterm_in_headless_mode_stops_the_running_command(workspace: Path, tmp_path: Path) -> None:
    process = subprocess.Popen(
        _command(_script(tmp_path), "-p", "go"), cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        pid = _sleeper(workspace, process)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 143, err
        assert b"stopped by SIGTERM" in err
        assert _gone(pid), "the command outlived todo-agent"
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        _kill_leftover(workspace)


@pytest.mark.parametrize(("how", "status"), [("hang-up", 129), ("ctrl+q", 0)])
def test_leaving_the_tui_stops_the_running_command(workspace: Path, tmp_path: Path, how: str, status: int) -> None:
    """A hang-up (the terminal window closed), or quitting: both used to leave the command
    running, because the app's shutdown cancels the turn twice and the second cancel cut
    the kill short."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = dict(os.environ) | {"TERM": "xterm-256color"}
    process = subprocess.Popen(
        _command(_script(tmp_path)),
        cwd=workspace,
        env=env,
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        start_new_session=True,
    )
    os.close(secondary)
    try:
        output = b""
        deadline = time.monotonic() + 60
        while b"ready" not in output and time.monotonic() < deadline:
            if select.select([primary], [], [], 1)[0]:
                output += os.read(primary, 65536)
        assert b"ready" in output, output[-2000:]
        os.write(primary, b"go\r")
        pid = _sleeper(workspace, process, drain=primary)
        if how == "hang-up":
            process.send_signal(signal.SIGHUP)
        else:
            os.write(primary, b"\x11")
        deadline = time.monotonic() + 30
        while process.poll() is None and time.monotonic() < deadline:  # drain its last frames
            if select.select([primary], [], [], 0.2)[0]:
                try:
                    os.read(primary, 65536)
                except OSError:
                    break
        assert process.wait(timeout=30) == status
        assert _gone(pid), "the command outlived todo-agent"
    finally:
        os.close(primary)
        if process.poll() is None:
            process.kill()
            process.wait()
        _kill_leftover(workspace)


def test_a_signal_the_parent_ignored_stays_ignored(workspace: Path, tmp_path: Path) -> None:
    """`nohup todo-agent -p …`: the hang-up must not stop the run."""
    process = subprocess.Popen(
        ["nohup", *_command(_script(tmp_path), "-p", "go")],
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        pid = _sleeper(workspace, process)
        process.send_signal(signal.SIGHUP)
        time.sleep(0.5)  # a handled hang-up would stop it within this
        assert process.poll() is None and _alive(pid)
        process.send_signal(signal.SIGTERM)  # still caught: stops the run cleanly
        _, err = process.communicate(timeout=30)
        assert process.returncode == 143, err
        assert _gone(pid)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        _kill_leftover(workspace)
