"""`-p` with MCP servers: hooks see MCP calls, plan mode and headless deny what would ask,
a project's servers need --allow-project-mcp, the JSON result lists the servers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import TEST_SERVER, mcp_json, pids, wait_gone

from todo_agent.core.settings import user_settings_path

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="watches server processes in /proc")


def user_settings(notes: Path, extra: str = "") -> None:
    path = user_settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"""{extra}
[mcp_servers.t]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(TEST_SERVER))}, "stdio"]
env = {{ TEST_SERVER_DIR = {json.dumps(str(notes))} }}
""",
        encoding="utf-8",
    )


def run(workspace: Path, tmp_path: Path, steps: list[Any], *flags: str) -> tuple[dict[str, Any], str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps), encoding="utf-8")
    argv = [sys.executable, "-m", "todo_agent.frontends.cli", "--model", f"script:{script}", "-p", "go"]
    done = subprocess.run(
        [*argv, "--output-format", "json", *flags],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def tool_results(workspace: Path, session_id: str) -> list[str]:
    from todo_agent.core.session.directory import find_session

    lines = find_session(workspace, session_id).read_text().splitlines()
    messages = [json.loads(line).get("message", {}) for line in lines]
    return [m["content"] for m in messages if m.get("role") == "tool"]


ECHO = [{"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": "hi"}}]}, "done"]


def test_headless_denies_an_mcp_call_that_would_ask(workspace: Path, tmp_path: Path, notes: Path) -> None:
    user_settings(notes)
    result, _ = run(workspace, tmp_path, ECHO)
    assert result["mcp_servers"] == [{"name": "t", "source": "user", "state": "connected", "reason": "", "tools": 14}]
    (output,) = tool_results(workspace, result["session_id"])
    assert output.startswith("denied: this call needs approval") and "MCP server t" in output
    assert wait_gone(pids(notes)) == []


def test_an_allow_rule_lets_it_run_even_in_plan_mode(workspace: Path, tmp_path: Path, notes: Path) -> None:
    user_settings(notes, '[permissions]\nallow = ["mcp__t"]\n')
    result, _ = run(workspace, tmp_path, ECHO, "--permission-mode", "plan")
    assert tool_results(workspace, result["session_id"]) == ["hi"]


def test_plan_mode_denies_mcp_calls(workspace: Path, tmp_path: Path, notes: Path) -> None:
    user_settings(notes)
    result, _ = run(workspace, tmp_path, ECHO, "--permission-mode", "plan")
    assert tool_results(workspace, result["session_id"])[0].startswith("denied: plan mode")


def test_pre_tool_use_hooks_see_mcp_calls(workspace: Path, tmp_path: Path, notes: Path) -> None:
    hook = '[[hooks.PreToolUse]]\nmatcher = "mcp__t__.*"\ncommand = "echo no MCP today >&2; exit 2"\n'
    user_settings(notes, hook)
    result, stderr = run(workspace, tmp_path, ECHO, "--permission-mode", "bypassPermissions")
    assert tool_results(workspace, result["session_id"]) == ["PreToolUse hook blocked this call: no MCP today"]
    assert "PreToolUse hook blocked" in stderr


def test_project_servers_need_allow_project_mcp(workspace: Path, tmp_path: Path, notes: Path) -> None:
    (workspace / ".mcp.json").write_text(json.dumps(mcp_json(notes)))
    result, stderr = run(workspace, tmp_path, ["done"])
    assert {s["name"]: s["state"] for s in result["mcp_servers"]} == {"notes": "untrusted", "slow": "untrusted"}
    assert "MCP server notes is not available: a project server" in stderr and "--allow-project-mcp" in stderr
    assert pids(notes) == []  # nothing of the repository's ran
    result, stderr = run(workspace, tmp_path, ["done"], "--allow-project-mcp")
    assert {s["name"]: s["state"] for s in result["mcp_servers"]} == {"notes": "connected", "slow": "connected"}
    assert "test server starting" not in stderr  # the servers' stderr is theirs, not ours
    assert wait_gone(pids(notes)) == []


def test_a_server_talking_garbage_is_one_line_and_nothing_of_its_output(workspace: Path, tmp_path: Path) -> None:
    """Its stdout is not JSON-RPC: the SDK's complaint (with the line in it) stays out of stderr."""
    # It exits a second after its garbage and the run ends at that exit: a longer life
    # would only make the test wait longer.
    garbage = "import sys, time; print('\\x1b[2J not json'); sys.stdout.flush(); time.sleep(1)"
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"bad": {"command": sys.executable, "args": ["-c", garbage]}}}))
    result, stderr = run(workspace, tmp_path, ["done"], "--mcp-config", str(config))
    assert result["mcp_servers"][0]["state"] == "failed"
    assert "MCP server bad is not available: it did not complete the MCP handshake" in stderr
    assert "Traceback" not in stderr and "\x1b" not in stderr and "not json" not in stderr
