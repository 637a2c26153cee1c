"""Hooks as a new user meets them: `todo-agent -p` as a subprocess, a local OpenAI-compatible
server, hook scripts in the project's `.todo-agent/settings.toml`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from fake_openai import run_in_thread
from test_headless_e2e import tc, todo_agent

from todo_agent.core.session.directory import list_sessions
from todo_agent.core.settings import user_settings_path

GUARD = """#!/bin/sh
# Refuse `git push`; let everything else through.
command=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_input"].get("command", ""))')
case "$command" in
  *"git push"*) echo "git push is blocked in this repository: open a pull request instead" >&2; exit 2 ;;
esac
exit 0
"""


def project_hooks(workspace: Path, toml: str, scripts: dict[str, str] | None = None) -> None:
    settings = workspace / ".todo-agent" / "settings.toml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(toml)
    for name, body in (scripts or {}).items():
        path = workspace / ".todo-agent" / name
        path.write_text(body)
        path.chmod(0o755)


def tool_replies(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_pre_tool_use_exit_2_stops_bash_and_the_model_reads_why(workspace: Path) -> None:
    project_hooks(
        workspace,
        '[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = ".todo-agent/guard.sh"\n',
        {"guard.sh": GUARD},
    )
    responses = [
        {"tool_calls": [tc("Bash", command="git push origin main && touch pushed")]},
        {"tool_calls": [tc("Bash", command="touch allowed")]},
        {"text": "Pushing is blocked; I left it."},
    ]
    with run_in_thread(responses) as server:
        result = todo_agent(
            workspace, server.base_url, "-p", "push", "--permission-mode", "bypassPermissions", "--allow-project-hooks"
        )
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    assert not (workspace / "pushed").exists() and (workspace / "allowed").exists()
    assert tool_replies(requests[1]) == [
        "PreToolUse hook blocked this call: git push is blocked in this repository: open a pull request instead"
    ]
    # One line on stderr says which hook blocked what.
    assert (
        "todo-agent: PreToolUse hook blocked: .todo-agent/guard.sh (exit 2): git push is blocked in this repository"
        in result.stderr
    )


def test_untrusted_project_hooks_do_not_run_headless(workspace: Path) -> None:
    project_hooks(workspace, '[[hooks.PreToolUse]]\ncommand = "touch hook-ran; exit 2"\n')
    with run_in_thread([{"tool_calls": [tc("Bash", command="touch bash-ran")]}, {"text": "done"}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "go", "--permission-mode", "bypassPermissions")
    assert result.returncode == 0, result.stderr
    assert (workspace / "bash-ran").exists() and not (workspace / "hook-ran").exists()
    assert "1 hook(s) in" in result.stderr and "--allow-project-hooks" in result.stderr
    # The user file may trust project hooks for good.
    user_settings_path().parent.mkdir(parents=True, exist_ok=True)
    user_settings_path().write_text("allow_project_hooks = true\n")
    (workspace / "bash-ran").unlink()
    with run_in_thread([{"tool_calls": [tc("Bash", command="touch bash-ran")]}, {"text": "done"}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "go", "--permission-mode", "bypassPermissions")
    assert (workspace / "hook-ran").exists() and not (workspace / "bash-ran").exists()


def test_task_completed_exit_2_keeps_the_task_in_progress(workspace: Path) -> None:
    project_hooks(
        workspace,
        '[[hooks.TaskCompleted]]\ncommand = "python3 -m pytest -q -x >&2 || exit 2"\ntimeout = 60\n',
    )
    (workspace / "test_math.py").write_text("def test_add():\n    assert 1 + 1 == 3\n")
    responses = [
        {
            "tool_calls": [
                tc("TaskCreate", subject="Fix add", activeForm="Fixing add"),
                tc("TaskUpdate", taskId="1", status="in_progress"),
            ]
        },
        {"tool_calls": [tc("TaskUpdate", taskId="1", status="completed")]},
        {"text": "The tests still fail."},
        {"text": "The task stays open until they pass."},  # after the unfinished-task reminder
    ]
    with run_in_thread(responses) as server:
        result = todo_agent(
            workspace, server.base_url, "-p", "fix", "--tasks", "v2", "--allow-project-hooks", "--output-format", "json"
        )
        requests = list(server.requests)
    refusal = tool_replies(requests[2])[-1]
    assert refusal.startswith('Error: TaskCompleted hook refused completing task #1 "Fix add":')
    assert "assert 1 + 1 == 3" in refusal or "1 failed" in refusal
    assert refusal.endswith("The task list is unchanged.")
    summary = json.loads(result.stdout.splitlines()[-1])
    assert [(t["id"], t["status"]) for t in summary["tasks"]] == [("1", "in_progress")]
    session = list_sessions(workspace)[0]
    saved = json.loads(session.path.with_name(f"{session.id}.tasks.json").read_text())
    assert [t["status"] for t in saved["tasks"]] == ["in_progress"]


def test_user_prompt_submit_stdout_reaches_the_model(workspace: Path) -> None:
    project_hooks(workspace, '[[hooks.UserPromptSubmit]]\ncommand = "echo \\"Open issues: #12 flaky login test\\""\n')
    with run_in_thread([{"text": "Noted."}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "what is open?", "--allow-project-hooks")
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    users = [m["content"] for m in requests[0]["messages"] if m["role"] == "user"]
    assert users == [
        "what is open?",
        "<system-reminder>\nUserPromptSubmit hook additional context:\nOpen issues: #12 flaky login test\n"
        "</system-reminder>",
    ]


def test_a_blocked_prompt_exits_1_without_calling_the_model(workspace: Path) -> None:
    project_hooks(workspace, '[[hooks.UserPromptSubmit]]\ncommand = "echo \\"no prompts on Fridays\\" >&2; exit 2"\n')
    with run_in_thread([]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hello", "--allow-project-hooks")
        requests = list(server.requests)
    assert result.returncode == 1 and requests == []
    assert "prompt not sent: a UserPromptSubmit hook blocked it: no prompts on Fridays" in result.stderr


def test_post_tool_use_runs_ruff_format_after_an_edit(workspace: Path) -> None:
    ruff = shutil.which("ruff")
    assert ruff is not None
    fmt = f"""#!/bin/sh
file=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_input"]["file_path"])')
case "$file" in *.py) {ruff} format --quiet "$file" ;; esac
"""
    project_hooks(
        workspace, '[[hooks.PostToolUse]]\nmatcher = "Edit|Write"\ncommand = ".todo-agent/fmt.sh"\n', {"fmt.sh": fmt}
    )
    (workspace / "app.py").write_text("x = 1\n")
    edit = tc("Edit", file_path="app.py", old_string="x = 1\n", new_string="def add( a,b ):\n  return a+b\n")
    with run_in_thread([{"tool_calls": [edit]}, {"text": "Added add()."}]) as server:
        result = todo_agent(
            workspace,
            server.base_url,
            "-p",
            "add add()",
            "--permission-mode",
            "acceptEdits",
            "--allow-project-hooks",
            "--output-format",
            "stream-json",
        )
    assert result.returncode == 0, result.stderr
    assert (workspace / "app.py").read_text() == "def add(a, b):\n    return a + b\n"
    events = [json.loads(line) for line in result.stdout.splitlines()]
    hooks = [e for e in events if e["type"] == "HookResult"]
    assert [(h["hook_event"], h["command"], h["status"], h["exit_code"], h["source"]) for h in hooks] == [
        ("PostToolUse", ".todo-agent/fmt.sh", "ok", 0, "project")
    ]
    kinds = [e["type"] for e in events]
    assert kinds.index("HookResult") < kinds.index("ToolFinished")


def readme_example() -> str:
    """The worked example of the README's Hooks section, as written there."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Hooks", 1)[1].split("\n## ", 1)[0]
    return section.split("A worked example", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]


def test_the_readme_worked_example_does_what_it_says(workspace: Path) -> None:
    project_hooks(workspace, readme_example())
    (workspace / "app.py").write_text("x = 1\n")
    (workspace / "test_app.py").write_text("import app\n\ndef test_f():\n    assert app.f() == 1\n")
    edit = tc("Edit", file_path="app.py", old_string="x = 1\n", new_string="def f( ):\n  return 2\n")
    responses = [
        {
            "tool_calls": [
                tc("TaskCreate", subject="Add f"),
                tc("TaskUpdate", taskId="1", status="in_progress"),
                tc("Bash", command="git push origin main"),
                edit,
                tc("TaskUpdate", taskId="1", status="completed"),
            ]
        },
        {"text": "f returns 2 but the test wants 1."},
        {"text": "Leaving #1 in progress."},
    ]
    with run_in_thread(responses) as server:
        result = todo_agent(
            workspace,
            server.base_url,
            "-p",
            "add f",
            "--tasks",
            "v2",
            "--permission-mode",
            "bypassPermissions",
            "--allow-project-hooks",
            "--output-format",
            "json",
        )
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    replies = tool_replies(requests[1])
    assert replies[2] == "PreToolUse hook blocked this call: no pushing: open a PR"
    assert (workspace / "app.py").read_text() == "def f():\n    return 2\n"
    assert replies[4].startswith(
        'Error: TaskCompleted hook refused completing task #1 "Add f": tests fail; fix them first'
    )
    assert "assert 2 == 1" in replies[4]
    assert "TaskCompleted hook blocked: " in result.stderr and "(exit 2): tests fail; fix them first" in result.stderr
    assert [t["status"] for t in json.loads(result.stdout.splitlines()[-1])["tasks"]] == ["in_progress"]


def test_pre_compact_runs_before_a_compaction_with_claude_code_fields(workspace: Path) -> None:
    """PreCompact through the real CLI: a server that refuses anything over 5,000 tokens forces
    a compaction; the hook is told `trigger: auto` (an overflow is automatic, as in Claude Code)."""
    project_hooks(
        workspace,
        '[[hooks.PreCompact]]\ncommand = "cat > .todo-agent/pre-compact.json"\n',
    )
    (workspace / "module.txt").write_text("".join(f"{n:04d} a line of the module under review\n" for n in range(120)))
    responses = [
        {"tool_calls": [tc("Read", file_path="module.txt")]},
        {"tool_calls": [tc("Read", file_path="module.txt", offset=2)]},
        {"text": "Reviewed."},
    ]
    summary = {"text": "## Goal\nReview module.txt."}
    with run_in_thread(responses, context_limit=5000, without_tools=summary) as server:
        result = todo_agent(workspace, server.base_url, "-p", "review module.txt", "--allow-project-hooks")
    assert result.returncode == 0, result.stderr
    assert "compacted the conversation" in result.stderr
    told = json.loads((workspace / ".todo-agent" / "pre-compact.json").read_text())
    assert told["hook_event_name"] == "PreCompact" and told["trigger"] == "auto"
    assert told["custom_instructions"] == ""
    assert told["session_id"] and Path(told["transcript_path"]).exists()


def test_the_not_run_notice_shows_every_byte_of_a_hidden_command(workspace: Path, tmp_path: Path) -> None:
    """Headless cannot ask: its notice lists the commands, hidden parts visible."""
    project_hooks(
        workspace,
        '[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = "echo two\\u001b]0; true;touch X\\u0007"\n'
        '[[hooks.SessionStart]]\ncommand = """echo one' + "\n" * 61 + 'touch Y"""\n',
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    result = todo_agent(workspace, None, "-p", "hi", "--model", f"script:{script}")
    assert result.returncode == 0, result.stderr
    assert "PreToolUse [Bash]: echo two␛]0; true;touch X␇" in result.stderr
    assert "SessionStart: echo one␤×61touch Y" in result.stderr
    assert "\x1b" not in result.stderr
    assert not (workspace / "X").exists() and not (workspace / "Y").exists()
