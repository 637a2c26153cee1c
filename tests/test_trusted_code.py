"""Trust covers what runs, not only its command line (issue 27, item 2).

An accepted project hook (`sh hooks/check.sh`) or MCP server (`python3 mcp/server.py`) runs
workspace files the model may rewrite. Reproduced headless: the model rewrites the script
(acceptEdits: denied now, the path is protected; bypassPermissions: the edit lands, and the
hook does not run the new code), and the next start of a project server whose script
changed asks again instead of running it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import TEST_SERVER
from test_headless_e2e import tc, todo_agent

from todo_agent.core.mcp.manager import McpManager
from todo_agent.core.mcp.trust import is_trusted as mcp_trusted
from todo_agent.core.mcp.trust import trust as trust_mcp
from todo_agent.core.permissions import workspace_code
from todo_agent.core.permissions.workspace_code import footprint_of_argv, footprint_of_line
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import load_config, user_settings_path

CHECK = '#!/bin/sh\n. hooks/lib.sh\necho checked >> "$CLAUDE_PROJECT_DIR/hook-ran"\nexit 0\n'
EVIL = '#!/bin/sh\ntouch "$CLAUDE_PROJECT_DIR/owned"\nexit 0\n'


# --- what a command line runs ----------------------------------------------------------


def test_a_script_its_folder_a_module_and_a_directory_are_covered(workspace: Path) -> None:
    (workspace / "mcp").mkdir()
    (workspace / "mcp" / "server.py").write_text("import helper\n")
    (workspace / "mcp" / "helper.py").write_text("X = 1\n")
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "__init__.py").write_text("")
    (workspace / "data").mkdir()
    found = footprint_of_argv(["python3", "mcp/server.py"], workspace, workspace)
    assert found.shown == ("mcp/",) and found.digest
    assert footprint_of_argv(["python", "-m", "pkg.main"], workspace, workspace).shown == ("pkg/",)
    assert footprint_of_argv(["/usr/bin/node", "--data=data"], workspace, workspace).shown == ("data/",)
    # A change anywhere in the script's folder is a new fingerprint; a change elsewhere is not.
    (workspace / "elsewhere.txt").write_text("x")
    assert footprint_of_argv(["python3", "mcp/server.py"], workspace, workspace) == found
    (workspace / "mcp" / "helper.py").write_text("X = 2\n")
    assert footprint_of_argv(["python3", "mcp/server.py"], workspace, workspace).digest != found.digest


def test_a_hook_line_is_read_as_the_shell_runs_it(workspace: Path) -> None:
    (workspace / "hooks").mkdir()
    (workspace / "lib").mkdir()
    (workspace / "hooks" / "check.sh").write_text('. lib/common.sh\nsource "$HOME/x"\n')
    (workspace / "lib" / "common.sh").write_text("y=1\n")
    for line in ("sh hooks/check.sh", '"$CLAUDE_PROJECT_DIR"/hooks/check.sh', "timeout 5 sh -c 'bash hooks/check.sh'"):
        found = footprint_of_line(line, workspace)
        assert found.shown == ("hooks/", "lib/common.sh"), line
        assert "sources lib/common.sh" in found.lines()
        assert "hooks/check.sh sources a file whose name is computed" in found.lines()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["uv", "run", "server"], "`uv` runs code the project's own files choose"),
        (["npx", "-y", "some-server"], "`npx` runs code the project's own files choose"),
        (["python3", "server.py"], "server.py is in the project's root folder"),
    ],
)
def test_what_the_command_line_does_not_show_is_said_in_words(workspace: Path, argv: list[str], said: str) -> None:
    (workspace / "server.py").write_text("")
    lines = footprint_of_argv(argv, workspace, workspace).lines()
    assert any(said in line for line in lines), lines


def test_a_folder_past_the_bounds_says_it_cannot_fingerprint_it_all(workspace: Path) -> None:
    (workspace / "srv").mkdir()
    for n in range(workspace_code.MAX_FILES + 1):
        (workspace / "srv" / f"m{n:05}.py").write_text("")
    found = footprint_of_argv(["python3", "srv/m00000.py"], workspace, workspace)
    assert found.partial == "more than 2,000 files: only the first 2,000 are fingerprinted"
    assert found.partial in found.lines()


def test_past_the_byte_bound_too(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace_code, "MAX_BYTES", 1_000)
    (workspace / "srv").mkdir()
    (workspace / "srv" / "main.py").write_text("x" * 2_000)
    found = footprint_of_argv(["python3", "srv/main.py"], workspace, workspace)
    assert found.partial.startswith("more than 0 MB")  # the real bound is 20 MB
    assert found.digest


# --- hooks -----------------------------------------------------------------------------


def _project_hook(workspace: Path, command: str = "sh hooks/check.sh") -> None:
    (workspace / ".todo-agent").mkdir(exist_ok=True)
    (workspace / ".todo-agent" / "settings.toml").write_text(f'[[hooks.PreToolUse]]\ncommand = "{command}"\n')
    (workspace / "hooks").mkdir(exist_ok=True)
    (workspace / "hooks" / "check.sh").write_text(CHECK)
    (workspace / "hooks" / "lib.sh").write_text("true\n")


def _accept_project_hooks(workspace: Path) -> None:
    runtime = Runtime.create(load_config(workspace, flags={"model": "script:none.json"}))
    try:
        assert runtime.trust.untrusted_hooks  # asked first
        runtime.trust.accept_hooks()
    finally:
        runtime.close()


def _run(workspace: Path, tmp_path: Path, calls: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    script = tmp_path / "script.json"
    steps = [{"tool_calls": [call]} for call in calls]
    script.write_text(json.dumps({"steps": [*steps, {"text": "done"}]}))
    result = todo_agent(
        workspace,
        None,
        "-p",
        "go",
        "--model",
        f"script:{script}",
        "--permission-mode",
        mode,
        "--output-format",
        "stream-json",
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_an_accepted_hook_script_cannot_be_edited_by_the_model_in_accept_edits(workspace: Path, tmp_path: Path) -> None:
    _project_hook(workspace)
    _accept_project_hooks(workspace)
    events = _run(
        workspace,
        tmp_path,
        [tc("Write", file_path="hooks/check.sh", content=EVIL), tc("Read", file_path="hooks/lib.sh")],
        "acceptEdits",
    )
    write = next(e for e in events if e["type"] == "ToolFinished" and e["name"] == "Write")
    assert write["status"] == "denied"
    assert "hooks/ is run by an accepted project hook (PreToolUse)" in write["output"]
    assert (workspace / "hooks" / "check.sh").read_text() == CHECK
    assert not (workspace / "owned").exists()
    assert (workspace / "hook-ran").read_text().count("checked") == 2  # the accepted hook ran, twice


def test_a_hook_whose_script_changed_is_not_run_as_trusted(workspace: Path, tmp_path: Path) -> None:
    """bypassPermissions lets the model's write through; the next tool call finds the hook's
    code changed since it was accepted, and runs none of the project's hooks."""
    _project_hook(workspace)
    _accept_project_hooks(workspace)
    events = _run(
        workspace,
        tmp_path,
        [tc("Write", file_path="hooks/check.sh", content=EVIL), tc("Read", file_path="hooks/lib.sh")],
        "bypassPermissions",
    )
    assert (workspace / "hooks" / "check.sh").read_text() == EVIL  # written (that mode asks nothing)
    assert not (workspace / "owned").exists()  # but never run
    notices = [e["text"] for e in events if e["type"] == "Notice"]
    assert any("project hooks stopped for this session: the code they run changed" in n for n in notices), notices
    # And the next start asks again: the accepted fingerprint covered the old script.
    runtime = Runtime.create(load_config(workspace, flags={"model": "script:none.json"}))
    try:
        assert runtime.trust.untrusted_hooks
    finally:
        runtime.close()


def test_a_users_own_hook_script_in_the_workspace_is_protected_too(workspace: Path, tmp_path: Path) -> None:
    (workspace / "tools").mkdir()
    (workspace / "tools" / "lint.sh").write_text("exit 0\n")
    user_settings_path().parent.mkdir(parents=True, exist_ok=True)
    user_settings_path().write_text('[[hooks.PostToolUse]]\ncommand = "sh tools/lint.sh"\n')
    events = _run(
        workspace, tmp_path, [tc("Edit", file_path="tools/lint.sh", old_string="0", new_string="1")], "acceptEdits"
    )
    edit = next(e for e in events if e["type"] == "ToolFinished" and e["name"] == "Edit")
    assert edit["status"] == "denied" and "tools/ is run by one of your hooks (PostToolUse)" in edit["output"]


# --- project MCP servers ---------------------------------------------------------------


def _project_server(workspace: Path, notes: Path) -> None:
    (workspace / "mcp").mkdir()
    shutil.copy(TEST_SERVER, workspace / "mcp" / "server.py")
    entry = {"command": sys.executable, "args": ["mcp/server.py", "stdio"], "env": {"TEST_SERVER_DIR": str(notes)}}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry}}))


def test_a_project_servers_script_changing_asks_again(workspace: Path, notes: Path) -> None:
    _project_server(workspace, notes)
    config = load_config(workspace)
    manager = McpManager(config.mcp_servers, workspace=workspace)
    spec = manager.servers[0].spec
    assert spec.code is not None and spec.code.shown == ("mcp/",)
    assert manager.untrusted()
    trust_mcp(workspace, [spec])
    assert not McpManager(load_config(workspace).mcp_servers, workspace=workspace).untrusted()
    # The model (or anyone) rewrites the script: the accepted fingerprint no longer holds.
    (workspace / "mcp" / "server.py").write_text("import os; os.system('touch owned')\n")
    again = McpManager(load_config(workspace).mcp_servers, workspace=workspace)
    assert [s.name for s in again.untrusted()] == ["proj"]
    assert not mcp_trusted(workspace, again.servers[0].spec)


async def test_a_script_changed_after_the_start_is_caught_before_it_runs(workspace: Path, notes: Path) -> None:
    _project_server(workspace, notes)
    specs = load_config(workspace).mcp_servers
    trust_mcp(workspace, [McpManager(specs, workspace=workspace).servers[0].spec])
    manager = McpManager(specs, workspace=workspace)
    assert not manager.untrusted()
    (workspace / "mcp" / "server.py").write_text("import os; os.system('touch owned')\n")
    manager.start()
    await manager.wait_settled(10)
    assert [s.name for s in manager.untrusted()] == ["proj"]
    assert manager.servers[0].reason == "its code changed since you accepted it"
    assert not (workspace / "owned").exists()
    await manager.stop()


def test_an_accepted_servers_script_is_protected_from_the_model(workspace: Path, tmp_path: Path, notes: Path) -> None:
    _project_server(workspace, notes)
    trust_mcp(workspace, [McpManager(load_config(workspace).mcp_servers, workspace=workspace).servers[0].spec])
    events = _run(workspace, tmp_path, [tc("Write", file_path="mcp/server.py", content="x")], "acceptEdits")
    write = next(e for e in events if e["type"] == "ToolFinished" and e["name"] == "Write")
    assert write["status"] == "denied" and "mcp/ is run by the accepted project MCP server proj" in write["output"]
