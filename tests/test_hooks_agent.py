"""Hooks in a real runtime: scripted model, real tools, real task store, real hook scripts."""

from __future__ import annotations

import asyncio
import json
import shutil
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from test_hooks import RECORD_GROUP, group_members, read_pid, wait_for

from todo_agent.core.events import Event, HookResult, Notice, ToolFinished, TurnEnd
from todo_agent.core.hooks.spec import HookEvent, HookSpec
from todo_agent.core.hooks.trust import trust_path
from todo_agent.core.hooks.wiring import MAX_STOP_CONTINUATIONS
from todo_agent.core.model.scripted import ScriptedModel, ScriptStep
from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config, load_config, user_settings_path

RECORD = 'cat >> "$CLAUDE_PROJECT_DIR/hooks.jsonl"; echo >> "$CLAUDE_PROJECT_DIR/hooks.jsonl"'
"""A hook that appends its input, one JSON object a line, to hooks.jsonl."""


def recorded(workspace: Path) -> list[dict[str, Any]]:
    path = workspace / "hooks.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def tc(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def make_runtime(
    workspace: Path, steps: list[Any], *hooks: HookSpec, tasks: str = "v2", **config: Any
) -> tuple[Runtime, ScriptedModel]:
    model = ScriptedModel.from_data(steps)
    settings = Config(workspace=workspace, hooks=list(hooks), tasks_version=tasks, **config)  # type: ignore[arg-type]
    return Runtime.create(settings, model=model), model


async def turn(runtime: Runtime, prompt: str) -> list[Event]:
    async with aclosing(runtime.agent.run_turn(prompt)) as events:
        return [event async for event in events]


def hook_results(events: list[Event]) -> list[HookResult]:
    return [e for e in events if isinstance(e, HookResult)]


def tool_messages(runtime: Runtime) -> list[str]:
    return [str(m["content"]) for m in runtime.sessions.history if m["role"] == "tool"]


def common(runtime: Runtime, workspace: Path, event: str) -> dict[str, Any]:
    return {
        "session_id": runtime.session.id,
        "transcript_path": str(runtime.session.path),
        "cwd": str(workspace),
        "permission_mode": runtime.permissions.mode,
        "hook_event_name": event,
    }


# --- UserPromptSubmit and SessionStart ----------------------------------------------------


async def test_prompt_submit_stdout_reaches_the_model_after_the_prompt(workspace: Path) -> None:
    hook = HookSpec("UserPromptSubmit", f"{RECORD}; echo 'Current branch: feature/x'")
    runtime, model = make_runtime(workspace, [{"text": "ok"}], hook)
    events = await turn(runtime, "what branch?")
    assert events[-1] == TurnEnd("done", "ok")
    sent = model.requests[0]
    assert sent[-2] == {"role": "user", "content": "what branch?"}
    assert sent[-1] == {
        "role": "user",
        "content": "<system-reminder>\nUserPromptSubmit hook additional context:\n"
        "Current branch: feature/x\n</system-reminder>",
    }
    assert recorded(workspace) == [{**common(runtime, workspace, "UserPromptSubmit"), "prompt": "what branch?"}]


@pytest.mark.script_may_end_early(
    "the step is a sentinel: `model.used == 0` proves the blocked prompt never reached it"
)
async def test_a_blocked_prompt_is_not_sent_and_not_kept(workspace: Path) -> None:
    hook = HookSpec("UserPromptSubmit", "echo 'no secrets in prompts' >&2; exit 2")
    runtime, model = make_runtime(workspace, [{"text": "never asked"}], hook)
    events = await turn(runtime, "my password is hunter2")
    assert model.used == 0 and runtime.sessions.history == []
    assert not runtime.session.path.exists()  # nothing was written for a prompt that was never sent
    [result] = hook_results(events)
    assert (result.status, result.message) == ("blocked", "no secrets in prompts")
    assert Notice("prompt not sent: a UserPromptSubmit hook blocked it: no secrets in prompts", "warning") in events
    assert events[-1] == TurnEnd("blocked")


async def test_session_start_context_goes_out_once_with_the_first_prompt(workspace: Path) -> None:
    hook = HookSpec("SessionStart", f"{RECORD}; echo 'TODO.md has 3 open items'", matcher="startup|resume")
    runtime, model = make_runtime(workspace, [{"text": "one"}, {"text": "two"}], hook)
    events = await runtime.sessions.start("startup")
    assert [r.status for r in hook_results(events)] == ["ok"]
    await turn(runtime, "first")
    await turn(runtime, "second")
    context = "<system-reminder>\nSessionStart hook additional context:\nTODO.md has 3 open items\n</system-reminder>"
    assert [m["content"] for m in model.requests[0][1:]] == ["first", context]
    assert [m["content"] for m in model.requests[1] if m["role"] == "user"] == ["first", context, "second"]
    assert recorded(workspace) == [{**common(runtime, workspace, "SessionStart"), "source": "startup"}]
    assert await runtime.sessions.start("clear") == []  # the matcher leaves /new out


async def test_session_start_context_waits_past_a_blocked_prompt(workspace: Path) -> None:
    runtime, model = make_runtime(
        workspace,
        [{"text": "ok"}],
        HookSpec("SessionStart", "echo 'hello from start'"),
        HookSpec("UserPromptSubmit", "grep -q secret && { echo nope >&2; exit 2; }; exit 0"),
    )
    await runtime.sessions.start("startup")
    assert (await turn(runtime, "a secret"))[-1] == TurnEnd("blocked")
    await turn(runtime, "fine")
    assert "hello from start" in str(model.requests[0][-1]["content"])


# --- PreToolUse and PostToolUse ---------------------------------------------------------


async def test_pre_tool_use_exit_2_stops_bash_and_the_model_gets_stderr(workspace: Path) -> None:
    hook = HookSpec("PreToolUse", f"{RECORD}; echo 'git push is not allowed here' >&2; exit 2", matcher="Bash")
    steps = [{"tool_calls": [tc("Bash", command="touch pushed")]}, {"text": "understood"}]
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("yes")

    runtime, model = make_runtime(workspace, steps, hook)
    runtime.set_approver(approver)
    events = await turn(runtime, "push it")
    assert not (workspace / "pushed").exists()
    assert asked == []  # the hook comes before the permission check: nobody is asked about a refused call
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.status == "denied" and finished.is_error
    assert finished.output == "PreToolUse hook blocked this call: git push is not allowed here"
    assert model.requests[1][-1] == {"role": "tool", "tool_call_id": finished.call_id, "content": finished.output}
    assert hook_results(events)[0].status == "blocked"
    [received] = recorded(workspace)
    assert received == {
        **common(runtime, workspace, "PreToolUse"),
        "tool_name": "Bash",
        "tool_input": {"command": "touch pushed"},
        "tool_use_id": finished.call_id,
    }


async def test_pre_tool_use_matcher_and_exit_0_let_the_call_run(workspace: Path) -> None:
    runtime, _ = make_runtime(
        workspace,
        [{"tool_calls": [tc("Bash", command="echo hi > made"), tc("Read", file_path="made")]}, {"text": "done"}],
        HookSpec("PreToolUse", f"{RECORD}; exit 0", matcher="Bash"),
        HookSpec("PreToolUse", "echo 'reads are off' >&2; exit 2", matcher="Read|Grep"),
        permission_mode="bypassPermissions",
    )
    await turn(runtime, "go")
    assert (workspace / "made").read_text() == "hi\n"
    assert [r["tool_name"] for r in recorded(workspace)] == ["Bash"]
    assert tool_messages(runtime) == ["(no output)", "PreToolUse hook blocked this call: reads are off"]


async def test_pre_tool_use_blocks_reads_in_a_concurrent_group(workspace: Path) -> None:
    (workspace / "a.txt").write_text("A\n")
    (workspace / "b.txt").write_text("B\n")
    hook = HookSpec("PreToolUse", "grep -q b.txt && { echo 'not b' >&2; exit 2; }; exit 0", matcher="Read")
    runtime, _ = make_runtime(
        workspace, [{"tool_calls": [tc("Read", file_path="a.txt"), tc("Read", file_path="b.txt")]}, {"text": "x"}], hook
    )
    await turn(runtime, "read both")
    first, second = tool_messages(runtime)
    assert "A" in first and second == "PreToolUse hook blocked this call: not b"


async def test_post_tool_use_runs_ruff_format_after_an_edit(workspace: Path) -> None:
    ruff = shutil.which("ruff")
    assert ruff is not None
    (workspace / "app.py").write_text("x = 1\n")
    # The input is read once: recorded, then the file it names is formatted.
    command = (
        'input=$(cat); printf "%s\\n" "$input" >> hooks.jsonl; '
        f'{ruff} format --quiet "$(printf "%s" "$input" | python3 -c \'import json,sys; '
        'print(json.load(sys.stdin)["tool_input"]["file_path"])\')"'
    )
    hook = HookSpec("PostToolUse", command, matcher="Edit|Write")
    edit = tc("Edit", file_path="app.py", old_string="x = 1\n", new_string="def f( a,b ):\n  return {'a':a,'b':b}\n")
    runtime, _ = make_runtime(
        workspace, [{"tool_calls": [edit]}, {"text": "edited"}], hook, permission_mode="acceptEdits"
    )
    await turn(runtime, "add f")
    assert (workspace / "app.py").read_text() == 'def f(a, b):\n    return {"a": a, "b": b}\n'
    [received] = recorded(workspace)
    assert received["hook_event_name"] == "PostToolUse" and received["tool_name"] == "Edit"
    assert received["tool_input"]["file_path"] == "app.py"
    assert received["tool_response"]["is_error"] is False
    assert "app.py" in received["tool_response"]["output"]


async def test_post_tool_use_exit_2_feedback_goes_to_the_model_with_the_result(workspace: Path) -> None:
    hook = HookSpec("PostToolUse", f"{RECORD}; echo 'lint: unused import os' >&2; exit 2", matcher="Bash")
    runtime, _ = make_runtime(
        workspace,
        [{"tool_calls": [tc("Bash", command="echo built")]}, {"text": "fixing"}],
        hook,
        permission_mode="bypassPermissions",
    )
    events = await turn(runtime, "build")
    [result] = tool_messages(runtime)
    assert (
        result == "built\n\n<system-reminder>\nPostToolUse hook feedback:\nlint: unused import os\n</system-reminder>"
    )
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.status == "ok"  # the call itself worked
    assert hook_results(events)[0].status == "blocked"
    assert recorded(workspace) == [
        {
            **common(runtime, workspace, "PostToolUse"),
            "tool_name": "Bash",
            "tool_input": {"command": "echo built"},
            "tool_use_id": finished.call_id,
            "tool_response": {"output": "built", "is_error": False},
        }
    ]


async def test_hooks_never_see_the_api_key(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    hook = HookSpec("PreToolUse", "env > env.txt")
    runtime, _ = make_runtime(workspace, [{"tool_calls": [tc("Glob", pattern="*")]}, {"text": "x"}], hook)
    await turn(runtime, "go")
    env = (workspace / "env.txt").read_text()
    assert "sk-test-secret" not in env and f"CLAUDE_PROJECT_DIR={workspace}" in env


# --- Stop -----------------------------------------------------------------------------------


async def test_stop_hook_continues_the_turn_with_its_reason(workspace: Path) -> None:
    # Blocks once (until the marker exists), then lets the turn end.
    hook = HookSpec(
        "Stop", f"{RECORD}; test -f checked && exit 0; touch checked; echo 'run the tests first' >&2; exit 2"
    )
    runtime, model = make_runtime(workspace, [{"text": "all done"}, {"text": "tests pass, done"}], hook)
    events = await turn(runtime, "fix it")
    assert events[-1] == TurnEnd("done", "tests pass, done")
    assert model.requests[1][-1] == {
        "role": "user",
        "content": "<system-reminder>\nStop hook feedback:\nrun the tests first\n</system-reminder>",
    }
    first, second = recorded(workspace)
    assert first == {
        **common(runtime, workspace, "Stop"),
        "stop_hook_active": False,
        "last_assistant_message": "all done",
    }
    assert second["stop_hook_active"] is True


async def test_a_stop_hook_that_always_blocks_cannot_loop_forever(workspace: Path) -> None:
    hook = HookSpec("Stop", "echo 'never satisfied' >&2; exit 2")
    steps = [{"text": f"attempt {n}"} for n in range(MAX_STOP_CONTINUATIONS + 1)]
    runtime, model = make_runtime(workspace, steps, hook)
    events = await turn(runtime, "go")
    model.assert_complete()
    assert events[-1] == TurnEnd("done", f"attempt {MAX_STOP_CONTINUATIONS}")
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert any(f"blocked the end of this turn {MAX_STOP_CONTINUATIONS + 1} times" in n for n in notices)
    # The next turn gets its own allowance.
    model.steps += [ScriptStep(text="again"), ScriptStep(text="and again")]
    events = await turn(runtime, "more")
    assert [e.text for e in events if isinstance(e, Notice)] == []
    assert model.used == MAX_STOP_CONTINUATIONS + 3


# --- task events ------------------------------------------------------------------------


async def test_task_completed_exit_2_keeps_the_task_in_progress_and_the_file_unchanged(workspace: Path) -> None:
    hook = HookSpec("TaskCompleted", f"{RECORD}; echo '2 tests failing' >&2; exit 2")
    steps = [
        {"tool_calls": [tc("TaskCreate", subject="Fix the tests"), tc("TaskUpdate", taskId="1", status="in_progress")]},
        {"text": "planned"},
        {"text": "still on it"},  # the unfinished-task check continues the turn once
        {"tool_calls": [tc("TaskUpdate", taskId="1", status="completed")]},
        {"text": "will fix the tests"},
        {"text": "really"},
    ]
    runtime, model = make_runtime(workspace, steps, hook)
    tasks_file = runtime.session.tasks_path
    await turn(runtime, "plan")
    before = tasks_file.read_bytes()
    events = await turn(runtime, "finish")
    model.assert_complete()
    assert tasks_file.read_bytes() == before
    assert runtime.store.get("1") is not None and runtime.store.get("1").status == "in_progress"  # type: ignore[union-attr]
    result = tool_messages(runtime)[-1]
    assert result == (
        'Error: TaskCompleted hook refused completing task #1 "Fix the tests": 2 tests failing\n'
        "The task list is unchanged."
    )
    assert [r.status for r in hook_results(events)] == ["blocked"]
    [received] = recorded(workspace)
    task = {
        "id": "1",
        "subject": "Fix the tests",
        "description": "",
        "status": "completed",
        "activeForm": "",
        "owner": "",
    }
    assert received == {
        **common(runtime, workspace, "TaskCompleted"),
        "task": task,
        "task_id": "1",
        "task_subject": "Fix the tests",
        "task_description": "",
    }


async def test_task_created_refusal_creates_nothing(workspace: Path) -> None:
    hook = HookSpec("TaskCreated", "echo 'one task at a time' >&2; exit 2", matcher="^Deploy")
    steps = [
        {"tool_calls": [tc("TaskCreate", subject="Write docs"), tc("TaskCreate", subject="Deploy it")]},
        {"text": "x"},
    ]
    runtime, _ = make_runtime(workspace, steps, hook)
    await turn(runtime, "go")
    assert [t.subject for t in runtime.store.snapshot()] == ["Write docs"]
    assert runtime.store.next_id == 2
    assert tool_messages(runtime)[1].startswith('Error: TaskCreated hook refused creating task #2 "Deploy it":')


async def test_todo_write_is_refused_whole_when_a_completion_is_refused(workspace: Path) -> None:
    hook = HookSpec("TaskCompleted", "echo 'tests fail' >&2; exit 2", matcher="tests")
    todos = [
        {"content": "Write code", "status": "completed", "activeForm": "Writing code"},
        {"content": "Run tests", "status": "in_progress", "activeForm": "Running tests"},
    ]
    done = [
        {**todos[0]},
        {**todos[1], "status": "completed"},
        {"content": "Ship", "status": "pending", "activeForm": "x"},
    ]
    steps = [
        {"tool_calls": [tc("TodoWrite", todos=todos)]},
        {"tool_calls": [tc("TodoWrite", todos=done)]},
        {"text": "x"},
    ]
    runtime, _ = make_runtime(workspace, steps, hook, tasks="v1")
    await turn(runtime, "go")
    assert [(t.subject, t.status) for t in runtime.store.snapshot()] == [
        ("Write code", "completed"),
        ("Run tests", "in_progress"),
    ]
    assert "TaskCompleted hook refused completing task #2" in tool_messages(runtime)[1]


async def test_task_events_fire_for_both_create_and_complete(workspace: Path) -> None:
    runtime, _ = make_runtime(
        workspace,
        [
            {"tool_calls": [tc("TaskCreate", subject="A", activeForm="Doing A")]},
            {"tool_calls": [tc("TaskUpdate", taskId="1", status="completed")]},
            {"text": "x"},
        ],
        HookSpec("TaskCreated", RECORD),
        HookSpec("TaskCompleted", RECORD),
    )
    await turn(runtime, "go")
    created, completed = recorded(workspace)
    task = {"id": "1", "subject": "A", "description": "", "status": "pending", "activeForm": "Doing A", "owner": ""}
    assert created == {
        **common(runtime, workspace, "TaskCreated"),
        "task": task,
        "task_id": "1",
        "task_subject": "A",
        "task_description": "",
    }
    assert completed["hook_event_name"] == "TaskCompleted" and completed["task"] == {**task, "status": "completed"}


async def test_panel_edits_ask_no_hooks(workspace: Path) -> None:
    runtime, _ = make_runtime(workspace, [], HookSpec("TaskCompleted", "exit 2"), HookSpec("TaskCreated", "exit 2"))
    task = await runtime.store.user_add("by hand")
    await runtime.store.user_set_status(task.id, "completed")
    assert runtime.store.snapshot()[0].status == "completed"


# --- interrupts -------------------------------------------------------------------------


async def test_interrupting_a_running_hook_kills_it_and_ends_the_turn(workspace: Path) -> None:
    hook = HookSpec("PreToolUse", f"{RECORD_GROUP}; sleep 300 & wait")
    runtime, _ = make_runtime(workspace, [{"tool_calls": [tc("Glob", pattern="*")]}], hook)
    events: list[Event] = []

    async def run() -> None:
        events.extend(await turn(runtime, "go"))

    task = asyncio.create_task(run())
    assert await wait_for(lambda: read_pid(workspace / "group.pid") is not None)
    group = read_pid(workspace / "group.pid")
    assert group is not None
    runtime.agent.interrupt()
    await task
    assert events[-1] == TurnEnd("interrupted")
    assert await wait_for(lambda: group_members(group) == [])
    assert tool_messages(runtime) == ["cancelled: the turn was interrupted before this call finished"]


# --- trust --------------------------------------------------------------------------------


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def test_project_hooks_run_only_once_trusted(workspace: Path) -> None:
    project = workspace / ".todo-agent/settings.toml"
    write(project, '[[hooks.UserPromptSubmit]]\ncommand = "echo project-hook"\n')
    write(user_settings_path(), '[[hooks.UserPromptSubmit]]\ncommand = "echo user-hook"\n')
    config = load_config(workspace, env={})
    runtime = Runtime.create(config, model=ScriptedModel.from_data([{"text": "1"}, {"text": "2"}]))
    assert [s.command for s in runtime.trust.untrusted_hooks] == ["echo project-hook"]
    notice = runtime.trust.hooks_notice()
    assert notice is not None and "--allow-project-hooks" in notice.text and "echo project-hook" in notice.text
    await turn(runtime, "first")
    assert "user-hook" in str(runtime.sessions.history[1]["content"]) and "project-hook" not in str(
        runtime.sessions.history[1]["content"]
    )

    runtime.trust.accept_hooks()
    assert runtime.trust.untrusted_hooks == [] and runtime.trust.hooks_notice() is None
    await turn(runtime, "second")
    assert "project-hook" in str(runtime.sessions.history[-2]["content"])
    assert json.loads(trust_path().read_text()) != {}

    # Remembered for the next start; a changed command asks again.
    assert Runtime.create(load_config(workspace, env={})).trust.untrusted_hooks == []
    write(project, '[[hooks.UserPromptSubmit]]\ncommand = "echo changed"\n')
    assert [s.command for s in Runtime.create(load_config(workspace, env={})).trust.untrusted_hooks] == ["echo changed"]
    # The user file (or the flag) can trust every project's hooks.
    write(user_settings_path(), "allow_project_hooks = true\n")
    assert Runtime.create(load_config(workspace, env={})).trust.untrusted_hooks == []


@pytest.mark.parametrize("event", ["UserPromptSubmit", "PreToolUse", "Stop"])
async def test_an_unreadable_trust_file_means_untrusted(workspace: Path, event: HookEvent) -> None:
    write(workspace / ".todo-agent/settings.toml", f'[[hooks.{event}]]\ncommand = "true"\n')
    write(trust_path(), "{not json")
    assert Runtime.create(load_config(workspace, env={})).trust.untrusted_hooks != []
