"""Secrets stay secret: no API key in Bash's environment, private transcripts, masked
credentials in the base URL, and no `script:` model chosen by a cloned repository."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from fake_openai import run_in_thread
from test_headless_e2e import todo_agent

from todo_agent.core.places import data_root
from todo_agent.core.settings import load_config, user_settings_path


def _run(workspace: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("todo-agent")
    return subprocess.run(
        [str(script), *args],
        cwd=workspace,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_bash_commands_do_not_see_the_api_key(workspace: Path, tmp_path: Path) -> None:
    user_settings_path().parent.mkdir(parents=True)
    user_settings_path().write_text('api_key_env = "MY_LLM_KEY"\n')
    calls = [{"name": "Bash", "arguments": {"command": "env; echo done-listing"}}]
    responses = [{"tool_calls": calls}, {"text": "ok"}]
    with run_in_thread(responses) as server:
        result = _run(
            workspace,
            ["-p", "x", "--base-url", server.base_url, "--permission-mode", "bypassPermissions"],
            {"OPENAI_API_KEY": "sk-openai-SECRET", "MY_LLM_KEY": "sk-mine-SECRET", "HARMLESS_VAR": "visible"},
        )
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    listing = next(m["content"] for m in requests[-1]["messages"] if m["role"] == "tool")
    assert "done-listing" in listing and "HARMLESS_VAR=visible" in listing
    assert "SECRET" not in listing


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_transcripts_and_their_folders_are_private(workspace: Path, tmp_path: Path) -> None:
    calls = [{"name": "TodoWrite", "arguments": {"todos": [{"content": "a", "status": "pending", "activeForm": "A"}]}}]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "ok"}]}))
    result = todo_agent(workspace, None, "-p", "x", "--model", f"script:{script}")
    assert result.returncode == 0, result.stderr
    sessions = data_root() / "sessions"
    (project,) = sessions.iterdir()
    assert _mode(sessions) == 0o700 and _mode(project) == 0o700
    files = [p for p in project.iterdir() if not p.name.endswith(".lock")]
    # The transcript, the prompts' checkpoints (`/rewind`), the task list and its history.
    names = sorted(p.name.split(".", 1)[1] for p in files)
    assert names == ["jsonl", "prompts.json", "tasks.json", "tasks.log.jsonl"]
    for path in files:
        assert _mode(path) == 0o600, path


def test_credentials_in_the_base_url_are_masked_in_every_message(workspace: Path) -> None:
    url = "http://alice:hunter2@127.0.0.1:9/v1?api-key=sekrit&x=1"
    settings = user_settings_path()
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("request_retries = 1\n")  # one wait, said with the URL too (not six over a minute)
    result = todo_agent(workspace, None, "-p", "hi", "--base-url", url)
    assert result.returncode != 0
    assert "127.0.0.1:9" in result.stderr and "retrying in" in result.stderr
    assert "hunter2" not in result.stderr and "sekrit" not in result.stderr
    assert "hunter2" not in result.stdout and "sekrit" not in result.stdout
    with run_in_thread([], models=["other"]) as server:
        secret_url = server.base_url.replace("http://", "http://bob:pa55word@") + "?key=topsecret"
        result = todo_agent(workspace, None, "-p", "hi", "--base-url", secret_url, "--output-format", "json")
    assert result.returncode != 0
    assert "pa55word" not in result.stderr + result.stdout and "topsecret" not in result.stderr + result.stdout
    assert "bob:***@" in result.stderr


def test_a_project_settings_file_cannot_choose_a_scripted_model(workspace: Path) -> None:
    (workspace / ".todo-agent").mkdir()
    (workspace / ".todo-agent" / "settings.toml").write_text('model = "script:evil.json"\n')
    config = load_config(workspace)
    assert not config.model.startswith("script:")
    assert any("script:" in w for w in config.warnings)
