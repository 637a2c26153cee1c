"""Sub-agents' names on a shared list: every session has its own `general-1`, so a subtask
belongs to the sub-agent of one session, and a link a sub-agent adds may change only tasks
that are its own, at both ends. Two sessions on one shared list file, scripted models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_helpers import agent, call, finished, inner, run, runtime_for

from todo_agent.core.events import ToolFinished
from todo_agent.core.session.directory import task_list_path
from todo_agent.core.tasks.model import AgentRef, StoreError
from todo_agent.core.tasks.store import TaskStore


def replies(events: list[object], agent_id: str) -> list[tuple[str, str]]:
    return [(e.status, e.output) for e in inner(events, agent_id) if isinstance(e, ToolFinished)]  # type: ignore[arg-type]


async def test_another_sessions_general_1_cannot_touch_a_subtask_or_link_to_the_plan(workspace: Path) -> None:
    first = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="Parent job"), call("TaskCreate", subject="Later")]},
            {"tool_calls": [agent("Parent job", "do the parent job", task_id="1")]},
            {"text": "done"},
        ],
        "agents": [
            {
                "match": "parent job",
                "steps": [
                    {"tool_calls": [call("TaskCreate", subject="A's subtask")]},  # #3
                    {"tool_calls": [call("TaskUpdate", taskId="1", addBlockedBy=["3"])]},  # its own two: fine
                    {"tool_calls": [call("Glob", pattern="*"), call("TaskUpdate", taskId="3", status="completed")]},
                    {"tool_calls": [call("Glob", pattern="*"), call("TaskUpdate", taskId="1", status="completed")]},
                    {"text": "parent job done"},
                ],
            }
        ],
    }
    runtime_a, _ = runtime_for(workspace, first, task_list="team")
    events_a = await run(runtime_a, "go")
    assert finished(events_a)["general-1"].status == "completed"
    assert all(status == "ok" for status, _ in replies(events_a, "general-1"))

    attacks = [
        call("TaskUpdate", taskId="3", status="deleted"),  # A's subtask, by B's general-1
        call("TaskUpdate", taskId="3", subject="pwned"),
        call("TaskUpdate", taskId="4", addBlocks=["2"]),  # its own task #4 blocking A's #2
        call("TaskUpdate", taskId="4", addBlockedBy=["3"]),  # … or changing A's subtask's `blocks`
    ]
    second = {
        "steps": [
            {"tool_calls": [call("TaskCreate", subject="B job")]},  # #4
            {"tool_calls": [agent("B job", "do b", task_id="4")]},
            {"text": "done"},
        ],
        "agents": [
            {
                "match": "do b",
                "steps": [
                    *({"tool_calls": [attack]} for attack in attacks),
                    {"tool_calls": [call("Glob", pattern="*"), call("TaskUpdate", taskId="4", status="completed")]},
                    {"text": "b done"},
                ],
            }
        ],
    }
    runtime_b, _ = runtime_for(workspace, second, task_list="team")
    assert runtime_b.sessions.id != runtime_a.sessions.id
    events_b = await run(runtime_b, "go")
    answers = replies(events_b, "general-1")
    assert [status for status, _ in answers] == ["error"] * 4 + ["ok", "ok"]  # the attacks, then Glob and its own
    assert "task #3 is not yours" in answers[0][1] and "task #3 is not yours" in answers[1][1]
    assert "changes #2 too, which is not yours" in answers[2][1]
    assert "changes #3 too, which is not yours" in answers[3][1]

    saved = json.loads(task_list_path("team").read_text())["tasks"]
    tasks = {t["id"]: t for t in saved}
    assert tasks["3"]["subject"] == "A's subtask" and tasks["3"].get("blocks", []) == ["1"]
    assert tasks["3"]["created_by"] == "general-1" and tasks["3"]["created_session"] == runtime_a.sessions.id
    assert tasks["2"].get("blockedBy", []) == [] and tasks["4"].get("blocks", []) == []
    assert tasks["4"]["status"] == "completed"


def legacy_list(path: Path) -> None:
    """A list written before subtasks were tagged with their session: a bare name."""
    rows = [
        {"id": "1", "subject": "Parent", "status": "completed"},
        {"id": "2", "subject": "Subtask", "created_by": "general-1"},
    ]
    path.write_text(json.dumps({"format": 1, "next_id": 3, "tasks": rows}))


async def test_a_bare_name_is_the_lists_own_sessions(tmp_path: Path) -> None:
    own = tmp_path / "s1.tasks.json"
    legacy_list(own)
    store = TaskStore.load(own, home="s1")
    with pytest.raises(StoreError, match="task #2 is not yours"):  # another session's general-1
        await store.update("2", status="in_progress", by=AgentRef("general-1", "s2"))
    updated = await store.update("2", status="in_progress", by=AgentRef("general-1", "s1"))
    assert updated.task.status == "in_progress"


async def test_on_a_shared_list_a_bare_name_is_no_sub_agents(tmp_path: Path) -> None:
    shared = tmp_path / "team.tasks.json"
    legacy_list(shared)
    store = TaskStore.load(shared)  # a shared list: who wrote the name cannot be known
    for session in ("s1", "s2"):
        with pytest.raises(StoreError, match="task #2 is not yours"):
            await store.update("2", status="deleted", by=AgentRef("general-1", session))
    assert (await store.update("2", subject="kept by the main agent")).task.subject == "kept by the main agent"
