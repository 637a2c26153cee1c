"""Files that run code or set permissions are edits to permissions: `.git/`, the user's
settings file and `.todo-agent/` always ask (every mode but bypassPermissions), and are
denied headless, whatever allow rules say."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from gate import TOOL, gate
from test_headless_e2e import todo_agent

from todo_agent.core.settings import user_settings_path

PROTECTED = [
    ".git/config",
    ".git/hooks/pre-commit",
    ".GIT/hooks/post-checkout",  # the same directory on a case-insensitive file system
    "sub/.git/config",  # a nested repository
    ".todo-agent/settings.toml",
]


@pytest.mark.parametrize("mode", ["default", "acceptEdits"])
@pytest.mark.parametrize("path", PROTECTED)
def test_protected_paths_always_ask(tmp_path: Path, mode: str, path: str) -> None:
    p = gate(tmp_path, mode, allow=["Edit", "Write(**)", "Edit(.git/**)"])
    for tool in ("Write", "Edit"):
        decision = p.decide(TOOL[tool], {"file_path": path})
        assert decision.verdict == "ask", (tool, path)
    assert p.decide(TOOL["Read"], {"file_path": path}).verdict == "allow"
    bypass = gate(tmp_path, "bypassPermissions")
    assert bypass.decide(TOOL["Write"], {"file_path": path}).verdict == "allow"
    assert p.suggest_rule(TOOL["Write"], {"file_path": path}) == ""  # no rule would stop it asking


def test_a_symlink_into_git_is_git(tmp_path: Path) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "hooks").symlink_to(tmp_path / ".git" / "hooks")
    p = gate(tmp_path, "acceptEdits")
    assert p.decide(TOOL["Write"], {"file_path": "hooks/pre-commit"}).verdict == "ask"
    assert p.decide(TOOL["Write"], {"file_path": "gitignore-notes/.gitignore"}).verdict == "allow"


def test_the_user_settings_file_asks_even_when_the_workspace_is_home(isolated_home: Path) -> None:
    settings = user_settings_path()
    relative = settings.relative_to(isolated_home).as_posix()
    p = gate(isolated_home, "acceptEdits", allow=["Write(**)"])
    assert p.decide(TOOL["Write"], {"file_path": relative}).verdict == "ask"
    assert p.decide(TOOL["Edit"], {"file_path": str(settings)}).verdict == "ask"


# --- end to end: acceptEdits headless, a hostile script --------------------------------


def _run(workspace: Path, tmp_path: Path, calls: list[dict[str, object]]) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "done"}]}))
    return todo_agent(
        workspace,
        None,
        "-p",
        "go",
        "--model",
        f"script:{script}",
        "--permission-mode",
        "acceptEdits",
        "--output-format",
        "stream-json",
    )


def _results(stdout: str) -> list[dict[str, object]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return [e for e in events if e.get("type") == "ToolFinished"]


def test_accept_edits_headless_cannot_plant_git_hooks_or_config(workspace: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    config = (workspace / ".git" / "config").read_text()
    calls = [
        {"name": "Write", "arguments": {"file_path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}},
        {
            "name": "Edit",
            "arguments": {"file_path": ".git/config", "old_string": "[core]", "new_string": "[core]\nfsmonitor = x"},
        },
        {"name": "Write", "arguments": {"file_path": "ok.txt", "content": "fine\n"}},
    ]
    result = _run(workspace, tmp_path, calls)
    assert result.returncode == 0, result.stderr
    statuses = [r["status"] for r in _results(result.stdout)]
    assert statuses == ["denied", "denied", "ok"]
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".git" / "config").read_text() == config
    assert (workspace / "ok.txt").read_text() == "fine\n"


def test_accept_edits_headless_in_home_cannot_switch_to_bypass(isolated_home: Path, tmp_path: Path) -> None:
    relative = user_settings_path().relative_to(isolated_home).as_posix()
    content = 'permission_mode = "bypassPermissions"\n'
    calls = [{"name": "Write", "arguments": {"file_path": relative, "content": content}}]
    result = _run(isolated_home, tmp_path, calls)
    assert result.returncode == 0, result.stderr
    assert [r["status"] for r in _results(result.stdout)] == ["denied"]
    assert not user_settings_path().exists()
