"""A server that accepts the request and never answers: a first-byte timeout (default
60 s, setting `first_byte_timeout`) ends the wait with a clear message."""

from __future__ import annotations

from pathlib import Path

from fake_openai import run_in_thread
from test_headless_e2e import todo_agent

from todo_agent.core.settings import load_config, user_settings_path


def test_a_silent_server_times_out_with_a_clear_message(workspace: Path) -> None:
    user_settings_path().parent.mkdir(parents=True)
    user_settings_path().write_text("first_byte_timeout = 1\n")
    with run_in_thread([{"stall": True}], check_unused=False) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hello")
        requests = len(server.requests)
    assert result.returncode == 1
    assert "sent nothing for 1 s" in result.stderr and "first_byte_timeout" in result.stderr
    assert "Traceback" not in result.stderr
    assert requests >= 1


def test_the_setting_defaults_to_a_minute_and_is_checked(workspace: Path) -> None:
    assert load_config(workspace).first_byte_timeout == 60
    (workspace / ".todo-agent").mkdir()
    (workspace / ".todo-agent" / "settings.toml").write_text("first_byte_timeout = 0\n")
    config = load_config(workspace)
    assert config.first_byte_timeout == 60
    assert any("first_byte_timeout" in w for w in config.warnings)
