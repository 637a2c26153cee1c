"""Durability under hostile conditions: a full disk, a kill -9 mid-write, a data dir that
cannot be written, escape sequences from the model, a command's child that leaves its
process group. A full disk is simulated with RLIMIT_FSIZE (writes past it fail with
EFBIG, as they fail with ENOSPC on a full disk), in a child process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_openai import run_in_thread
from test_headless_e2e import todo_agent

from todo_agent.core.places import data_root

_LIMITED_WRITE = """
import asyncio, resource, signal, sys
from pathlib import Path
from todo_agent.core.tools.context import ToolContext
from todo_agent.core.tools.results import ToolError
from todo_agent.core.tools.files import WRITE
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    print(asyncio.run(WRITE.run({"file_path": sys.argv[1], "content": "new " * 5000}, ToolContext("c", Path.cwd()))))
except ToolError as exc:
    print(exc)
"""


def test_write_through_a_hard_link_on_a_full_disk_keeps_the_original(workspace: Path) -> None:
    original = "precious original content\n" * 4
    (workspace / "orig.txt").write_text(original)
    os.link(workspace / "orig.txt", workspace / "link.txt")
    result = subprocess.run(
        [sys.executable, "-c", _LIMITED_WRITE, "link.txt"], cwd=workspace, capture_output=True, text=True, check=False
    )
    assert "Cannot write link.txt: File too large; the file was left unchanged" in result.stdout, result.stderr
    assert "Traceback" not in result.stderr
    assert (workspace / "orig.txt").read_text() == original
    assert (workspace / "link.txt").stat().st_nlink == 2
    assert sorted(p.name for p in workspace.iterdir()) == ["link.txt", "orig.txt"]


_STUCK_WRITE = """
import asyncio, os, sys, time
from pathlib import Path
from todo_agent.core.tools.context import ToolContext
from todo_agent.core.tools import files
def stuck(fd):
    Path("ready").touch()
    time.sleep(600)
os.fsync = stuck  # wherever the write fsyncs (core/atomic.py)
asyncio.run(files.WRITE.run({"file_path": "big.txt", "content": "x" * 100}, ToolContext("c", Path.cwd())))
"""


def test_a_kill_during_write_leaves_no_temp_file_after_the_next_run(workspace: Path, tmp_path: Path) -> None:
    (workspace / "big.txt").write_text("old\n")
    child = subprocess.Popen([sys.executable, "-c", _STUCK_WRITE], cwd=workspace)
    deadline = time.monotonic() + 30
    while not (workspace / "ready").exists():
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait()
    (workspace / "ready").unlink()
    temps = [p.name for p in workspace.iterdir() if p.name.endswith(".tmp")]
    assert len(temps) == 1  # what a kill -9 leaves behind
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["hello"]))
    result = todo_agent(workspace, None, "-p", "x", "--model", f"script:{script}")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in workspace.iterdir()) == ["big.txt"]
    assert (workspace / "big.txt").read_text() == "old\n"


def test_a_data_dir_that_cannot_be_created_is_one_line(workspace: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["hello"]))
    result = todo_agent(
        workspace, None, "-p", "x", "--model", f"script:{script}", env={"TODO_AGENT_HOME": str(blocker)}
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(blocker) in lines[0], result.stderr


def test_a_full_data_dir_mid_session_is_one_line(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["a long answer " * 400]))
    command = [str(Path(sys.executable).with_name("todo-agent")), "-p", "x", "--model", f"script:{script}"]
    # Through a small launcher: the limit and the ignored SIGXFSZ carry over the exec.
    launcher = "import os, resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
    launcher += "resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000)); os.execv(sys.argv[1], sys.argv[1:])"
    result = subprocess.run(
        [sys.executable, "-c", launcher, *command],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot save" in lines[0], result.stderr
    assert (data_root() / "sessions").exists()


# --- escape sequences in headless output ----------------------------------------------------


def test_headless_text_output_shows_escapes_as_text_never_runs_them(workspace: Path) -> None:
    hostile = "done\x1b]0;owned\x07 \x1b[2J\x9b31m red \x1b[0m"
    with run_in_thread([{"text": hostile}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "x")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout and "\x07" not in result.stdout
    assert "done" in result.stdout and "red" in result.stdout
    with run_in_thread([{"http_error": 400, "message": "bad \x1b[31mthing\x1b[0m"}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "x")
    assert result.returncode == 1
    assert "\x1b" not in result.stderr and "thing" in result.stderr
    with run_in_thread([{"text": hostile}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "x", "--output-format", "json")
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout
    assert json.loads(result.stdout)["result"] == hostile  # JSON carries the text exactly, escaped


# --- a child that leaves the process group -------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds descendants through /proc")
def test_a_timed_out_commands_setsid_child_is_reported_and_stopped(workspace: Path, tmp_path: Path) -> None:
    command = "setsid sleep 300 & echo $! > child.pid; sleep 300"
    calls = [{"name": "Bash", "arguments": {"command": command, "timeout": 1}}]
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": calls}, "ok"]))
    result = todo_agent(
        workspace,
        None,
        "-p",
        "x",
        "--model",
        f"script:{script}",
        "--output-format",
        "stream-json",
        "--permission-mode",
        "bypassPermissions",
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    output = next(e["output"] for e in events if e["type"] == "ToolFinished")
    assert "timed out" in output
    assert "left its process group" in output
    pid = int((workspace / "child.pid").read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]:
        assert time.monotonic() < deadline, "the setsid child still runs"
        time.sleep(0.05)
