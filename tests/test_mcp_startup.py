"""With MCP servers configured (one of them hanging), the first frame still comes before
anything heavy: the SDK is imported only after it, and never before the main screen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mcp_helpers import HANG_SERVER, TEST_SERVER

CHILD = r"""
import json, sys
from pathlib import Path
from todo_agent.core.settings import load_config
from todo_agent.tui.app import TodoAgentApp

workspace = Path(sys.argv[1])
config = load_config(workspace)
assert len(config.mcp_servers) == 3, config.warnings
app = TodoAgentApp.starting(config)
seen = {}
HEAVY = ("mcp", "mcp_types", "httpx2", "anyio", "starlette", "todo_agent.core.mcp.adapter", "todo_agent.core.runtime")

def first_frame() -> None:
    seen["heavy"] = sorted(m for m in sys.modules if m in HEAVY)
    seen["screen"] = type(app.screen).__name__

app.call_after_refresh(first_frame)
app.call_after_refresh(lambda: app.call_later(app.exit))
app.run(headless=True, size=(120, 36))
app.starter.join()
if app.starter.runtime is not None:
    app.starter.runtime.close()
print(json.dumps(seen))
"""


def test_the_first_frame_imports_no_mcp_sdk_with_servers_configured(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    notes = tmp_path / "notes"
    notes.mkdir()
    script = tmp_path / "s.json"
    script.write_text('{"steps": []}')
    env = {"TEST_SERVER_DIR": str(notes)}
    servers = {
        "one": {"command": sys.executable, "args": [str(TEST_SERVER), "stdio"], "env": env},
        "two": {"command": sys.executable, "args": [str(TEST_SERVER), "stdio"], "env": env},
        "stuck": {"command": sys.executable, "args": [str(HANG_SERVER)], "env": env},
    }
    config_dir = tmp_path / "config" / "todo-agent"
    config_dir.mkdir(parents=True)
    (config_dir / "settings.toml").write_text(f'model = "script:{script}"\n')
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    child_env = dict(os.environ) | {
        "TODO_AGENT_HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(workspace)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=child_env,
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["screen"] == "StartScreen"
    assert seen["heavy"] == []
