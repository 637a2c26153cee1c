"""SIGTERM and a closed terminal stop todo-agent as quitting does: the running command dies too.

Each test runs the real `todo-agent` in a process whose model starts a `Bash` command
that records its pid and sleeps. Python's default for either signal is to die on the
spot, which left that command (its own process group) running with no one to stop it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
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
from terminal_signals import as_from_a_terminal, terminal_defaults

from todo_agent.tui.terminal_driver import _TerminalOutput

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


def _sleeper(workspace: Path, process: subprocess.Popen[bytes] | _OnTerminal, drain: int | None = None) -> int:
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
    with as_from_a_terminal():
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


class _OnTerminal:
    """`command` as the only process of a new 120×40 terminal that is its controlling
    terminal, as in a terminal window: closing the terminal hangs it up (the kernel sends
    SIGHUP and SIGCONT)."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        env = dict(os.environ) | {"TERM": "xterm-256color"}
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: exec at once, whatever happens
            try:
                terminal_defaults()  # a suite run under `nohup` must not pass SIGHUP on ignored
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
                os.chdir(cwd)
                os.execve(command[0], command, env)
            finally:
                os._exit(127)
        self.status: int | None = None

    def poll(self) -> int | None:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status

    def read_until(self, mark: bytes, seconds: float = 60) -> bool:
        output = b""
        deadline = time.monotonic() + seconds
        while mark not in output and time.monotonic() < deadline:
            if select.select([self.fd], [], [], 0.1)[0]:
                output += os.read(self.fd, 65536)
        return mark in output

    def wait(self, seconds: float) -> int | None:
        """The exit status, reading the terminal meanwhile (or it blocks writing)."""
        deadline = time.monotonic() + seconds
        while self.poll() is None and time.monotonic() < deadline:
            if self.fd >= 0 and select.select([self.fd], [], [], 0.1)[0]:
                with contextlib.suppress(OSError):
                    os.read(self.fd, 65536)
            elif self.fd < 0:
                time.sleep(0.05)
        return self.poll()

    def close_terminal(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)


@pytest.mark.parametrize(("how", "status"), [("window closed", 129), ("ctrl+q", 0)])
def test_leaving_the_tui_stops_the_running_command(workspace: Path, tmp_path: Path, how: str, status: int) -> None:
    """Closing the terminal or quitting. Quitting left the command running: the app's
    shutdown cancels the turn twice, and the second cancel cut the kill short. A closed
    terminal killed the app on the spot; handled, it hung: the SIGCONT that comes with
    the hang-up made Textual restart its output on the dead terminal, and quitting then
    waited for that output forever."""
    app = _OnTerminal(_command(_script(tmp_path)), workspace)
    try:
        assert app.read_until(b"ready")
        os.write(app.fd, b"go\r")
        pid = _sleeper(workspace, app, drain=app.fd)
        if how == "window closed":
            # As tmux closes a pane: the hang-up's SIGCONT is taken while the terminal is
            # still there (here made certain by waiting for what Textual writes for it).
            os.kill(app.pid, signal.SIGCONT)
            app.read_until(b"\x1b[?1049h", seconds=1)
            os.kill(app.pid, signal.SIGHUP)
            app.close_terminal()
        else:
            os.write(app.fd, b"\x11")
        assert app.wait(30) == status
        assert _gone(pid), "the command outlived todo-agent"
    finally:
        app.close_terminal()
        app.kill()
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


def test_output_to_a_terminal_that_is_gone_is_dropped_and_other_errors_are_not() -> None:
    class Terminal(io.StringIO):
        error: int | None = None

        def write(self, text: str) -> int:
            if self.error is not None:
                raise OSError(self.error, os.strerror(self.error))
            return super().write(text)

    terminal = Terminal()
    output = _TerminalOutput(terminal)
    output.write("frame 1")
    terminal.error = errno.EAGAIN
    with pytest.raises(OSError):  # not a hang-up: Textual's own handling
        output.write("frame 2")
    terminal.error = errno.EIO  # the terminal hung up
    output.write("frame 3")
    output.flush()
    terminal.error = None
    output.write("frame 4")  # dropped too: nothing is written to it once it is gone
    assert terminal.getvalue() == "frame 1" and output.gone
