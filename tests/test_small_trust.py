"""The small ones of issue 19, each through the way it came: a server's absurd context
window, a TaskCompleted hook dodged by renaming the task, a hook's `setsid` child outliving
its timeout, and lock files others could read."""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from pathlib import Path

import pytest
from fake_openai import run_in_thread
from test_headless_e2e import tc, todo_agent

from todo_agent.core.places import data_root
from todo_agent.core.settings import user_settings_path


@pytest.mark.parametrize("n_ctx", [1, -5, 10**12])
def test_an_absurd_window_from_the_server_is_not_believed(workspace: Path, n_ctx: int) -> None:
    props = {"default_generation_settings": {"n_ctx": n_ctx}}
    with run_in_thread([{"text": "hello"}], props=props) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hi", "--output-format", "json")
    assert result.returncode == 0, result.stderr
    if n_ctx > 0:  # the probe drops a window that is not a positive number on its own
        unit = "token" if n_ctx == 1 else "tokens"
        assert f"the server says the context window is {n_ctx:,} {unit}; not believed" in result.stderr
    assert json.loads(result.stdout)["usage"]["context_window"] == 32_768  # the default, not the claim


def test_an_absurd_window_in_an_overflow_refusal_is_not_believed(workspace: Path) -> None:
    refusal = {
        "http_error": 400,
        "error_body": {
            "code": 400,
            "message": "the request exceeds the available context size",
            "type": "exceed_context_size_error",
            "n_ctx": -5,
            "n_prompt_tokens": 900,
        },
    }
    with run_in_thread([refusal]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hi", "--output-format", "json")
    assert result.returncode == 1  # the prompt was refused; nothing older to compact
    assert "the server's refusal says the context window is -5 tokens; not believed" in result.stderr
    assert json.loads(result.stdout)["usage"]["context_window"] == 32_768


def _user_hooks(text: str) -> None:
    user_settings_path().parent.mkdir(parents=True, exist_ok=True)
    user_settings_path().write_text(text)


def test_renaming_a_task_while_completing_it_does_not_skip_its_hook(workspace: Path, tmp_path: Path) -> None:
    _user_hooks(
        '[[hooks.TaskCompleted]]\nmatcher = "tests"\ncommand = "echo \'the tests fail; fix them first\' >&2; exit 2"\n'
    )
    steps = [
        {"tool_calls": [tc("TaskCreate", subject="run the tests", activeForm="Running the tests")]},
        {"tool_calls": [tc("TaskUpdate", taskId="1", status="in_progress")]},
        {"tool_calls": [tc("TaskUpdate", taskId="1", status="completed", subject="all done")]},
        {"text": "stopping"},
        {"text": "stopped"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    result = todo_agent(
        workspace, None, "-p", "go", "--model", f"script:{script}", "--tasks", "v2", "--output-format", "json"
    )
    assert result.returncode == 0, result.stderr
    tasks = json.loads(result.stdout)["tasks"]
    assert [(t["subject"], t["status"]) for t in tasks] == [("run the tests", "in_progress")]


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def test_a_hooks_setsid_child_dies_with_the_hook_at_its_timeout(workspace: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    _user_hooks(
        "[[hooks.UserPromptSubmit]]\ntimeout = 1\n"
        f"command = \"setsid sh -c 'echo $$ > {pid_file}; exec sleep 300' & sleep 60\"\n"
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "hello"}]))
    result = todo_agent(workspace, None, "-p", "go", "--model", f"script:{script}")
    pid = int(pid_file.read_text())
    try:
        assert result.returncode == 0, result.stderr
        assert "timed out" in result.stderr
        deadline = time.monotonic() + 10
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(pid), "the hook's setsid child outlived its timeout"
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_lock_files_are_private(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    steps = [{"tool_calls": [tc("TaskCreate", subject="one")]}, {"text": "ok"}]
    script.write_text(json.dumps(steps))
    result = todo_agent(workspace, None, "-p", "go", "--model", f"script:{script}", "--tasks", "v2")
    assert result.returncode == 0, result.stderr
    locks = list(data_root().rglob("*.lock"))
    assert any(lock.name.endswith(".tasks.json.lock") for lock in locks), locks
    assert {lock.name: stat.S_IMODE(lock.stat().st_mode) for lock in locks} == {lock.name: 0o600 for lock in locks}
