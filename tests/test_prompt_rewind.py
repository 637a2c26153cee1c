"""Rewinding to an earlier prompt (`/rewind`) and `/redo`: scripted runs over real files."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from todo_agent.core.changes.prompt_rewind import CHANGED_OUTSIDE, REWOUND
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config


def tc(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def turn(*calls: dict[str, Any], text: str = "Done.") -> list[dict[str, Any]]:
    return [*({"tool_calls": [c]} for c in calls), {"text": text}]


def three_prompts() -> list[dict[str, Any]]:
    """Prompt 1 edits a.py; prompt 2 creates new.txt (Bash), edits a.py again and deletes
    old.txt, with a task; prompt 3 writes b.py."""
    return [
        *turn(tc("Edit", file_path="a.py", old_string="one", new_string="ONE")),
        *turn(
            tc("TaskCreate", subject="Second step"),
            tc("Bash", command="printf 'made\\n' > new.txt && rm old.txt"),
            tc("Edit", file_path="a.py", old_string="two", new_string="TWO"),
        ),
        *turn(tc("Write", file_path="b.py", content="b2\n")),
    ]


def make_runtime(workspace: Path, script: list[dict[str, Any]], **config: Any) -> tuple[Runtime, ScriptedModel]:
    model = ScriptedModel.from_data(script)
    runtime = Runtime.create(
        Config(workspace=workspace, model="script:test", permission_mode="bypassPermissions", **config), model=model
    )
    return runtime, model


async def run(runtime: Runtime, prompt: str) -> None:
    async for _event in runtime.turn.run(prompt):
        pass


@pytest.fixture
def project(workspace: Path) -> Path:
    (workspace / "a.py").write_text("one\ntwo\n")
    (workspace / "b.py").write_text("b1\n")
    (workspace / "old.txt").write_text("old\n")
    return workspace


def files(project: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(project.iterdir()) if p.is_file()}


async def three(project: Path, **config: Any) -> tuple[Runtime, ScriptedModel]:
    runtime, model = make_runtime(project, three_prompts(), **config)
    for prompt in ("first", "second", "third"):
        await run(runtime, prompt)
    return runtime, model


async def test_prompts_are_listed_newest_first_with_what_came_after(project: Path) -> None:
    runtime, _ = await three(project)
    rows = runtime.prompts.prompts()
    assert [r.text for r in rows] == ["third", "second", "first"]
    second = rows[1]
    assert second.tool_calls == 3
    assert set(second.files) == {"new.txt", "old.txt", "a.py"}
    assert second.tasks == ("#1 Second step",)
    assert rows[0].files == ("b.py",) and rows[0].tasks == ()


async def test_a_call_that_changed_nothing_is_not_listed(project: Path) -> None:
    runtime, _ = make_runtime(project, turn(tc("Write", file_path="b.py", content="b1\n")))
    await run(runtime, "same again")
    (row,) = runtime.prompts.prompts()
    assert row.files == () and row.tool_calls == 1


async def test_rewind_to_the_second_prompt_then_redo(project: Path) -> None:
    runtime, _ = await three(project)
    before = files(project)
    history = list(runtime.session.messages)
    second = runtime.prompts.prompts()[1]
    plan = runtime.prompts.plan(second.id)
    assert {f.path: f.action for f in plan.files} == {
        "a.py": "restore",
        "b.py": "restore",
        "new.txt": "delete",
        "old.txt": "restore",
    }
    outcome = await runtime.sessions.rewind_to(plan, "both", [f.path for f in plan.files if f.suggested])
    assert outcome.prompt == "second"
    assert files(project) == {"a.py": "ONE\ntwo\n", "b.py": "b1\n", "old.txt": "old\n"}
    messages = runtime.session.messages
    assert [m["content"] for m in messages if m["role"] == "user"][:-1] == ["first"]
    assert messages[-1]["content"].startswith(f"<system-reminder>\n{REWOUND}")
    assert runtime.plan.tasks() == ()  # the plan as it was before the second prompt: empty
    assert [r.text for r in runtime.prompts.prompts()] == ["first"]

    redone = await runtime.sessions.redo()
    assert redone.lines[0].startswith("Redone")
    assert files(project) == before
    assert runtime.session.messages == history
    assert [t.subject for t in runtime.plan.tasks()] == ["Second step"]
    assert [r.text for r in runtime.prompts.prompts()] == ["third", "second", "first"]
    with pytest.raises(ValueError, match="nothing to redo"):
        await runtime.sessions.redo()


async def test_a_file_changed_outside_since_is_a_conflict_left_alone(project: Path) -> None:
    runtime, _ = await three(project)
    (project / "b.py").write_text("mine\n")
    plan = runtime.prompts.plan(runtime.prompts.prompts()[0].id)
    (b,) = plan.files
    assert b.conflict == CHANGED_OUTSIDE and not b.suggested
    outcome = await runtime.sessions.rewind_to(plan, "both", [f.path for f in plan.files if f.suggested])
    assert (project / "b.py").read_text() == "mine\n"
    assert any("b.py" in line and CHANGED_OUTSIDE in line for line in outcome.lines)
    assert "Files left as they are now: b.py." in runtime.session.messages[-1]["content"]


async def test_a_conflict_chosen_is_put_back(project: Path) -> None:
    runtime, _ = await three(project)
    (project / "b.py").write_text("mine\n")
    plan = runtime.prompts.plan(runtime.prompts.prompts()[0].id)
    await runtime.sessions.rewind_to(plan, "both", ["b.py"])
    assert (project / "b.py").read_text() == "b1\n"


async def test_conversation_only_and_files_only(project: Path) -> None:
    runtime, _ = await three(project)
    after = files(project)
    plan = runtime.prompts.plan(runtime.prompts.prompts()[1].id)
    outcome = await runtime.sessions.rewind_to(plan, "conversation", [f.path for f in plan.files])
    assert files(project) == after and outcome.prompt == "second"
    assert "(not the files)" in runtime.session.messages[-1]["content"]
    await runtime.sessions.redo()

    length = len(runtime.session.messages)
    plan = runtime.prompts.plan(runtime.prompts.prompts()[1].id)
    outcome = await runtime.sessions.rewind_to(plan, "files", [f.path for f in plan.files])
    assert files(project) == {"a.py": "ONE\ntwo\n", "b.py": "b1\n", "old.txt": "old\n"}
    assert outcome.prompt == "" and len(runtime.session.messages) == length + 1
    assert "(not the conversation)" in runtime.session.messages[-1]["content"]
    assert [t.subject for t in runtime.plan.tasks()] == ["Second step"]  # the plan goes with the conversation


async def test_the_model_is_told_once_in_the_next_request(project: Path) -> None:
    runtime, _ = make_runtime(
        project, [*three_prompts()[:2], {"text": "ok"}, *turn(tc("Write", file_path="b.py", content="b2\n"))]
    )
    await run(runtime, "first")
    await run(runtime, "second")
    plan = runtime.prompts.plan(runtime.prompts.prompts()[0].id)
    await runtime.sessions.rewind_to(plan, "both", [f.path for f in plan.files])
    seen: list[list[dict[str, Any]]] = []
    real = runtime.agent.model.stream

    def spy(messages: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(list(messages))
        return real(messages, *args, **kwargs)

    runtime.agent.model.stream = spy  # type: ignore[method-assign]
    await run(runtime, "second, again")
    await run(runtime, "third")
    notes = [[m for m in request if REWOUND in str(m.get("content"))] for request in seen]
    assert len(notes[0]) == 1 and notes[0][0] is not None
    texts = [m["content"] for m in seen[0] if m["role"] == "user"]
    assert texts[-2].startswith("<system-reminder>") and texts[-1] == "second, again"
    assert all(len(n) == 1 for n in notes)  # in the history once, never added again


async def test_a_shared_list_is_left_alone_with_a_line(project: Path) -> None:
    runtime, _ = await three(project, task_list="team")
    plan = runtime.prompts.plan(runtime.prompts.prompts()[1].id)
    outcome = await runtime.sessions.rewind_to(plan, "both", [f.path for f in plan.files])
    assert [t.subject for t in runtime.plan.tasks()] == ["Second step"]
    assert any("shared task list 'team' is left as it is" in line for line in outcome.lines)


async def test_refused_while_a_turn_runs(project: Path) -> None:
    runtime, _ = await three(project)
    plan = runtime.prompts.plan(runtime.prompts.prompts()[0].id)
    runtime.agent.busy = True  # type: ignore[misc]
    try:
        with pytest.raises(RuntimeError, match="while a turn is running"):
            await runtime.sessions.rewind_to(plan, "both", [])
    finally:
        runtime.agent.busy = False  # type: ignore[misc]


KILLER = """
import os, signal, sys
from pathlib import Path
from todo_agent.core import atomic
from todo_agent.core.changes import prompt_rewind, rewind
from todo_agent.core.changes.checkpoint import Checkpoints
from todo_agent.core.changes.log import ChangeLog
from todo_agent.core.session.transcript import Session
from todo_agent.core.tasks import persistence
from todo_agent.core.tasks.store import TaskStore

session_path, workspace, limit = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
real = atomic.atomic_write
calls = [0]
def dying(path, data, **options):
    if calls[0] == limit:
        os.kill(os.getpid(), signal.SIGKILL)
    calls[0] += 1
    real(path, data, **options)
persistence.atomic_write = rewind.atomic_write = prompt_rewind.atomic_write = dying
import todo_agent.core.changes.checkpoint as checkpoint
checkpoint.atomic_write = dying
session = Session.open(session_path)
changes = ChangeLog.for_session(session_path, workspace)
store = TaskStore.load(session.tasks_path, home=session.id)
rewinds = prompt_rewind.PromptRewinds(
    changes, Checkpoints.for_session(session_path, changes), store, session, epoch=lambda: 0
)
target = [c for c in rewinds.available() if c.text == "second"][0]
plan = rewinds.plan(target.id)
rewinds.apply(plan, "both", [f.path for f in plan.files])
"""


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 4, 5, 6, 99])
async def test_a_kill_during_a_rewind_leaves_the_old_or_the_new_state(project: Path, limit: int) -> None:
    runtime, _ = await three(project)
    session = runtime.session.path
    new = files(project)
    length = len(runtime.session.messages)
    runtime.session.close()
    child = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", KILLER, str(session), str(project), str(limit)], capture_output=True
    )
    assert child.returncode in (-9, 0), child.stderr.decode()
    config = Config(workspace=project, model="script:test", permission_mode="bypassPermissions")
    reopened = Runtime.create(config, model=ScriptedModel.from_data([]), continue_latest=True)  # finishes it
    now = files(project)
    if now == new:
        assert len(reopened.session.messages) == length
        assert reopened.plan.tasks() != ()
    else:
        assert now == {"a.py": "ONE\ntwo\n", "b.py": "b1\n", "old.txt": "old\n"}
        assert REWOUND in reopened.session.messages[-1]["content"]
        assert sum(REWOUND in str(m.get("content")) for m in reopened.session.messages) == 1
        assert reopened.plan.tasks() == ()
    assert limit != 0 or now == new  # killed before anything was written: nothing happened
    assert limit < 2 or now != new  # the journal was written: the rewind is finished


async def test_a_goal_is_one_prompt_to_rewind_to(project: Path) -> None:
    """`/goal TEXT` runs turns of the harness's own; the goal as a whole gets the checkpoint."""
    script = turn(
        tc("TaskCreate", subject="Shout"),
        tc("TaskUpdate", taskId="1", status="in_progress"),
        tc("Edit", file_path="a.py", old_string="one", new_string="ONE"),
        tc("TaskUpdate", taskId="1", status="completed"),
    )
    runtime, _ = make_runtime(project, script)
    async for _event in runtime.turn.run_goal("shout in a.py"):
        pass
    (row,) = runtime.prompts.prompts()
    assert (row.text, row.files) == ("shout in a.py", ("a.py",))
    plan = runtime.prompts.plan(row.id)
    await runtime.sessions.rewind_to(plan, "both", [f.path for f in plan.files if f.suggested])
    assert (project / "a.py").read_text() == "one\ntwo\n" and runtime.plan.tasks() == ()
    runtime.close()
