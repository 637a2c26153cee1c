"""The hook runner: real shell scripts in temp dirs, real process groups."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_tools_bash import wait_for

from todo_agent.core.events import HookResult, Notice
from todo_agent.core.hooks.runner import HookRunner, hook_environment, run_hook
from todo_agent.core.hooks.spec import HookEvent, HookSpec, specs_from_table

COMMON = {"session_id": "s-1", "transcript_path": "/tmp/s-1.jsonl", "permission_mode": "default"}


def runner(workspace: Path, *specs: HookSpec, env: dict[str, str] | None = None) -> HookRunner:
    return HookRunner(
        specs, workspace, env=env if env is not None else hook_environment(workspace), common=lambda: dict(COMMON)
    )


def script(workspace: Path, name: str, body: str) -> str:
    """A real executable hook script; returns the command that runs it."""
    path = workspace / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return f"./{name}"


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group `pgid`, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            members.append(int(entry.name))
    return members


RECORD_GROUP = "cut -d' ' -f5 /proc/$$/stat > group.pid"
"""Shell code that writes the process group of the running hook to `group.pid`."""


def read_pid(path: Path) -> int | None:
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text.isdigit() else None


def results(outcome_events: tuple[Any, ...]) -> list[HookResult]:
    return [e for e in outcome_events if isinstance(e, HookResult)]


# --- input -----------------------------------------------------------------------------


async def test_the_hook_gets_one_json_object_on_stdin_with_claude_code_field_names(workspace: Path) -> None:
    command = script(workspace, "record.sh", 'cat > "$CLAUDE_PROJECT_DIR/got.json"\n')
    hooks = runner(workspace, HookSpec("PreToolUse", command, "Bash"))
    fields = {"tool_name": "Bash", "tool_input": {"command": "ls -la"}, "tool_use_id": "call_1"}
    outcome = await hooks.run("PreToolUse", fields, target="Bash")
    assert not outcome.blocked
    assert json.loads((workspace / "got.json").read_text()) == {
        "session_id": "s-1",
        "transcript_path": "/tmp/s-1.jsonl",
        "cwd": str(workspace),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la"},
        "tool_use_id": "call_1",
    }
    [result] = results(outcome.events)
    assert result == HookResult("PreToolUse", command, "ok", 0, "", result.elapsed, "user")


async def test_runs_in_the_workspace_without_api_keys_and_with_the_project_dir(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("MY_KEY_VAR", "sk-other")
    monkeypatch.setenv("KEEP_ME", "yes")
    env = hook_environment(workspace, ["MY_KEY_VAR"])
    command = "env > env.txt; pwd > pwd.txt; test -t 0 || echo file > stdin.txt"
    await runner(workspace, HookSpec("Stop", command), env=env).run("Stop", {})
    seen = dict(line.split("=", 1) for line in (workspace / "env.txt").read_text().splitlines() if "=" in line)
    assert "OPENAI_API_KEY" not in seen and "MY_KEY_VAR" not in seen
    assert seen["KEEP_ME"] == "yes"
    assert seen["CLAUDE_PROJECT_DIR"] == seen["TODO_AGENT_PROJECT_DIR"] == str(workspace)
    assert (workspace / "pwd.txt").read_text().strip() == str(workspace)


async def test_a_hook_that_never_reads_a_large_input_still_finishes(workspace: Path) -> None:
    hooks = runner(workspace, HookSpec("PostToolUse", "echo done >&2; exit 2"))
    big = {"tool_name": "Write", "tool_input": {"content": "x" * 2_000_000}}
    outcome = await hooks.run("PostToolUse", big, target="Write")
    assert outcome.blocked and outcome.reason == "done"


# --- exit codes and output -------------------------------------------------------------


async def test_exit_zero_continues_and_ignores_plain_stdout_for_tool_events(workspace: Path) -> None:
    outcome = await runner(workspace, HookSpec("PreToolUse", "echo chatter")).run("PreToolUse", {}, "Bash")
    assert not outcome.blocked and outcome.context == ()


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
async def test_stdout_is_context_for_session_start_and_prompt_submit(workspace: Path, event: HookEvent) -> None:
    outcome = await runner(workspace, HookSpec(event, "echo 'branch: main'; echo 'dirty: 2 files'")).run(event, {})
    assert outcome.context == ("branch: main\ndirty: 2 files",)
    assert outcome.context_text == "branch: main\ndirty: 2 files"


async def test_exit_two_blocks_with_stderr_as_the_reason(workspace: Path) -> None:
    command = script(workspace, "no_push.sh", "echo 'ignored stdout'\necho 'pushing is not allowed' >&2\nexit 2\n")
    outcome = await runner(workspace, HookSpec("PreToolUse", command, "Bash")).run("PreToolUse", {}, "Bash")
    assert outcome.blocked and outcome.reason == "pushing is not allowed"
    [result] = results(outcome.events)
    assert (result.status, result.exit_code, result.message) == ("blocked", 2, "pushing is not allowed")
    assert result.describe() == f"PreToolUse hook blocked: {command} (exit 2): pushing is not allowed"


async def test_exit_two_without_stderr_still_says_which_hook_blocked(workspace: Path) -> None:
    outcome = await runner(workspace, HookSpec("Stop", "exit 2")).run("Stop", {})
    assert outcome.blocked and outcome.reason == "blocked by the Stop hook `exit 2` (no reason given)"


async def test_session_start_cannot_block_so_exit_two_is_a_failure(workspace: Path) -> None:
    outcome = await runner(workspace, HookSpec("SessionStart", "echo nope >&2; exit 2")).run("SessionStart", {})
    assert not outcome.blocked
    [result] = results(outcome.events)
    assert (result.status, result.message) == ("failed", "nope")


async def test_any_other_exit_code_is_a_warning_and_the_work_goes_on(workspace: Path) -> None:
    command = "echo 'first line' >&2; echo 'second line' >&2; exit 3"
    outcome = await runner(workspace, HookSpec("PreToolUse", command)).run("PreToolUse", {}, "Edit")
    assert not outcome.blocked and outcome.reason == ""
    [result] = results(outcome.events)
    assert (result.status, result.exit_code, result.message) == ("failed", 3, "first line")
    assert result.noteworthy
    assert result.describe() == f"PreToolUse hook failed: {command} (exit 3): first line"


async def test_a_command_that_is_not_found_fails_with_its_message(workspace: Path) -> None:
    outcome = await runner(workspace, HookSpec("Stop", "./does-not-exist.sh")).run("Stop", {})
    [result] = results(outcome.events)
    assert result.status == "failed" and result.exit_code == 127 and "not found" in result.message


async def test_a_missing_workspace_fails_cleanly(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    outcome = await runner(gone, HookSpec("Stop", "true"), env={}).run("Stop", {})
    [result] = results(outcome.events)
    assert result.status == "failed" and result.exit_code is None and "cannot start" in result.message


@pytest.mark.parametrize(
    ("event", "stdout"),
    [
        ("PreToolUse", {"decision": "block", "reason": "use the Makefile"}),
        ("PostToolUse", {"decision": "block", "reason": "use the Makefile"}),
        ("Stop", {"decision": "block", "reason": "use the Makefile"}),
        ("TaskCompleted", {"decision": "block", "reason": "use the Makefile"}),
        (
            "PreToolUse",
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "use the Makefile",
                }
            },
        ),
    ],
)
async def test_json_decision_block_is_honoured(workspace: Path, event: HookEvent, stdout: dict[str, Any]) -> None:
    (workspace / "out.json").write_text(json.dumps(stdout))
    outcome = await runner(workspace, HookSpec(event, "cat out.json")).run(event, {}, "Bash")
    assert outcome.blocked and outcome.reason == "use the Makefile"
    [result] = results(outcome.events)
    assert (result.status, result.exit_code) == ("blocked", 0)


async def test_json_additional_context_and_system_message(workspace: Path) -> None:
    data = {
        "systemMessage": "formatted 1 file",
        "hookSpecificOutput": {"additionalContext": "ruff: 1 file reformatted"},
    }
    (workspace / "out.json").write_text(json.dumps(data))
    outcome = await runner(workspace, HookSpec("PostToolUse", "cat out.json")).run("PostToolUse", {}, "Edit")
    assert not outcome.blocked and outcome.context == ("ruff: 1 file reformatted",)
    assert Notice("PostToolUse hook: formatted 1 file", "warning") in outcome.events
    # A JSON object on a SessionStart is read as JSON, not pasted as text.
    outcome = await runner(workspace, HookSpec("SessionStart", "cat out.json")).run("SessionStart", {})
    assert outcome.context == ("ruff: 1 file reformatted",)


async def test_json_that_is_not_an_object_is_plain_text(workspace: Path) -> None:
    outcome = await runner(workspace, HookSpec("UserPromptSubmit", "echo '{not json'")).run("UserPromptSubmit", {})
    assert outcome.context == ("{not json",)


async def test_huge_output_is_capped(workspace: Path) -> None:
    command = "python3 -c \"print('x' * 200000)\"; python3 -c \"import sys; sys.stderr.write('e' * 200000)\"; exit 2"
    outcome = await runner(workspace, HookSpec("UserPromptSubmit", command)).run("UserPromptSubmit", {})
    assert outcome.blocked and len(outcome.reason) < 20_000 and "bytes omitted" in outcome.reason
    outcome = await runner(workspace, HookSpec("UserPromptSubmit", "python3 -c \"print('y' * 200000)\"")).run(
        "UserPromptSubmit", {}
    )
    assert len(outcome.context_text) < 11_000 and outcome.context_text.endswith("[hook output cut at 10000 characters]")


# --- several hooks ----------------------------------------------------------------------


async def test_hooks_of_one_event_run_concurrently_and_fold_into_one_outcome(workspace: Path) -> None:
    # Each waits for the other's file: only hooks that run at the same time can both finish.
    wait_for_file = "i=0; while [ ! -f {0} ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done; test -f {0} || exit 1"
    first = "touch a; " + wait_for_file.format("b") + "; echo one"
    second = "touch b; " + wait_for_file.format("a") + "; echo two >&2; exit 2"
    third = "echo three >&2; exit 2"
    hooks = runner(
        workspace,
        HookSpec("UserPromptSubmit", first),
        HookSpec("UserPromptSubmit", second),
        HookSpec("UserPromptSubmit", third),
    )
    outcome = await hooks.run("UserPromptSubmit", {"prompt": "hi"})
    assert [r.status for r in results(outcome.events)] == ["ok", "blocked", "blocked"]
    assert outcome.blocked and outcome.reason == "two\nthree"
    assert outcome.context == ("one",)


async def test_no_matching_hook_runs_nothing(workspace: Path) -> None:
    outcome = await runner(workspace, HookSpec("PreToolUse", "touch ran", "Bash")).run("PreToolUse", {}, "Edit")
    assert outcome.events == () and not (workspace / "ran").exists()


# --- timeouts and interrupts --------------------------------------------------------------


async def test_a_hook_past_its_timeout_is_killed_with_its_whole_process_group(workspace: Path) -> None:
    command = script(workspace, "hang.sh", f"sleep 300 &\necho $! > child.pid\n{RECORD_GROUP}\nwait\n")
    spec = HookSpec("PreToolUse", command, timeout=0.5)
    outcome = await runner(workspace, spec).run("PreToolUse", {}, "Bash")
    assert not outcome.blocked
    [result] = results(outcome.events)
    assert result.status == "timeout" and result.exit_code is None
    assert result.message == "timed out after 0.5 s; it and everything it started were killed"
    group, child = read_pid(workspace / "group.pid"), read_pid(workspace / "child.pid")
    assert group is not None and child is not None
    # The hook ran in a group of its own, with its child, and nothing of that group is left.
    assert group != os.getpgid(0) and os.getpgid(child) == group
    assert await wait_for(lambda: group_members(group) == [])


async def test_a_hook_that_ignores_sigterm_is_killed_anyway(workspace: Path) -> None:
    command = f"trap '' TERM; sleep 300 & {RECORD_GROUP}; wait"
    outcome = await runner(workspace, HookSpec("Stop", command, timeout=0.5)).run("Stop", {})
    assert results(outcome.events)[0].status == "timeout"
    group = read_pid(workspace / "group.pid")
    assert group is not None
    assert await wait_for(lambda: group_members(group) == [])


async def test_cancelling_kills_every_running_hook(workspace: Path) -> None:
    hooks = runner(
        workspace,
        HookSpec("Stop", "mkdir one; cd one; sleep 300 & " + RECORD_GROUP + "; wait"),
        HookSpec("Stop", "mkdir two; cd two; sleep 300 & " + RECORD_GROUP + "; wait"),
    )
    task = asyncio.create_task(hooks.run("Stop", {}))
    assert await wait_for(lambda: read_pid(workspace / "one/group.pid") and read_pid(workspace / "two/group.pid"))
    groups = [read_pid(workspace / "one/group.pid"), read_pid(workspace / "two/group.pid")]
    assert all(group_members(g) for g in groups if g is not None)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for group in groups:
        assert group is not None
        assert await wait_for(lambda group=group: group_members(group) == [])


async def test_a_background_job_holding_stdout_does_not_hold_up_the_hook(workspace: Path) -> None:
    spec = HookSpec("UserPromptSubmit", "echo ready; (sleep 300; echo late) & echo $! > bg.pid", timeout=30)
    run = (await run_hook(spec, b"{}", workspace, hook_environment(workspace))).process
    assert run.exit_code == 0 and run.stdout.strip() == "ready" and not run.timed_out
    background = read_pid(workspace / "bg.pid")
    assert background is not None
    os.killpg(os.getpgid(background), 9)


# --- matchers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "matcher", "target", "expected"),
    [
        ("PreToolUse", "", "Bash", True),
        ("PreToolUse", "*", "Bash", True),
        ("PreToolUse", "Bash", "Bash", True),
        ("PreToolUse", "Bash", "BashOutput", False),  # plain names match exactly, as in Claude Code
        ("PreToolUse", "Edit|Write", "Write", True),
        ("PreToolUse", "Edit|Write", "Read", False),
        ("PreToolUse", "Task.*", "TaskUpdate", True),  # anything else is a regex
        ("PreToolUse", "^(Read|Grep)$", "Glob", False),
        ("PostToolUse", "edit", "Edit", False),  # case-sensitive
        ("SessionStart", "startup", "startup", True),
        ("SessionStart", "startup", "resume", False),
        ("PreCompact", "auto", "manual", False),
        ("TaskCompleted", "tests", "Run the tests", True),  # task events: searched in the subject
        ("TaskCompleted", "^Deploy", "Run the tests", False),
        ("TaskCreated", "[", "anything", False),  # an invalid regex (settings refuse it) matches nothing
        ("UserPromptSubmit", "never", "whatever", True),  # ignored, as in Claude Code
        ("Stop", "never", None, True),
    ],
)
def test_matcher(event: HookEvent, matcher: str, target: str | None, expected: bool) -> None:
    assert HookSpec(event, "true", matcher).matches(target) is expected


def test_specs_from_a_settings_table_keep_their_source() -> None:
    table = {
        "PreToolUse": [{"matcher": "Bash", "command": "a", "timeout": 5}],
        "Stop": [{"command": "b"}, {"command": "c", "timeout": 1.5}],
    }
    assert specs_from_table(table, "project") == [
        HookSpec("PreToolUse", "a", "Bash", 5.0, "project"),
        HookSpec("Stop", "b", "", 60.0, "project"),
        HookSpec("Stop", "c", "", 1.5, "project"),
    ]


def test_a_long_or_multi_line_command_is_shortened_in_the_description() -> None:
    command = "jq -r .tool_input.command |\n  grep -q 'git push' && { echo 'no pushing: open a PR' >&2; exit 2; }"
    line = HookResult("PreToolUse", command, "blocked", 2, "no pushing").describe()
    assert line == (
        "PreToolUse hook blocked: jq -r .tool_input.command | grep -q 'git push' && { echo 'n… (exit 2): no pushing"
    )
