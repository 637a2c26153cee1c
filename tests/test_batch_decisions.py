"""One decision per call, taken when the call runs: a call that changes the file system
(here an allowed command that makes a symlink to outside the workspace) is seen by the
permission check of every later call in the same response."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from test_headless_e2e import todo_agent


def _finished(stdout: str) -> list[dict[str, object]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return [e for e in events if e.get("type") == "ToolFinished"]


def test_reads_after_a_command_are_checked_after_it_ran(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    (outside / "other.txt").write_text("ALSO SECRET\n")
    (workspace / ".todo-agent").mkdir()
    (workspace / ".todo-agent" / "settings.toml").write_text('[permissions]\nallow = ["Bash(ln:*)"]\n')
    calls = [
        {"name": "Bash", "arguments": {"command": f"ln -s {outside} link"}},
        {"name": "Read", "arguments": {"file_path": "link/secret.txt"}},
        {"name": "Read", "arguments": {"file_path": "link/other.txt"}},
        {"name": "Grep", "arguments": {"pattern": "SECRET", "path": "link"}},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "done"}]}))
    result = todo_agent(workspace, None, "-p", "x", "--model", f"script:{script}", "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    finished = _finished(result.stdout)
    assert [f["status"] for f in finished] == ["ok", "denied", "denied", "denied"]
    assert "TOP SECRET" not in result.stdout and "ALSO SECRET" not in result.stdout


def test_a_git_checkout_that_makes_a_symlink_is_seen_by_the_read_after_it(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    git = ["git", "-C", str(workspace), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    subprocess.run([*git, "checkout", "-q", "-b", "evil"], check=True)
    (workspace / "link").symlink_to(outside)
    subprocess.run([*git, "add", "link"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "link"], check=True)
    subprocess.run([*git, "checkout", "-q", "main"], check=True)
    assert not (workspace / "link").exists()
    (workspace / ".todo-agent").mkdir()
    (workspace / ".todo-agent" / "settings.toml").write_text('[permissions]\nallow = ["Bash(git checkout:*)"]\n')
    calls = [
        {"name": "Bash", "arguments": {"command": "git checkout -q evil"}},
        {"name": "Read", "arguments": {"file_path": "link/secret.txt"}},
        {"name": "Read", "arguments": {"file_path": "link/secret.txt", "offset": 1}},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "done"}]}))
    result = todo_agent(workspace, None, "-p", "x", "--model", f"script:{script}", "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    assert [f["status"] for f in _finished(result.stdout)] == ["ok", "denied", "denied"]
    assert "TOP SECRET" not in result.stdout and "ALSO SECRET" not in result.stdout
