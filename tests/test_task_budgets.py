"""Budgets per task: the model sets or lowers one, only the person raises or removes it, and
running out stops the work on the task (a sub-agent at once, settled `partial`; the main
agent once told). Scripted models over the real runtime, store and files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import agent, call, finished, results, run, runtime_for
from test_agents_e2e import write_script
from test_headless_e2e import todo_agent

from todo_agent.core.events import ToolFinished, TurnEnd
from todo_agent.core.tasks import budgets, file_format
from todo_agent.core.tasks.model import Budget, StoreError, Task
from todo_agent.core.tasks.render import render_for_model, render_tasks


def step(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(calls)}


def finished_outputs(events: list[Any], tool: str) -> list[ToolFinished]:
    return [e for e in events if isinstance(e, ToolFinished) and e.name == tool]


# --- the values -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "budget"),
    [
        ("20 requests, 200k tokens, 30 min", Budget(20, 200_000, 30.0)),
        ("requests=5 tokens=2m", Budget(5, 2_000_000, 0.0)),
        ("1.5 minutes", Budget(0, 0, 1.5)),
        ("3 req", Budget(3, 0, 0.0)),
        ("  ", None),
    ],
)
def test_the_person_types_a_budget_in_words_and_it_reads_back(text: str, budget: Budget | None) -> None:
    assert budgets.parse(text) == budget
    if budget is not None:
        assert budgets.parse(budgets.describe(budget)) == budget


@pytest.mark.parametrize("text", ["x", "3 apples", "0 requests", "20 requests and more", "tokens=k"])
def test_a_budget_that_cannot_be_read_says_so(text: str) -> None:
    with pytest.raises(StoreError, match="as a budget"):
        budgets.parse(text)


def test_the_model_may_set_or_lower_a_budget_but_never_raise_it() -> None:
    assert budgets.lowered(None, Budget(requests=10)) == Budget(requests=10)
    assert budgets.lowered(Budget(requests=10), Budget(tokens=5_000)) == Budget(10, 5_000)  # a bound added
    assert budgets.lowered(Budget(10, 5_000), Budget(requests=4)) == Budget(4, 5_000)
    with pytest.raises(StoreError, match="allows 10 requests: you may lower a budget, not raise it"):
        budgets.lowered(Budget(requests=10), Budget(requests=11))


def test_spend_is_saved_and_read_back_and_a_malformed_budget_is_refused() -> None:
    task = Task("1", "Fix it", status="in_progress", budget=Budget(3, 0, 5.0), requests=2, tokens=900)
    document = json.loads(file_format.encode([task], 2))
    (row,) = document["tasks"]
    assert row["budget"] == {"requests": 3, "tokens": 0, "minutes": 5.0} and (row["requests"], row["tokens"]) == (
        2,
        900,
    )
    assert file_format.decode(document)[0] == (task,)
    assert "budget" not in json.loads(file_format.encode([Task("1", "plain")], 2))["tasks"][0]
    row["budget"] = {"requests": -1}
    with pytest.raises(ValueError, match="budget"):
        file_format.decode(document)


def test_the_spend_shows_under_the_task_and_to_the_model() -> None:
    task = Task("1", "Fix it", status="in_progress", budget=Budget(3, 200_000), requests=3, tokens=41_000)
    assert budgets.used_up(task, now=0.0) == "3/3 requests"
    assert "⏹ budget used up 3/3 requests · 41k/200k tokens" in render_tasks([task], now=0.0)
    assert "[⏹ budget used up 3/3 requests · 41k/200k tokens]" in render_for_model([task], now=0.0)
    assert budgets.spend_line(Task("2", "No budget"), now=0.0) == ""


# --- who may change it ------------------------------------------------------------------


async def test_a_raise_by_the_model_is_refused_and_the_persons_raise_is_told(workspace: Path) -> None:
    script = {
        "steps": [
            step(call("TaskCreate", subject="Fix it", budget={"requests": 5, "minutes": 10})),
            step(call("TaskUpdate", taskId="1", budget={"requests": 50})),
            step(call("TaskUpdate", taskId="1", budget={"requests": "3"})),
            {"text": "ok"},
        ]
    }
    runtime, _ = runtime_for(workspace, script)
    events = await run(runtime, "go")
    raised, lowered = finished_outputs(events, "TaskUpdate")
    assert raised.status == "error" and "you may lower a budget, not raise it" in raised.output
    assert lowered.status == "ok"
    (task,) = runtime.plan.tasks()
    assert task.budget == Budget(3, 0, 10.0)
    await runtime.store.user_set_budget("1", budgets.parse("40 requests"))
    assert runtime.store.snapshot()[0].budget == Budget(requests=40)
    await runtime.store.user_set_budget("1", None)
    assert runtime.store.snapshot()[0].budget is None
    assert runtime.store.take_user_changes() == ("set #1's budget to 40 requests", "removed #1's budget")
    history = [v.what for v in runtime.plan.versions()]
    assert "#1 budget 3 requests, 10 min" in history


# --- running out ------------------------------------------------------------------------


@pytest.mark.script_may_end_early("the budget stops the child before the rest of its steps")
async def test_a_per_task_budget_stops_a_child_which_comes_back_partial(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("n\n")
    reads = [step(call("Read", file_path="notes.txt")) for _ in range(3)]
    script = {
        "steps": [
            step(call("TaskCreate", subject="Survey", budget={"requests": 2})),
            step(agent("Survey", "read the notes", task_id="1")),
            {"text": "ok"},
        ],
        "agents": [
            {
                "match": "read the notes",
                "steps": [step(call("Write", file_path="half.txt", content="h\n")), *reads, {"text": "done"}],
            }
        ],
    }
    runtime, _ = runtime_for(workspace, script, permission_mode="acceptEdits")
    events = await run(runtime, "go")
    ended = finished(events)["general-1"]
    assert (ended.status, ended.reason) == ("partial", "task #1's budget is used up (2/2 requests)")
    assert ended.turns == 2 and ended.files == ("half.txt  +1 −0 (created)",)
    (result,) = results(events)
    assert "[general-1] partial (task #1's budget is used up (2/2 requests))" in result.output
    (task,) = runtime.plan.tasks()
    assert (task.status, task.owner, task.requests) == ("pending", "", 2)
    assert [(a.outcome, a.files) for a in task.attempts] == [("partial", ("half.txt  +1 −0 (created)",))]


@pytest.mark.script_may_end_early("the budget ends the turn before the last step")
async def test_the_main_agent_is_told_then_the_turn_stops_when_it_goes_on(workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    read = call("Read", file_path="a.txt")
    script = {
        "steps": [
            step(call("TaskCreate", subject="Dig", budget={"requests": 2})),
            step(call("TaskUpdate", taskId="1", status="in_progress")),
            step(read),
            step(read, call("Glob", pattern="*")),  # the second request under the task: its budget is used up
            step(call("Glob", pattern="*.txt")),  # it goes on
            {"text": "never asked"},
        ]
    }
    runtime, model = runtime_for(workspace, script)
    events = await run(runtime, "go")
    told = [e for e in events if isinstance(e, ToolFinished) and "budget is used up" in e.output]
    assert len(told) == 1 and told[0].name == "Read"  # the batch's first result, once
    assert "Task #1's budget is used up (2/2 requests). Set it aside" in told[0].output
    end = events[-1]
    assert isinstance(end, TurnEnd) and end.reason == "budget"
    assert len(model.requests) == 5
    assert runtime.plan.tasks()[0].requests == 3


async def test_setting_the_task_aside_once_told_lets_the_turn_go_on(workspace: Path) -> None:
    read = call("Glob", pattern="*")
    script = {
        "steps": [
            step(call("TaskCreate", subject="Dig", budget={"requests": 1})),
            step(call("TaskUpdate", taskId="1", status="in_progress")),
            step(read),
            step(call("TaskUpdate", taskId="1", status="pending")),
            step(read),
            {"text": "set it aside"},
        ]
    }
    runtime, _ = runtime_for(workspace, script)
    events = await run(runtime, "go")
    end = events[-1]
    assert isinstance(end, TurnEnd) and (end.reason, end.final_text) == ("done", "set it aside")
    assert runtime.plan.tasks()[0].status == "pending"


def test_headless_exits_6_with_reason_budget(workspace: Path, tmp_path: Path) -> None:
    script = {
        "steps": [
            step(call("TaskCreate", subject="Dig", budget={"requests": 1})),
            step(call("TaskUpdate", taskId="1", status="in_progress")),
            step(call("Glob", pattern="*")),
            step(call("Glob", pattern="*")),
            {"text": "never"},
        ]
    }
    model = write_script(tmp_path / "budget.json", script)
    result = todo_agent(workspace, None, "-p", "go", "--model", model, "--tasks", "v2", "--output-format", "json")
    assert result.returncode == 6, result.stderr
    assert "stopped: task #1's budget is used up (2/1 requests)" in result.stderr
    data = json.loads(result.stdout)
    assert data["reason"] == "budget" and data["is_error"]
