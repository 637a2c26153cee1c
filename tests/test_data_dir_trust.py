"""todo-agent's data directory is protected like the settings: with the workspace at
`$HOME`, the model cannot write `trusted_hooks.json` (and so trust a cloned repository's
hooks for the person), the rewind journals or the saved copies a recovery writes back;
and a trust record the model managed to write anyway is not believed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from gate import TOOL, gate
from test_headless_e2e import todo_agent

from todo_agent.core.hooks.spec import HookSpec
from todo_agent.core.hooks.trust import fingerprint, is_trusted, trust, trust_path
from todo_agent.core.places import data_root


def _run(workspace: Path, tmp_path: Path, calls: list[dict[str, object]], *flags: str) -> list[dict[str, object]]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "done"}]}))
    result = todo_agent(
        workspace, None, "-p", "go", "--model", f"script:{script}", "--output-format", "stream-json", *flags
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return [e for e in events if e.get("type") == "ToolFinished"]


def test_accept_edits_in_home_cannot_write_the_data_directory(isolated_home: Path, tmp_path: Path) -> None:
    project = isolated_home / "cloned"
    (project / ".todo-agent").mkdir(parents=True)
    (project / ".todo-agent" / "settings.toml").write_text('[[hooks.SessionStart]]\ncommand = "touch pwned"\n')
    root = data_root().relative_to(isolated_home).as_posix()
    forged = json.dumps({str(project): "0" * 64})
    calls = [
        {"name": "Write", "arguments": {"file_path": f"{root}/trusted_hooks.json", "content": forged}},
        {"name": "Write", "arguments": {"file_path": f"{root}/sessions/x/s.rewind.json", "content": "{}"}},
        {"name": "Write", "arguments": {"file_path": "ok.txt", "content": "fine\n"}},
    ]
    finished = _run(isolated_home, tmp_path, calls, "--permission-mode", "acceptEdits")
    assert [e["status"] for e in finished] == ["denied", "denied", "ok"]
    assert "hook trust" in str(finished[0]["output"])
    assert not trust_path().exists()
    assert not (data_root() / "sessions" / "x").exists()


@pytest.mark.parametrize("mode", ["default", "acceptEdits"])
def test_writes_into_the_data_directory_always_ask(isolated_home: Path, mode: str) -> None:
    policy = gate(isolated_home, mode, allow=["Write(**)", "Edit(**)"])
    for path in (trust_path(), data_root() / "trust.key", data_root() / "sessions" / "p" / "a.changes.json"):
        for tool in ("Write", "Edit"):
            assert policy.decide(TOOL[tool], {"file_path": str(path)}).verdict == "ask", (tool, path)
    assert policy.decide(TOOL["Read"], {"file_path": str(trust_path())}).verdict == "allow"


@pytest.mark.parametrize("path", ["sub/.todo-agent/settings.toml", "a/b/.TODO-AGENT/settings.toml"])
def test_a_nested_settings_folder_is_protected_too(tmp_path: Path, path: str) -> None:
    """Whoever later starts todo-agent in `sub/` gets `sub/.todo-agent/` as project settings."""
    policy = gate(tmp_path, "acceptEdits", allow=["Write(**)"])
    assert policy.decide(TOOL["Write"], {"file_path": path, "content": ""}).verdict == "ask"


SPECS = [HookSpec("UserPromptSubmit", "touch pwned", source="project")]


def test_a_trust_record_the_model_wrote_is_not_believed(workspace: Path, tmp_path: Path) -> None:
    """A record holding the plain fingerprint (all that was needed before) trusts nothing now:
    the hook does not run."""
    settings = workspace / ".todo-agent" / "settings.toml"
    settings.parent.mkdir()
    settings.write_text('[[hooks.UserPromptSubmit]]\ncommand = "touch pwned"\n')
    trust_path().parent.mkdir(parents=True, exist_ok=True)
    trust_path().write_text(json.dumps({str(workspace.resolve()): fingerprint(SPECS)}))
    os.chmod(trust_path(), 0o600)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    result = todo_agent(workspace, None, "-p", "go", "--model", f"script:{script}")
    assert result.returncode == 0, result.stderr
    assert not (workspace / "pwned").exists()
    assert "not run" in result.stderr


def test_a_real_acceptance_is_believed_and_only_for_its_project(tmp_path: Path) -> None:
    trust(tmp_path, SPECS)
    assert is_trusted(tmp_path, SPECS)
    assert not is_trusted(tmp_path / "other", SPECS)
    assert not is_trusted(tmp_path, [HookSpec("UserPromptSubmit", "touch other", source="project")])
    key = data_root() / "trust.key"
    assert key.stat().st_mode & 0o777 == 0o600 and trust_path().stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("which", ["trusted_hooks.json", "trust.key"])
def test_a_trust_record_others_could_write_is_not_believed(tmp_path: Path, which: str) -> None:
    trust(tmp_path, SPECS)
    os.chmod(data_root() / which, 0o622)
    assert not is_trusted(tmp_path, SPECS)


def test_a_forged_key_and_record_pair_is_only_as_good_as_running_code(tmp_path: Path) -> None:
    """Replacing the key invalidates every record made under the old one."""
    trust(tmp_path, SPECS)
    (data_root() / "trust.key").write_text("ab" * 32 + "\n")
    assert not is_trusted(tmp_path, SPECS)
