"""Two processes on one session: the second gets a clear message, never interleaved
writes; a killed process leaves no lock behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_headless_e2e import todo_agent

from todo_agent.core.session.directory import SessionError, latest_session
from todo_agent.core.session.transcript import Session


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _start_holder(workspace: Path, tmp_path: Path) -> subprocess.Popen[str]:
    """A headless run whose command waits until `release` exists, holding its session."""
    wait = "touch started; while [ ! -e release ]; do sleep 0.02; done"
    script = tmp_path / "holder.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": [{"name": "Bash", "arguments": {"command": wait}}]}, "ok"]}))
    command = [str(Path(sys.executable).with_name("todo-agent")), "-p", "first", "--model", f"script:{script}"]
    return subprocess.Popen(
        [*command, "--permission-mode", "bypassPermissions"],
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _second(workspace: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "second.json"
    script.write_text(json.dumps({"steps": ["second answer"]}))
    return todo_agent(workspace, None, "-p", "again", "--continue", "--model", f"script:{script}")


def test_a_second_process_on_the_same_session_is_refused(workspace: Path, tmp_path: Path) -> None:
    holder = _start_holder(workspace, tmp_path)
    try:
        _wait_for(workspace / "started", holder)
        second = _second(workspace, tmp_path)
        assert second.returncode != 0
        assert "in use by another todo-agent" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        (workspace / "release").touch()
        _, err = holder.communicate(timeout=30)
    assert holder.returncode == 0, err
    path = latest_session(workspace)
    assert path is not None
    session = Session.open(path)
    assert not session.warnings
    assert [m["role"] for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert "cancelled" not in json.dumps(session.messages)
    session.close()


def test_a_killed_process_leaves_no_stale_lock(workspace: Path, tmp_path: Path) -> None:
    holder = _start_holder(workspace, tmp_path)
    _wait_for(workspace / "started", holder)
    os.kill(holder.pid, signal.SIGKILL)
    holder.communicate(timeout=30)
    (workspace / "release").touch()  # the orphaned command may go now
    second = _second(workspace, tmp_path)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "second answer"


def test_one_process_cannot_open_a_session_twice(workspace: Path) -> None:
    session = Session.create(workspace)
    session.append({"role": "user", "content": "hi"})
    with pytest.raises(SessionError, match="in use by another todo-agent"):
        Session.open(session.path)
    session.close()
    Session.open(session.path).close()
