"""Goal mode: turns until every task is completed and every check passes, or a goal
budget ends it. Scripted models over real files, real checks and the real gate."""

from __future__ import annotations

import json
from contextlib import aclosing
from pathlib import Path

import pytest
from agent_helpers import call, runtime_for
from test_agents_e2e import write_script
from test_headless_e2e import todo_agent
from test_task_checks import CHECK, CHECK_PY, update

from todo_agent.core.events import Event, GoalProgress, Notice, TurnEnd
from todo_agent.core.goal import TERMS, standing, what_is_left
from todo_agent.core.runtime import Runtime
from todo_agent.core.tasks.model import CheckRun, Task


async def goal(runtime: Runtime, text: str) -> list[Event]:
    events: list[Event] = []
    async with aclosing(runtime.turn.run_goal(text)) as stream:
        async for event in stream:
            events.append(event)
    return events


def sent_back(runtime: Runtime) -> list[str]:
    """The messages the harness sent the model back with."""
    return [
        str(m["content"])
        for m in runtime.sessions.history
        if m["role"] == "user" and "The goal is not reached" in str(m["content"])
    ]


def ending(events: list[Event]) -> TurnEnd:
    ends = [e for e in events if isinstance(e, TurnEnd)]
    assert len(ends) == 1, ends  # one turn to the front end, however many the goal took
    return ends[0]


async def test_a_goal_runs_until_every_check_passes_without_another_prompt(workspace: Path) -> None:
    (workspace / "check.py").write_text(CHECK_PY)
    script = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="Fix the API", verify=CHECK)]},
            {"tool_calls": [call("TaskCreate", subject="Write the notes")]},
            update("1", status="in_progress"),
            update("1", status="completed"),  # refused: check.py fails
            {"text": "I think the API is fine now."},  # ends short: sent back
            {"tool_calls": [call("Write", file_path="fixed.txt", content="yes\n")]},
            update("1", status="completed"),
            {"text": "API fixed."},  # ends short again: #2 is open
            update("2", status="completed"),
            {"text": "All done."},
        ]
    }
    runtime, model = runtime_for(workspace, script, permission_mode="acceptEdits", allow=[f"Bash({CHECK})"])
    events = await goal(runtime, "fix the API and write the notes")
    model.assert_complete()
    assert ending(events) == TurnEnd("done", "All done.")
    first, second = sent_back(runtime)
    assert first.startswith("The goal is not reached yet (0/2 verified)")
    assert "#1 Fix the API (in_progress)" in first and "FAILED test_api: fixed.txt is missing" in first
    assert "#2 Write the notes (pending)" in first
    assert "#1" not in second and "#2 Write the notes (pending)" in second
    # The terms went with the prompt, once.
    assert [m["content"] for m in runtime.sessions.history if m["content"] == TERMS] == [TERMS]
    done = [e for e in events if isinstance(e, GoalProgress)][-1]
    assert (done.state, done.total, done.completed, done.verified, done.unchecked) == ("reached", 2, 2, 1, 1)
    assert done.requests == 10 and done.tokens > 0
    assert "goal reached: 1/2 verified · 1 without a check" in [e.text for e in events if isinstance(e, Notice)]


async def test_an_empty_list_is_no_goal_reached_the_model_is_told_to_plan(workspace: Path) -> None:
    script = {
        "steps": [
            {"text": "Done, nothing to do."},
            {"tool_calls": [call("TaskCreate", subject="Say hello")]},
            update("1", status="completed"),
            {"text": "Hello."},
        ]
    }
    runtime, model = runtime_for(workspace, script)
    events = await goal(runtime, "say hello")
    model.assert_complete()
    assert ending(events).reason == "done"
    (told,) = sent_back(runtime)
    assert "the task list is empty. Plan the goal first" in told


@pytest.mark.script_may_end_early("the budget stops it")
async def test_goal_max_turns_ends_it_with_reason_goal(workspace: Path) -> None:
    script = {"steps": [{"tool_calls": [call("TaskCreate", subject="Never done")]}] + [{"text": "later"}] * 10}
    runtime, _ = runtime_for(workspace, script, goal_max_turns=3)
    events = await goal(runtime, "do it")
    assert ending(events).reason == "goal"
    assert runtime.agent.requests is not None
    warnings = [e.text for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert warnings == [
        "stopped after 3 model requests across the goal (goal_max_turns); the goal is not reached (0/1 verified)"
    ]
    assert len(sent_back(runtime)) == 1  # sent back once, after the second request: then the third was the last


@pytest.mark.script_may_end_early("the budget stops it")
async def test_goal_max_turns_bounds_a_turn_that_never_ends(workspace: Path) -> None:
    """Inside one turn the goal's requests left bound it, before `max_turns` does."""
    script = {"steps": [{"tool_calls": [call("Glob", pattern=f"*{i}")]} for i in range(10)]}
    runtime, _ = runtime_for(workspace, script, goal_max_turns=4, max_turns=50)
    events = await goal(runtime, "look around")
    assert ending(events).reason == "goal"
    assert [e for e in events if isinstance(e, GoalProgress)][-1].requests == 4
    assert any(isinstance(e, Notice) and "goal_max_turns" in e.text for e in events)


@pytest.mark.script_may_end_early("the budget stops it")
async def test_goal_max_tokens_stops_before_the_next_request(workspace: Path) -> None:
    usage = {"prompt_tokens": 600, "completion_tokens": 10}
    script = {"steps": [{"tool_calls": [call("Glob", pattern=f"*{i}")], "usage": usage} for i in range(10)]}
    runtime, model = runtime_for(workspace, script, goal_max_tokens=1500)
    events = await goal(runtime, "look around")
    assert ending(events).reason == "goal"
    assert model.used == 3  # 610, 1,220, 1,830: no fourth request
    assert any(isinstance(e, Notice) and "(goal_max_tokens 1,500)" in e.text for e in events)


@pytest.mark.script_may_end_early("the budget stops it")
async def test_goal_max_minutes_stops_it(workspace: Path) -> None:
    script = {"steps": [{"tool_calls": [call("TaskCreate", subject="Slow")]}] + [{"text": "later"}] * 5}
    runtime, model = runtime_for(workspace, script, goal_max_minutes=1)
    stream = runtime.turn.run_goal("slowly")
    assert runtime.goal is not None
    now = [1000.0]
    runtime.goal.clock = lambda: now[0]
    events: list[Event] = []
    async with aclosing(stream) as running:
        async for event in running:
            events.append(event)
            if isinstance(event, Notice) and "sent back" in event.text:
                now[0] += 61  # a minute passes during the first continuation
    assert ending(events).reason == "goal"
    assert any(isinstance(e, Notice) and "(goal_max_minutes 1)" in e.text for e in events)
    assert model.used == 2  # the continuation made no request: the minute was up before its first


@pytest.mark.script_may_end_early("the guard stops it")
async def test_other_ends_keep_their_meaning_inside_a_goal(workspace: Path) -> None:
    same = {"tool_calls": [call("Glob", pattern="*.py")]}
    runtime, _ = runtime_for(workspace, {"steps": [same] * 8}, max_repeated_calls=2)
    events = await goal(runtime, "loop")
    assert ending(events).reason == "loop"
    assert [e for e in events if isinstance(e, GoalProgress)][-1].state == "stopped"


@pytest.mark.script_may_end_early("esc stops it")
async def test_interrupting_a_goal_between_or_inside_turns_ends_it(workspace: Path) -> None:
    script = {"steps": [{"tool_calls": [call("TaskCreate", subject="Never done")]}] + [{"text": "later"}] * 20}
    runtime, model = runtime_for(workspace, script)
    events: list[Event] = []
    async with aclosing(runtime.turn.run_goal("go")) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, Notice) and "sent back" in event.text:
                assert runtime.turn.interrupt()  # between two turns: nothing runs in the agent
    assert ending(events).reason == "interrupted"
    assert model.used == 2
    assert runtime.goal is not None and runtime.goal.over and not runtime.turn.interrupt()


async def test_the_list_as_it_is_is_the_goal_and_a_person_ticked_check_must_pass(workspace: Path) -> None:
    (workspace / "check.py").write_text(CHECK_PY)
    (workspace / "fixed.txt").write_text("yes\n")
    script = {"steps": [update("1", status="completed"), {"text": "Proven."}]}
    runtime, model = runtime_for(workspace, script, allow=[f"Bash({CHECK})"])
    task = await runtime.store.user_add("Fix the API")
    await runtime.store.user_set_check(task.id, CHECK)
    await runtime.store.user_set_status(task.id, "completed")  # ticked by the person: not proven
    assert standing(runtime.plan.tasks()).unproven
    events = await goal(runtime, "")
    model.assert_complete()
    assert ending(events).reason == "done"
    (first,) = sent_back(runtime)
    assert first.startswith(TERMS) and "#1 Fix the API: completed, but its check has not passed" in first
    assert runtime.plan.tasks()[0].verified


def test_what_is_left_repeats_the_last_lines_of_a_failing_check() -> None:
    run = CheckRun(0.0, 2, 1.0, "\n".join(f"line {i}" for i in range(40)), "pytest -q")
    task = Task("3", "Tests pass", status="in_progress", verify="pytest -q", checks=(run,))
    text = what_is_left(standing([task]))
    assert "check: ✗ exit 2 · pytest -q" in text
    assert "line 39" in text and "line 28" in text and "line 27" not in text


def test_headless_goal_exits_0_when_proven_and_lists_each_tasks_last_check(workspace: Path, tmp_path: Path) -> None:
    (workspace / "check.py").write_text(CHECK_PY)
    script = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="Fix the API", verify=CHECK)]},
            update("1", status="completed"),
            {"text": "Done, I believe."},
            {"tool_calls": [call("Write", file_path="fixed.txt", content="yes\n")]},
            update("1", status="completed"),
            {"text": "Fixed."},
        ]
    }
    model = write_script(tmp_path / "goal.json", script)
    (workspace / ".todo-agent").mkdir()
    (workspace / ".todo-agent" / "settings.toml").write_text(f'[permissions]\nallow = ["Bash({CHECK})", "Write"]\n')
    result = todo_agent(
        workspace, None, "-p", "fix the API", "--goal", "--model", model, "--tasks", "v2", "--output-format", "json"
    )
    assert result.returncode == 0, result.stderr
    assert "todo-agent: goal not reached (0/1 verified): the model is sent back to work (1)" in result.stderr
    data = json.loads(result.stdout)
    assert (data["reason"], data["result"]) == ("done", "Fixed.")
    (task,) = data["tasks"]
    assert task["verified"] and task["last_check"]["exit"] == 0 and task["last_check"]["passed"]
    assert [r["exit"] for r in task["checks"]] == [1, 0]
    assert data["goal"]["state"] == "reached" and data["goal"]["verified"] == 1


def test_headless_goal_exits_6_when_a_budget_runs_out(workspace: Path, tmp_path: Path) -> None:
    script = {"steps": [{"tool_calls": [call("TaskCreate", subject="Never done")]}, {"text": "later"}, {"text": "x"}]}
    model = write_script(tmp_path / "goal.json", script)
    (workspace / ".todo-agent").mkdir()
    (workspace / ".todo-agent" / "settings.toml").write_text("goal_max_turns = 3\n")
    result = todo_agent(
        workspace, None, "-p", "go", "--goal", "--model", model, "--tasks", "v2", "--output-format", "json"
    )
    assert result.returncode == 6, result.stderr
    assert "stopped after 3 model requests across the goal (goal_max_turns)" in result.stderr
    data = json.loads(result.stdout)
    assert data["reason"] == "goal" and data["is_error"] and data["goal"]["state"] == "stopped"
    assert data["tasks"][0]["last_check"] is None and not data["tasks"][0]["verified"]


def test_goal_without_p_is_a_usage_error(workspace: Path) -> None:
    result = todo_agent(workspace, None, "--goal")
    assert result.returncode == 2 and "--goal goes with -p PROMPT" in result.stderr
