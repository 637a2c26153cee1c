"""Where MCP servers come from: `--mcp-config`, project settings, `.mcp.json`, user settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from todo_agent.core.mcp.config import ServerSpec, expand
from todo_agent.core.mcp.trust import is_trusted, trust, trust_path
from todo_agent.core.settings import load_config, user_settings_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def servers(workspace: Path, **flags: object) -> dict[str, ServerSpec]:
    config = load_config(workspace, flags=dict(flags), env={"HOME": "/home/me", "TOKEN": "t0k"})
    assert not config.warnings, config.warnings
    return {s.name: s for s in config.mcp_servers}


def test_the_four_places_highest_first(workspace: Path, tmp_path: Path) -> None:
    write(user_settings_path(), '[mcp_servers.a]\ncommand = "user-a"\n[mcp_servers.d]\ncommand = "user-d"\n')
    write(workspace / ".mcp.json", json.dumps({"mcpServers": {"a": {"command": "json-a"}, "b": {"command": "json-b"}}}))
    write(
        workspace / ".todo-agent/settings.toml",
        '[mcp_servers.b]\ncommand = "project-b"\n[mcp_servers.c]\nurl = "http://x/mcp"\n',
    )
    flag = write(tmp_path / "servers.json", json.dumps({"mcpServers": {"c": {"command": "flag-c"}}}))
    config = load_config(workspace, flags={"mcp_config": str(flag)}, env={})
    found = {s.name: s for s in config.mcp_servers}
    # The person's own name stays theirs: the project's `a` and `c` are not used (one notice each).
    assert {n: (s.command or s.url) for n, s in found.items()} == {
        "a": "user-a",
        "b": "project-b",
        "c": "flag-c",
        "d": "user-d",
    }
    assert {n: s.source for n, s in found.items()} == {"a": "user", "b": "project", "c": "flag", "d": "user"}
    assert [w.split(" not used")[0] for w in config.warnings] == [
        f"MCP server c from {workspace / '.todo-agent/settings.toml'}",
        f"MCP server a from {workspace / '.mcp.json'}",
    ]
    # a user or flag server starts at once; the project's wait for the person
    assert {n: s.from_project for n, s in found.items()} == {"a": False, "b": True, "c": False, "d": False}


def test_claude_codes_mcp_json_is_read_as_written(workspace: Path) -> None:
    write(
        workspace / ".mcp.json",
        json.dumps(
            {
                "mcpServers": {
                    "fs": {
                        "type": "stdio",
                        "command": "npx",
                        "args": ["-y", "server-fs", "${HOME}"],
                        "env": {"K": "v"},
                    },
                    "api": {
                        "type": "http",
                        "url": "https://api.example/mcp",
                        "headers": {"Authorization": "Bearer ${TOKEN}"},
                    },
                    "plain": {"command": "srv"},
                    "extra": {"command": "srv", "alwaysAllow": ["x"], "disabled": False},  # other clients' keys
                }
            }
        ),
    )
    found = servers(workspace)
    assert found["fs"].transport == "stdio" and found["fs"].args == ("-y", "server-fs", "/home/me")
    assert found["fs"].env == {"K": "v"}
    assert found["api"].transport == "http" and found["api"].headers == {"Authorization": "Bearer t0k"}
    assert found["plain"].transport == "stdio" and found["extra"].command == "srv"


def test_a_command_line_is_shown_quoted_as_it_would_run() -> None:
    # The trust question and /mcp show this line: the script given to `bash -c` is one
    # argument, and must not read as four words (or hide where one ends).
    spec = ServerSpec("slow", "mcp.json", ".mcp.json", "stdio", "bash", ("-c", "sleep 4; exec srv --repo ."))
    assert spec.describe() == "bash -c 'sleep 4; exec srv --repo .'"
    http = ServerSpec("api", "mcp.json", ".mcp.json", "http", url="http://127.0.0.1:1/mcp")
    assert http.describe() == "http://127.0.0.1:1/mcp"


def test_codex_toml_keys(workspace: Path) -> None:
    write(
        workspace / ".todo-agent/settings.toml",
        """
[mcp_servers.git]
command = "uvx"
args = ["mcp-server-git"]
env = { GIT_DIR = "x" }
cwd = "sub"
startup_timeout_sec = 5
tool_timeout_sec = 7.5
enabled_tools = ["git_status", "git_log"]
disabled_tools = ["git_log"]
enabled = false
""",
    )
    git = servers(workspace)["git"]
    assert (git.startup_timeout, git.tool_timeout, git.cwd, git.enabled) == (5.0, 7.5, "sub", False)
    assert git.wants_tool("git_status") and not git.wants_tool("git_log") and not git.wants_tool("git_push")


def test_variables_expand_with_defaults() -> None:
    missing: list[str] = []
    env = {"SET": "yes", "EMPTY": ""}
    assert expand("${SET}-${UNSET:-dflt}-${EMPTY:-e}-$SET", env, missing) == "yes-dflt-e-$SET"
    assert missing == []
    assert expand("a${GONE}b${GONE}", env, missing) == "ab" and missing == ["GONE"]


def test_an_unset_variable_keeps_the_server_in_an_error_state_naming_it(workspace: Path) -> None:
    write(
        workspace / ".mcp.json", json.dumps({"mcpServers": {"gh": {"command": "gh-mcp", "env": {"T": "${GH_TOKEN}"}}}})
    )
    config = load_config(workspace, env={})
    (spec,) = config.mcp_servers  # never silently dropped
    assert "GH_TOKEN" in spec.problem and str(workspace / ".mcp.json") in spec.problem


@pytest.mark.parametrize(
    ("where", "text", "said"),
    [
        (".todo-agent/settings.toml", "[mcp_servers.x]\nargs = []\n", "[mcp_servers.x] needs either command"),
        (
            ".todo-agent/settings.toml",
            '[mcp_servers.x]\ncommand = "a"\nargs = "b"\n',
            "[mcp_servers.x] args must be a list",
        ),
        (".todo-agent/settings.toml", '[mcp_servers.x]\ncommand = "a"\ntimeout = 3\n', "unknown key 'timeout'"),
        (
            ".todo-agent/settings.toml",
            '[mcp_servers.x]\nurl = "u"\nstartup_timeout_sec = 0\n',
            "startup_timeout_sec must be",
        ),
        (".mcp.json", '{"mcpServers": {"x": {"command": 3}}}', "mcpServers.x.command must be a non-empty string"),
        (".mcp.json", '{"mcpServers": {"x": {"type": "ws", "url": "u"}}}', "mcpServers.x.type must be"),
        (".mcp.json", '{"mcpServers": [1]}', "mcpServers must be an object"),
        (".mcp.json", '{"mcpServers": ', "invalid JSON"),
    ],
)
def test_bad_config_is_one_line_naming_file_and_key(workspace: Path, where: str, text: str, said: str) -> None:
    path = write(workspace / where, text)
    config = load_config(workspace, env={})
    assert config.mcp_servers == []
    (warning,) = config.warnings
    assert str(path) in warning and said in warning and "\n" not in warning


def test_a_missing_flag_file_is_said(workspace: Path, tmp_path: Path) -> None:
    config = load_config(workspace, flags={"mcp_config": str(tmp_path / "nope.json")}, env={})
    assert "nope.json: no such file (--mcp-config)" in config.warnings[0]


def test_a_toml_flag_file(workspace: Path, tmp_path: Path) -> None:
    flag = write(tmp_path / "m.toml", '[mcp_servers.t]\nurl = "http://127.0.0.1:1/mcp"\n')
    assert servers(workspace, mcp_config=str(flag))["t"].source == "flag"


def test_a_project_cannot_trust_its_own_servers(workspace: Path) -> None:
    write(workspace / ".todo-agent/settings.toml", "allow_project_mcp = true\n")
    config = load_config(workspace, env={})
    assert not config.allow_project_mcp and "allow_project_mcp" in config.warnings[0]
    write(user_settings_path(), "allow_project_mcp = true\n")
    assert load_config(workspace, env={}).allow_project_mcp
    assert load_config(workspace, env={}, flags={"allow_project_mcp": True}).allow_project_mcp


def test_trust_is_keyed_by_what_would_run(workspace: Path) -> None:
    write(workspace / ".mcp.json", json.dumps({"mcpServers": {"s": {"command": "srv", "args": ["--safe"]}}}))
    (spec,) = load_config(workspace, env={}).mcp_servers
    assert not is_trusted(workspace, spec)
    trust(workspace, [spec])
    assert is_trusted(workspace, spec)
    for changed in ({"command": "srv", "args": ["--evil"]}, {"command": "srv", "args": ["--safe"], "env": {"A": "1"}}):
        write(workspace / ".mcp.json", json.dumps({"mcpServers": {"s": changed}}))
        (again,) = load_config(workspace, env={}).mcp_servers
        assert not is_trusted(workspace, again)
    # an env value the repository leaves to the person's environment changes nothing
    write(workspace / ".mcp.json", json.dumps({"mcpServers": {"s": {"command": "${BIN}", "args": ["--safe"]}}}))
    one = load_config(workspace, env={"BIN": "a"}).mcp_servers[0].fingerprint()
    assert one == load_config(workspace, env={"BIN": "b"}).mcp_servers[0].fingerprint()


def test_the_kept_results_of_the_session_may_be_read_without_asking(workspace: Path) -> None:
    from gate import TOOL

    from todo_agent.core.mcp.results import results_dir
    from todo_agent.core.runtime import Runtime

    write(user_settings_path(), '[mcp_servers.s]\ncommand = "srv"\n')
    runtime = Runtime.create(load_config(workspace, env={}))
    try:
        kept = results_dir(runtime.session.path, runtime.session.id) / "call_1.txt"
        assert runtime.permissions.decide(TOOL["Read"], {"file_path": str(kept)}).verdict == "allow"
        beside = runtime.session.path.with_name("other.txt")
        assert runtime.permissions.decide(TOOL["Read"], {"file_path": str(beside)}).verdict == "ask"
        runtime.sessions.new()  # the rule follows the session
        assert runtime.permissions.decide(TOOL["Read"], {"file_path": str(kept)}).verdict == "ask"
        again = results_dir(runtime.session.path, runtime.session.id) / "call_1.txt"
        assert runtime.permissions.decide(TOOL["Read"], {"file_path": str(again)}).verdict == "allow"
        assert runtime.permissions.decide(TOOL["Edit"], {"file_path": str(again)}).verdict == "ask"
    finally:
        runtime.close()


def test_a_trust_record_the_model_could_have_written_is_not_believed(workspace: Path) -> None:
    """Plain fingerprints in the file (what a model could write with Write) are not a seal."""
    write(workspace / ".mcp.json", json.dumps({"mcpServers": {"s": {"command": "srv"}}}))
    (spec,) = load_config(workspace, env={}).mcp_servers
    trust(workspace, [spec])  # makes the key and a genuine record
    forged = {str(workspace.resolve()): [spec.fingerprint()]}
    trust_path().write_text(json.dumps(forged))
    assert not is_trusted(workspace, spec)
    trust(workspace, [spec])
    trust_path().chmod(0o666)  # writable by others: nothing in it is believed
    assert not is_trusted(workspace, spec)
