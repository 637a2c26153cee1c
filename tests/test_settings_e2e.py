"""Settings as the person writes them, through the real command: a `*` matcher works, one
bad hook entry never switches off the deny rules beside it, and a file whose rules
cannot be read stops todo-agent instead of running without them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_headless_e2e import todo_agent

from todo_agent.core.settings import user_settings_path

USER_FILE = """
[permissions]
deny = ["Bash(rm:*)"]

[[hooks.PreToolUse]]
matcher = "*"
command = "cat >> seen.jsonl; echo >> seen.jsonl"

[[hooks.PostToolUse]]
matcher = "Bash("
command = "touch never"
"""


def _run(workspace: Path, tmp_path: Path, calls: list[dict[str, object]], *flags: str) -> list[dict[str, object]]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "done"}]}))
    result = todo_agent(
        workspace, None, "-p", "go", "--model", f"script:{script}", "--output-format", "stream-json", *flags
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return [e for e in events if e.get("type") in ("ToolFinished", "Notice")]


def test_a_star_matcher_runs_for_every_tool_and_a_bad_entry_keeps_the_deny_rules(
    workspace: Path, tmp_path: Path
) -> None:
    user_settings_path().parent.mkdir(parents=True)
    user_settings_path().write_text(USER_FILE)
    (workspace / "victim.txt").write_text("keep me\n")
    calls = [
        {"name": "Bash", "arguments": {"command": "rm victim.txt"}},
        {"name": "Read", "arguments": {"file_path": "victim.txt"}},
    ]
    events = _run(workspace, tmp_path, calls, "--permission-mode", "bypassPermissions")
    finished = [e for e in events if e["type"] == "ToolFinished"]
    assert [e["status"] for e in finished] == ["denied", "ok"]
    assert "Bash(rm:*)" in str(finished[0]["output"])
    assert (workspace / "victim.txt").read_text() == "keep me\n"
    seen = [json.loads(line)["tool_name"] for line in (workspace / "seen.jsonl").read_text().splitlines() if line]
    assert seen == ["Bash", "Read"]  # `*`: every tool
    warnings = [str(e["text"]) for e in events if e["type"] == "Notice" and e.get("level") == "warning"]
    assert any("[[hooks.PostToolUse]] #1: matcher is not a valid regular expression" in w for w in warnings)
    assert not (workspace / "never").exists()


@pytest.mark.parametrize("prompt", [True, False], ids=["headless", "app"])
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[permissions]\ndeny = ["Bash(rm:*)"\n', "invalid TOML"),
        ('[permissions]\ndeny = ["Read([z-a])"]\n', "invalid glob pattern"),
    ],
)
def test_a_file_whose_rules_cannot_be_read_stops_the_start(
    workspace: Path, tmp_path: Path, text: str, problem: str, prompt: bool
) -> None:
    user_settings_path().parent.mkdir(parents=True)
    user_settings_path().write_text(text)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "never asked"}]))
    args = ["-p", "go"] if prompt else []
    result = todo_agent(workspace, None, *args, "--model", f"script:{script}")
    assert result.returncode == 2
    assert str(user_settings_path()) in result.stderr and problem in result.stderr
    assert "does not start without its rules" in result.stderr
