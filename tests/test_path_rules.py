"""Path rules cover every tool that touches the path, with one glob matcher for rules,
Glob and Grep (`**` any depth, `*` one segment, `?`, `[…]`, `{a,b}`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gate import TOOL, gate
from test_headless_e2e import todo_agent

from todo_agent.core.permissions.rules import Rule


@pytest.mark.parametrize(
    ("rule", "path", "matches"),
    [
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/deep/evil.py", False),
        ("src/**", "src/deep/evil.py", True),
        ("src/**", "src", True),
        ("src", "src/a/b.txt", True),
        ("src/", "src/a", True),
        ("**/*.py", "a.py", True),
        ("**/*.py", "a/b/c.py", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/a_test.py", False),
        ("*.py", "a/b.py", False),
        ("?.md", "a.md", True),
        ("?.md", "ab.md", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("*.{js,ts}", "x.ts", True),
        ("*.{js,ts}", "x.py", False),
        (".env", ".env", True),
        (".env", "sub/.env", False),
        ("**/.env", "sub/.env", True),
    ],
)
def test_one_glob_syntax_for_rules(tmp_path: Path, rule: str, path: str, matches: bool) -> None:
    p = gate(tmp_path, "default", allow=[f"Edit({rule})"])
    assert (p.decide(TOOL["Edit"], {"file_path": path}).verdict == "allow") is matches


def test_a_broken_pattern_is_a_settings_error() -> None:
    with pytest.raises(ValueError, match="pattern"):
        Rule.parse("Read([z-a])")


@pytest.mark.parametrize(
    ("deny", "tool", "path", "kind"),
    [
        ("Edit(.github/**)", "Write", ".github/workflows/ci.yml", "edit"),
        ("Write(.github/**)", "Edit", ".github/workflows/ci.yml", "edit"),
        ("Read(.env)", "Edit", ".env", "edit"),  # Edit shows the file's lines in its result
        ("Read(.env)", "Grep", ".env", "read"),
        ("Read(secrets/**)", "Glob", "secrets", "read"),
        ("Grep(secrets/**)", "Read", "secrets/a", "read"),
    ],
)
def test_a_path_deny_covers_every_tool_of_its_kind(tmp_path: Path, deny: str, tool: str, path: str, kind: str) -> None:
    p = gate(tmp_path, "bypassPermissions", deny=[deny])
    key = "file_path" if tool in ("Read", "Edit", "Write") else "path"
    assert p.decide(TOOL[tool], {key: path, "pattern": "*"}).verdict == "deny"


def test_a_read_deny_does_not_stop_writing_and_a_bare_rule_stays_its_own_tool(tmp_path: Path) -> None:
    p = gate(tmp_path, "bypassPermissions", deny=["Read(.env)", "Grep"])
    assert p.decide(TOOL["Write"], {"file_path": ".env"}).verdict == "allow"
    assert p.decide(TOOL["Read"], {"file_path": "a.py"}).verdict == "allow"
    assert p.decide(TOOL["Grep"], {"pattern": "x"}).verdict == "deny"


def test_allow_rules_cover_their_kind_too(tmp_path: Path) -> None:
    p = gate(tmp_path, "default", allow=["Edit(src/**)"])
    assert p.decide(TOOL["Write"], {"file_path": "src/new.py"}).verdict == "allow"
    assert p.decide(TOOL["Write"], {"file_path": "other/new.py"}).verdict == "ask"


# --- end to end: Grep and Glob do not print what a Read deny rule covers ----------------


def test_search_results_leave_out_denied_files(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".env").write_text("API_KEY=SECRET-ONE\n")
    (workspace / "config").mkdir()
    (workspace / "config" / "prod.env").write_text("TOKEN=SECRET-TWO\n")
    (workspace / "app.py").write_text("print('SECRET-FREE')\n")
    (workspace / ".todo-agent").mkdir()
    rules = '[permissions]\ndeny = ["Read(.env)", "Read(config/**)"]\n'
    (workspace / ".todo-agent" / "settings.toml").write_text(rules)
    calls = [
        {"name": "Grep", "arguments": {"pattern": "SECRET"}},  # ripgrep
        {"name": "Grep", "arguments": {"pattern": "SECRET(?=-)"}},  # ripgrep rejects look-ahead: Python walk
        {"name": "Glob", "arguments": {"pattern": "**/*"}},
        {"name": "Glob", "arguments": {"pattern": "**/*.env"}},
        {"name": "Grep", "arguments": {"pattern": "SECRET", "path": ".env"}},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "done"}]}))
    result = todo_agent(workspace, None, "-p", "x", "--model", f"script:{script}", "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    outputs = [e["output"] for e in events if e.get("type") == "ToolFinished"]
    assert "app.py:1:" in outputs[0] and "app.py:1:" in outputs[1]
    assert "app.py" in outputs[2]
    for output in outputs:
        assert "SECRET-ONE" not in output and "SECRET-TWO" not in output
    for output in outputs[:4]:
        assert ".env" not in output and "prod.env" not in output
    assert outputs[3] == "No files found"
    assert outputs[4].startswith("denied") and outputs[4].endswith("the permission rule Read(.env)")
