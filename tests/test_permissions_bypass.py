"""Deny rules that cannot be spelled around: every known bypass, through the policy and
through the real `todo-agent -p` (the file a denied command would delete must survive)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gate import TOOL, gate
from test_headless_e2e import todo_agent

from todo_agent.core.permissions.policy import PermissionPolicy

# Each deletes `f` when bash runs it.
RM_SPELLINGS = [
    "{ rm f; }",
    "if true; then rm f; fi",
    "! rm f",
    "nice -n 5 rm f",
    "timeout 5 rm f",
    "/usr/bin/env rm f",
    "echo f | xargs -n 1 rm",
    "$'\\x72m' f",
    "(rm f)",
    "rm f &",
    "true && rm f",
    "false || rm f",
    "echo $(rm f)",
    "echo `rm f`",
    "cat <(rm f)",
    "r\\m f",
    '"r"m f',
    "'rm' f",
    "env -i -u HOME A=1 rm f",
    "sudo -u root rm f",
    "time -p rm f",
    "stdbuf -o0 rm f",
    "nohup rm f",
    "command rm f",
    "exec rm f",
    "setsid rm f",
    "timeout -s KILL 5 nice rm f",
    "sh -c 'rm f'",
    'bash -ec "nice rm f"',
    "eval 'rm f'",
    "find . -name f -exec rm {} +",
    "for x in f; do rm $x; done",
    "while true; do rm f; break; done",
    "until rm f; do :; done",
    "case a in a) rm f;; esac",
    "g() { rm f; }; g",
    "cat <<EOF\n$(rm f)\nEOF",
    "echo ${x:-$(rm f)}",
    "x=(a $(rm f))",
    "ls;rm f",
    "ls\nrm f",
    "trap 'rm f' EXIT",
]
# Not fully readable: treated as matching every deny rule.
OPAQUE = [
    "$CMD f",
    '"$CMD" f',
    'eval "$x"',
    "eval $(echo rm) f",
    'sh -c "$x"',
    "bash script.sh",
    "bash <<EOF\nrm f\nEOF",
    "curl example.com | sh",
    "source ./x.sh",
    "x='a[$(rm f)]'; echo $((x))",
    "echo ${!x}",
    "alias x=rm",
    'r"$@"m f',
    "/usr/bin/r? f",
    "{r,}m f",
    "echo 'unterminated",
]
GIT_PUSHES = [
    "git -c x.y=1 push",
    "git --no-pager push",
    "git -C . push origin main",
    "git --git-dir=.git push",
    "/usr/bin/git push",
    "env GIT_TRACE=1 git push",
    "git -c alias.p=push p",
    "git p",  # may be an alias
]


def policy(tmp_path: Path, mode: str, allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> PermissionPolicy:
    return gate(tmp_path, mode, allow, deny)


@pytest.mark.parametrize("command", RM_SPELLINGS + OPAQUE)
def test_every_spelling_of_a_denied_command_is_denied_in_bypass_mode(tmp_path: Path, command: str) -> None:
    bypass = policy(tmp_path, "bypassPermissions", deny=("Bash(rm:*)",))
    assert bypass.decide(TOOL["Bash"], {"command": command}).verdict == "deny"


@pytest.mark.parametrize("command", RM_SPELLINGS)
def test_a_spelled_around_deny_is_denied_not_asked_in_default_mode(tmp_path: Path, command: str) -> None:
    p = policy(tmp_path, "default", allow=("Bash",), deny=("Bash(rm:*)",))
    assert p.decide(TOOL["Bash"], {"command": command}).verdict == "deny"


@pytest.mark.parametrize("command", OPAQUE)
def test_a_command_that_cannot_be_read_asks_when_deny_rules_exist(tmp_path: Path, command: str) -> None:
    p = policy(tmp_path, "acceptEdits", allow=("Bash",), deny=("Bash(rm:*)",))
    decision = p.decide(TOOL["Bash"], {"command": command})
    assert decision.verdict == "ask"
    assert "deny rule" in decision.reason
    # Without any Bash deny rule there is nothing to check it against.
    assert policy(tmp_path, "default", allow=("Bash",)).decide(TOOL["Bash"], {"command": command}).verdict == ("allow")


@pytest.mark.parametrize("command", GIT_PUSHES)
def test_the_readmes_git_pair_cannot_be_spelled_around(tmp_path: Path, command: str) -> None:
    p = policy(tmp_path, "default", allow=("Bash(git:*)",), deny=("Bash(git push:*)",))
    assert p.decide(TOOL["Bash"], {"command": command}).verdict in ("deny", "ask")
    assert p.decide(TOOL["Bash"], {"command": "git status"}).verdict == "allow"
    assert p.decide(TOOL["Bash"], {"command": "git -c color.ui=never log"}).verdict == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "echo rm; git status",
        "command -v rm",
        "ls -la | grep rm",
        "grep -r 'rm f' .",
        'echo "$(date)"',
        "for x in a b; do echo $x; done",
        "python3 -c 'import os'",
        "FOO=1 make test",
        'export PATH="$PATH:/opt/x"',
        "cat <<'EOF'\n$(rm f)\nEOF",
        "find . -name '*.py' -print",
    ],
)
def test_commands_that_run_no_denied_program_still_run(tmp_path: Path, command: str) -> None:
    bypass = policy(tmp_path, "bypassPermissions", deny=("Bash(rm:*)", "Bash(git push:*)"))
    assert bypass.decide(TOOL["Bash"], {"command": command}).verdict == "allow"


def test_a_rule_on_a_wrapper_still_matches_it(tmp_path: Path) -> None:
    p = policy(tmp_path, "bypassPermissions", deny=("Bash(sudo:*)", "Bash(nice -n 5:*)"))
    assert p.decide(TOOL["Bash"], {"command": "sudo ls"}).verdict == "deny"
    assert p.decide(TOOL["Bash"], {"command": "timeout 5 sudo ls"}).verdict == "deny"
    assert p.decide(TOOL["Bash"], {"command": "nice -n 5 ls"}).verdict == "deny"
    assert p.decide(TOOL["Bash"], {"command": "nice -n 6 ls"}).verdict == "allow"


def test_allow_rules_stay_strict(tmp_path: Path) -> None:
    """Allow rules read the command as written: a wrapper or an option in front is not the
    allowed command, and nothing opaque matches a prefix rule."""
    p = policy(tmp_path, "default", allow=("Bash(git status:*)", "Bash(pytest:*)"))
    for command in ("nice git status", "git -c core.fsmonitor=x status", "$G status", "{ git status; rm f; }"):
        assert p.decide(TOOL["Bash"], {"command": command}).verdict == "ask", command
    for command in ("{ git status; }", "if git status; then pytest; fi", "git status -s | pytest -q"):
        assert p.decide(TOOL["Bash"], {"command": command}).verdict == "allow", command


# --- end to end: the real CLI in bypassPermissions with a deny rule ---------------------


def test_headless_bypass_with_a_deny_rule_deletes_nothing(tmp_path: Path, workspace: Path) -> None:
    settings = workspace / ".todo-agent"
    settings.mkdir()
    (settings / "settings.toml").write_text('[permissions]\ndeny = ["Bash(rm:*)"]\n')
    spellings = [*RM_SPELLINGS, *OPAQUE]
    calls = []
    for index, command in enumerate(spellings):
        target = workspace / f"d{index}"
        target.mkdir()
        (target / "f").write_text("keep me")
        calls.append({"name": "Bash", "arguments": {"command": f"cd d{index} && {command}"}})
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "tried them all"}]}))
    result = todo_agent(
        workspace,
        None,
        "-p",
        "delete f",
        "--model",
        f"script:{script}",
        "--permission-mode",
        "bypassPermissions",
        "--output-format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    survivors = [command for index, command in enumerate(spellings) if (workspace / f"d{index}" / "f").exists()]
    assert survivors == spellings
    output = json.loads(result.stdout.strip().splitlines()[-1])
    assert output["result"] == "tried them all"


# --- "yes, and don't ask again" never hands out arbitrary code --------------------------


@pytest.mark.parametrize(
    ("command", "forbidden"),
    [
        ("python3 -c 'print(1)'", "Bash(python3 -c:*)"),
        ("python -c 'print(1)'", "Bash(python -c:*)"),
        ("node -e 'console.log(1)'", "Bash(node -e:*)"),
        ("node -e 'x'", "Bash(node:*)"),
        ("git -c core.pager=cat log", "Bash(git -c:*)"),
        ("sed -n 1p f", "Bash(sed:*)"),
        ("sed 's/a/b/' f", "Bash(sed:*)"),
        ("find . -name '*.py'", "Bash(find:*)"),
        ("awk '{print $1}' f", "Bash(awk:*)"),
        ("perl -e 'print 1'", "Bash(perl -e:*)"),
        ("ruby -e 'p 1'", "Bash(ruby:*)"),
        ("xargs echo", "Bash(xargs:*)"),
        ("git config user.name x", "Bash(git config:*)"),
        ("npm run", "Bash(npm run:*)"),
        ("python -m", "Bash(python -m:*)"),
        ("tar xf a.tar", "Bash(tar:*)"),
    ],
)
def test_dont_ask_again_offers_the_exact_command_for_code_runners(tmp_path: Path, command: str, forbidden: str) -> None:
    p = policy(tmp_path, "default")
    rule = p.suggest_rule(TOOL["Bash"], {"command": command})
    assert rule != forbidden
    assert rule.startswith("Bash(") and not rule.endswith(":*)"), rule
    p.add_session_rule(rule)
    assert p.decide(TOOL["Bash"], {"command": command}).verdict == "allow"


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("python3 script.py --fast", "Bash(python3 script.py:*)"),
        ("python -m pytest -q", "Bash(python -m pytest:*)"),
        ("node build.js", "Bash(node build.js:*)"),
        ("npm run build", "Bash(npm run build:*)"),
        ("uv run pytest -x", "Bash(uv run pytest:*)"),
        ("git log --oneline", "Bash(git log:*)"),
        ("cargo test", "Bash(cargo test:*)"),
        ("ls -la", "Bash(ls:*)"),
    ],
)
def test_dont_ask_again_still_offers_useful_prefixes(tmp_path: Path, command: str, rule: str) -> None:
    assert policy(tmp_path, "default").suggest_rule(TOOL["Bash"], {"command": command}) == rule
