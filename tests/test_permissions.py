from __future__ import annotations

from pathlib import Path

import pytest

from todo_agent.core.permissions import PermissionPolicy, Rule


def policy(
    tmp_path: Path, mode: str = "default", allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()
) -> PermissionPolicy:
    return PermissionPolicy.from_strings(tmp_path, mode, allow, deny)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mode", "tool", "kind", "expected"),
    [
        ("default", "Read", "read", "allow"),
        ("default", "Edit", "edit", "ask"),
        ("default", "Bash", "execute", "ask"),
        ("default", "TaskCreate", "task", "allow"),
        ("acceptEdits", "Edit", "edit", "allow"),
        ("acceptEdits", "Bash", "execute", "ask"),
        ("plan", "Edit", "edit", "deny"),
        ("plan", "Bash", "execute", "deny"),
        ("plan", "Read", "read", "allow"),
        ("bypassPermissions", "Bash", "execute", "allow"),
    ],
)
def test_modes(tmp_path: Path, mode: str, tool: str, kind: str, expected: str) -> None:
    args = {"file_path": "a.py", "command": "ls"}
    assert policy(tmp_path, mode).decide(tool, kind, args).verdict == expected


def test_outside_workspace_always_asks_even_for_reads_and_accept_edits(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for mode in ("default", "acceptEdits"):
        p = PermissionPolicy.from_strings(ws, mode)  # type: ignore[arg-type]
        decision = p.decide("Edit", "edit", {"file_path": str(tmp_path / "other.py")})
        assert decision.verdict == "ask" and decision.outside_workspace
        assert p.decide("Read", "read", {"file_path": "../x"}).verdict == "ask"
    inside = PermissionPolicy.from_strings(ws, "acceptEdits")
    assert inside.decide("Edit", "edit", {"file_path": str(ws / "in.py")}).verdict == "allow"


def test_rules_allow_deny_and_deny_wins(tmp_path: Path) -> None:
    p = policy(tmp_path, allow=("Bash(pytest:*)", "Bash(git status)", "Edit(src/**)"), deny=("Bash(git push:*)",))
    assert p.decide("Bash", "execute", {"command": "pytest -q tests"}).verdict == "allow"
    assert p.decide("Bash", "execute", {"command": "pytest"}).verdict == "allow"
    assert p.decide("Bash", "execute", {"command": "pytestx"}).verdict == "ask"
    assert p.decide("Bash", "execute", {"command": "git status"}).verdict == "allow"
    assert p.decide("Bash", "execute", {"command": "git status; rm -rf /"}).verdict == "ask"
    assert p.decide("Edit", "edit", {"file_path": "src/pkg/a.py"}).verdict == "allow"
    assert p.decide("Edit", "edit", {"file_path": "tests/a.py"}).verdict == "ask"
    bypass = policy(tmp_path, "bypassPermissions", deny=("Bash(git push:*)",))
    assert bypass.decide("Bash", "execute", {"command": "git push origin"}).verdict == "deny"


def test_suggested_rules_and_cycle(tmp_path: Path) -> None:
    p = policy(tmp_path)
    assert p.suggest_rule("Bash", {"command": "pytest -q"}) == "Bash(pytest:*)"
    assert p.suggest_rule("Bash", {"command": "git diff HEAD"}) == "Bash(git diff:*)"
    assert p.suggest_rule("Edit", {"file_path": "src/a.py"}) == "Edit(src/**)"
    assert p.suggest_rule("Write", {"file_path": "a.py"}) == "Write(a.py)"
    p.add_session_rule("Bash(pytest:*)")
    assert p.decide("Bash", "execute", {"command": "pytest -x"}).verdict == "allow"
    assert [p.cycle_mode() for _ in range(4)] == ["acceptEdits", "plan", "bypassPermissions", "default"]


@pytest.mark.parametrize("bad", ["", "Bash(", "rm -rf"])
def test_bad_rules_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        Rule.parse(bad)
