"""Done means verified: a task's check (`verify`) is asked about when it is set, runs when
the task is completed, and only a pass completes it; a sub-agent with nothing to show is
settled `unverified`. Scripted models over real files, real commands and the real gate."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import agent, call, finished, results, run, runtime_for
from test_agents_e2e import command, wait_for, write_script
from test_headless_e2e import todo_agent

from todo_agent.core.events import ToolFinished
from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.core.permissions.rules import Rule
from todo_agent.core.session.directory import list_sessions
from todo_agent.core.tasks.model import CheckRunning
from todo_agent.core.tasks.store import TaskStore

CHECK = "python3 check.py"
CHECK_PY = (
    "import pathlib, sys\n"
    "if not pathlib.Path('fixed.txt').exists():\n"
    "    print('FAILED test_api: fixed.txt is missing')\n"
    "    sys.exit(1)\n"
    "print('1 passed')\n"
)


def update(task: str, **more: Any) -> dict[str, Any]:
    return {"tool_calls": [call("TaskUpdate", taskId=task, **more)]}


def outputs(events: list[Any], tool: str) -> list[ToolFinished]:
    return [e for e in events if isinstance(e, ToolFinished) and e.name == tool]


async def test_a_failing_check_refuses_completion_and_a_pass_after_the_fix_verifies(workspace: Path) -> None:
    (workspace / "check.py").write_text(CHECK_PY)
    script = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="Fix the API", verify=CHECK)]},
            update("1", status="in_progress"),
            update("1", status="completed"),
            {"tool_calls": [call("Write", file_path="fixed.txt", content="yes\n")]},
            update("1", status="completed"),
            {"text": "fixed"},
        ]
    }
    runtime, model = runtime_for(workspace, script, permission_mode="acceptEdits", allow=[f"Bash({CHECK})"])
    events = await run(runtime, "fix it")
    refused, accepted = outputs(events, "TaskUpdate")[1:]
    assert refused.is_error and "FAILED test_api: fixed.txt is missing" in refused.output
    assert "exit code 1" in refused.output and "stays in_progress" in refused.output
    assert "verified" in accepted.output and not accepted.is_error
    (task,) = runtime.plan.tasks()
    assert task.status == "completed" and task.verified
    assert [run.exit for run in task.checks] == [1, 0] and "1 passed" in task.checks[-1].tail
    model.assert_complete()
    # Kept on disk: a reopened list knows the task is verified and its runs.
    reopened = TaskStore.load(runtime.session.tasks_path).snapshot()[0]
    assert reopened.verified and [r.exit for r in reopened.checks] == [1, 0]
    history = [v.what for v in runtime.plan.versions()]
    assert any("check failed (exit 1)" in what for what in history) and any("check passed" in what for what in history)


async def test_completing_in_one_call_with_a_new_check_runs_it(workspace: Path) -> None:
    """A check set by the very update that completes the task runs before it completes."""
    (workspace / "check.py").write_text(CHECK_PY)
    script = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="Fix the API")]},
            update("1", status="completed", verify=CHECK),
            {"text": "done?"},
        ]
    }
    runtime, _ = runtime_for(workspace, script, allow=[f"Bash({CHECK})"])
    events = await run(runtime, "go")
    assert outputs(events, "TaskUpdate")[0].is_error
    (task,) = runtime.plan.tasks()
    assert task.status == "in_progress" and task.verify == CHECK and not task.verified


@pytest.mark.script_may_end_early("no stops the turn")
async def test_setting_a_check_asks_as_its_command_would_and_no_refuses_it(workspace: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("no")

    script = {"steps": [{"tool_calls": [call("TaskCreate", subject="Prove it", verify="true")]}, {"text": "x"}]}
    runtime, _ = runtime_for(workspace, script)
    runtime.agent.approver = approver
    events = await run(runtime, "go")
    (request,) = asked
    assert request.preview == "true" and request.preview_kind == "command"
    assert request.suggested_rule.startswith("Bash(true") and "check" in request.summary
    assert outputs(events, "TaskCreate")[0].status == "denied"
    assert runtime.plan.tasks() == ()  # an empty or trivial check asks too; declined, nothing is made


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan"])
async def test_headless_denies_setting_a_check_no_rule_allows(workspace: Path, mode: str) -> None:
    script = {"steps": [{"tool_calls": [call("TaskCreate", subject="Prove it", verify="pytest -q")]}, {"text": "x"}]}
    runtime, _ = runtime_for(workspace, script, permission_mode=mode)
    events = await run(runtime, "go")
    (created,) = outputs(events, "TaskCreate")
    assert created.status == "denied" and "allow rule `Bash(pytest:*)`" in created.output
    assert runtime.plan.tasks() == ()


async def test_plan_mode_may_set_a_check_a_rule_allows(workspace: Path) -> None:
    script = {"steps": [{"tool_calls": [call("TaskCreate", subject="Prove it", verify="pytest -q")]}, {"text": "x"}]}
    runtime, _ = runtime_for(workspace, script, permission_mode="plan", allow=["Bash(pytest:*)"])
    await run(runtime, "plan it")
    assert [t.verify for t in runtime.plan.tasks()] == ["pytest -q"]


async def test_a_deny_rule_wins_when_the_check_is_set_and_again_when_it_runs(workspace: Path) -> None:
    script = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="A", verify="rm -rf build")]},
            {"tool_calls": [call("TaskCreate", subject="B", verify="python3 -c 'print(1)'")]},
            {"text": "planned"},
            update("1", status="completed"),
            {"text": "x"},
        ]
    }
    runtime, _ = runtime_for(workspace, script, permission_mode="bypassPermissions", deny=["Bash(rm:*)"])
    first, _ = outputs(await run(runtime, "plan"), "TaskCreate")
    assert first.status == "denied" and "Bash(rm:*)" in first.output
    runtime.permissions.deny.append(Rule.parse("Bash(python3:*)"))  # a rule added after the check was set
    (completion,) = outputs(await run(runtime, "finish"), "TaskUpdate")
    assert completion.is_error and "Bash(python3:*)" in completion.output and "cannot run" in completion.output
    assert [(t.subject, t.status) for t in runtime.plan.tasks()] == [("B", "pending")]


async def test_a_check_that_hangs_is_killed_at_its_limit(workspace: Path) -> None:
    script = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="Slow", verify="sleep 30")]},
            update("1", status="completed"),
            {"text": "x"},
        ]
    }
    runtime, _ = runtime_for(workspace, script, permission_mode="bypassPermissions", check_timeout=1)
    started = time.monotonic()
    events = await run(runtime, "go")
    assert time.monotonic() - started < 15
    refused = outputs(events, "TaskUpdate")[0]
    assert refused.is_error and "did not finish within its limit" in refused.output
    (task,) = runtime.plan.tasks()
    assert task.status == "in_progress" and task.checks[-1].exit is None and task.check_running is None


@pytest.mark.script_may_end_early("the turn is interrupted")
async def test_an_interrupt_kills_a_running_check_and_leaves_the_task_open(workspace: Path) -> None:
    script = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="Slow", verify="sleep 60; echo never")]},
            update("1", status="completed"),
            {"text": "x"},
        ]
    }
    runtime, _ = runtime_for(workspace, script, permission_mode="bypassPermissions")
    recorded = asyncio.Event()
    real_started = runtime.store.check_started

    async def started(task_id: str, running: CheckRunning) -> None:
        await real_started(task_id, running)
        recorded.set()

    runtime.store.check_started = started  # type: ignore[method-assign]
    turn = asyncio.create_task(run(runtime, "go"))
    await asyncio.wait_for(recorded.wait(), 20)
    running = runtime.plan.tasks()[0].check_running
    assert running is not None
    runtime.turn.interrupt()
    await asyncio.wait_for(turn, 20)
    (task,) = runtime.plan.tasks()
    assert task.status != "completed" and task.checks[-1].exit is None and task.check_running is None
    wait_for(lambda: not group_alive(running.pgid), 10)  # SIGKILLed: gone once the kernel has torn it down


async def test_todowrite_runs_the_check_of_an_item_it_completes(workspace: Path) -> None:
    (workspace / "check.py").write_text(CHECK_PY)
    items = [{"content": "Fix the API", "status": "in_progress", "verify": CHECK}]
    done = [{"content": "Fix the API", "status": "completed"}]  # no verify: the task keeps its check
    script = {
        "steps": [
            {"tool_calls": [call("TodoWrite", todos=items)]},
            {"tool_calls": [call("TodoWrite", todos=done)]},
            {"tool_calls": [call("Write", file_path="fixed.txt", content="y\n")]},
            {"tool_calls": [call("TodoWrite", todos=done)]},
            {"text": "ok"},
        ]
    }
    runtime, _ = runtime_for(
        workspace, script, tasks_version="v1", permission_mode="acceptEdits", allow=[f"Bash({CHECK})"]
    )
    events = await run(runtime, "go")
    writes = outputs(events, "TodoWrite")
    assert writes[1].is_error and "fixed.txt is missing" in writes[1].output and "unchanged" in writes[1].output
    assert not writes[2].is_error and "verified" in writes[2].output
    (task,) = runtime.plan.tasks()
    assert task.verified and task.verify == CHECK


async def test_dropping_a_todo_item_that_has_a_check_asks(workspace: Path) -> None:
    items = [{"content": "Fix the API", "status": "pending", "verify": "pytest -q"}]
    script = {
        "steps": [
            {"tool_calls": [call("TodoWrite", todos=items)]},
            {"tool_calls": [call("TodoWrite", todos=[{"content": "Other", "status": "pending"}])]},
            {"text": "ok"},
        ]
    }
    runtime, _ = runtime_for(workspace, script, tasks_version="v1")
    asked: list[ApprovalRequest] = []
    answers = [ApprovalAnswer("yes"), ApprovalAnswer("feedback", "keep it")]

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return answers[len(asked) - 1]

    runtime.agent.approver = approver
    events = await run(runtime, "go")
    assert [r.summary.split(":")[0] for r in asked] == ["Set the check of task #1", "Delete task #1, which has a check"]
    assert [r.preview for r in asked] == ["pytest -q", "pytest -q"]
    dropped = outputs(events, "TodoWrite")[1]
    assert dropped.status == "denied" and "keep it" in dropped.output
    assert [t.subject for t in runtime.plan.tasks()] == ["Fix the API"]


async def test_a_child_that_claims_its_task_with_nothing_done_comes_back_unverified(workspace: Path) -> None:
    script = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="Write the docs")]},
            {"tool_calls": [agent("Write the docs", "write docs.md", task_id="1")]},
            {"text": "x"},
        ],
        "agents": [
            {
                "match": "write docs",
                "steps": [update("1", status="completed"), {"text": "All done, docs written!"}],
            }
        ],
    }
    runtime, _ = runtime_for(workspace, script)
    events = await run(runtime, "go")
    ended = finished(events)["general-1"]
    assert ended.status == "unverified" and "no tool call besides the task tools" in ended.reason
    (result,) = results(events)
    assert "[general-1] unverified" in result.output and result.is_error
    (task,) = runtime.plan.tasks()
    assert task.status == "pending" and task.attempts[-1].outcome == "unverified"


async def test_a_childs_task_with_a_check_is_completed_only_through_it(workspace: Path) -> None:
    (workspace / "check.py").write_text(CHECK_PY)
    script = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="Fix it", verify=CHECK)]},
            {"tool_calls": [agent("Fix it", "fix it", task_id="1")]},
            {"text": "x"},
        ],
        "agents": [
            {
                "match": "fix it",
                "steps": [
                    update("1", status="completed"),
                    {"tool_calls": [call("Write", file_path="fixed.txt", content="y\n")]},
                    update("1", status="completed"),
                    {"text": "fixed"},
                ],
            }
        ],
    }
    runtime, _ = runtime_for(workspace, script, permission_mode="acceptEdits", allow=[f"Bash({CHECK})"])
    events = await run(runtime, "go")
    assert finished(events)["general-1"].status == "completed"
    (task,) = runtime.plan.tasks()
    assert task.status == "completed" and task.verified and [r.exit for r in task.checks] == [1, 0]


def test_kill_9_during_a_check_then_continue_stops_it_and_leaves_the_task_open(workspace: Path, tmp_path: Path) -> None:
    home = Path(os.environ["TODO_AGENT_HOME"])
    check = 'python3 -c \'import pathlib, time; pathlib.Path("started").write_text("1"); time.sleep(120)\''
    script = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="Slow", verify=check)]},
            update("1", status="completed"),
            {"text": "never"},
        ]
    }
    model = write_script(tmp_path / "s.json", script)
    args = ["-p", "go", "--model", model, "--tasks", "v2", "--permission-mode", "bypassPermissions"]
    proc = subprocess.Popen([*command(), *args], cwd=workspace, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for((workspace / "started").exists)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    session = list_sessions(workspace)[0]
    saved = json.loads(session.path.with_name(f"{session.id}.tasks.json").read_text())
    pgid = saved["tasks"][0]["check_running"]["pgid"]
    os.killpg(pgid, 0)  # the check outlived todo-agent
    # Two answers: the task is open again, so the stop check sends the model back once.
    after = write_script(tmp_path / "after.json", {"steps": [{"text": "resumed"}, {"text": "it is still open"}]})
    result = todo_agent(
        workspace, None, "-p", "and now?", "--continue", "--model", after, "--tasks", "v2", "--output-format", "json"
    )
    assert result.returncode == 0, result.stderr
    wait_for(lambda: not group_alive(pgid), limit=10)
    (task,) = json.loads(result.stdout)["tasks"]
    assert task["status"] != "completed" and task["checks"][-1]["exit"] is None
    assert task.get("check_running") is None
    assert home.exists()


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (a zombie nobody reaped does not:
    in a container, PID 1 may never reap the orphans a killed group leaves)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False
