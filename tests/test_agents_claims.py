"""A task is claimed, never assumed: the claim rules, over real files and real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from todo_agent.core.tasks import rules
from todo_agent.core.tasks.file_format import decode, encode
from todo_agent.core.tasks.model import AgentRef, Attempt, Claim, StoreError, Task
from todo_agent.core.tasks.store import TaskStore

ME = AgentRef("general-1", "s1")
SIBLING = AgentRef("general-2", "s1")


def claim_for(ref: AgentRef) -> Claim:
    return Claim(ref.agent, ref.session, 123, 1.0)


def plan() -> tuple[Task, ...]:
    tasks: tuple[Task, ...] = ()
    for n, subject in enumerate(("a", "b", "c"), start=1):
        tasks, _ = rules.create(tasks, n, subject, description="", active_form="", now=0.0)
    return rules.link(tasks, "1", "3")  # #3 waits for #1


CLAIM_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from pathlib import Path
    from todo_agent.core.tasks.model import Claim, StoreError
    from todo_agent.core.tasks.store import TaskStore

    path, name, start = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    store = TaskStore.load(path)
    while time.time() < start:  # every process claims at the same moment
        time.sleep(0.001)
    try:
        asyncio.run(store.claim("1", Claim(name, "s-" + name, 0, time.time())))
        print(json.dumps({"won": name}))
    except StoreError as exc:
        print(json.dumps({"lost": name, "why": str(exc)}))
    """
)


def test_eight_processes_claim_one_task_and_exactly_one_wins(tmp_path: Path) -> None:
    import asyncio
    import time

    path = tmp_path / "list.tasks.json"
    store = TaskStore.load(path)
    asyncio.run(store.create("the one task"))
    start = time.time() + 1.5
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIM_SCRIPT, str(path), f"agent-{n}", str(start)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(8)
    ]
    results = [json.loads(p.communicate(timeout=60)[0]) for p in processes]
    winners = [r["won"] for r in results if "won" in r]
    assert len(winners) == 1, results
    assert all("already being worked on" in r["why"] or "not pending" in r["why"] for r in results if "lost" in r)
    saved = TaskStore.load(path).snapshot()[0]
    assert (saved.status, saved.owner, saved.claim.agent if saved.claim else None) == (
        "in_progress",
        winners[0],
        winners[0],
    )
    history = (tmp_path / "list.tasks.log.jsonl").read_text().splitlines()
    assert sum("claimed by" in line for line in history) == 1


def test_only_a_pending_unowned_unblocked_task_can_be_claimed() -> None:
    tasks = plan()
    with pytest.raises(StoreError, match=r"blocked by #1"):
        rules.claim(tasks, "3", claim_for(ME), 2.0)
    owned, _ = rules.update(tasks, "2", status=None, changes=rules.Fields(owner="alice"), now=1.0)
    with pytest.raises(StoreError, match="already has an owner"):
        rules.claim(owned, "2", claim_for(ME), 2.0)
    started, _ = rules.update(tasks, "2", status="in_progress", changes=rules.Fields(), now=1.0)
    with pytest.raises(StoreError, match="in_progress, not pending"):
        rules.claim(started, "2", claim_for(ME), 2.0)
    claimed, task = rules.claim(tasks, "1", claim_for(ME), 2.0)
    assert (task.status, task.owner, task.started_at) == ("in_progress", "general-1", 2.0)
    with pytest.raises(StoreError, match="already being worked on by general-1"):
        rules.claim(claimed, "1", claim_for(SIBLING), 3.0)
    # Finishing the blocker makes its dependent claimable.
    settled, _ = rules.settle(
        rules.update(claimed, "1", status="completed", changes=rules.Fields(), now=3.0, by=ME)[0],
        "1",
        ME,
        Attempt("general-1", "completed"),
        4.0,
    )
    _, dependent = rules.claim(settled, "3", claim_for(SIBLING), 5.0)
    assert dependent.claim == claim_for(SIBLING)


def test_a_sub_agent_updates_only_its_own_task_and_subtasks() -> None:
    tasks, _ = rules.claim(plan(), "1", claim_for(ME), 1.0)
    tasks, _ = rules.claim(tasks, "2", claim_for(SIBLING), 1.0)
    with pytest.raises(StoreError, match=r"task #2 is not yours \(it is general-2's\): your task is #1"):
        rules.update(tasks, "2", status="completed", changes=rules.Fields(), now=2.0, by=ME)
    with pytest.raises(StoreError, match="only the status, activeForm and metadata"):
        rules.update(tasks, "1", status=None, changes=rules.Fields(subject="renamed"), now=2.0, by=ME)
    with pytest.raises(StoreError, match="only the status"):
        rules.update(tasks, "1", status="deleted", changes=rules.Fields(), now=2.0, by=ME)
    # The main agent cannot touch a claimed task either.
    with pytest.raises(StoreError, match="being worked on by general-1"):
        rules.update(tasks, "1", status="completed", changes=rules.Fields(), now=2.0)
    # Its own subtask it may change freely; marking its task completed is only its word.
    tasks, sub = rules.create(tasks, 4, "sub", description="", active_form="", now=2.0, created_by=ME)
    tasks, _ = rules.update(tasks, sub.id, status="in_progress", changes=rules.Fields(subject="sub!"), now=2.0, by=ME)
    metadata = rules.Fields(active_form="Writing", metadata=(("files", '["a.py"]'),))
    tasks, outcome = rules.update(tasks, "1", status="completed", changes=metadata, now=3.0, by=ME)
    task = outcome.task
    assert (task.status, task.activeForm, task.metadata) == ("in_progress", "Writing", (("files", '["a.py"]'),))
    assert task.claim is not None and task.claim.done


def test_the_harness_settles_not_the_sub_agents_word() -> None:
    tasks, _ = rules.claim(plan(), "1", claim_for(ME), 1.0)
    said_done, _ = rules.update(tasks, "1", status="completed", changes=rules.Fields(), now=2.0, by=ME)
    partial = Attempt("general-1", "partial", "ran out of requests", ("a.py  +3 −0",), 3.0, "s1")
    back, task = rules.settle(said_done, "1", ME, partial, 3.0)
    assert task is not None and (task.status, task.owner, task.claim) == ("pending", "", None)
    assert task.attempts == (partial,)
    clean = Attempt("general-1", "completed")
    _, done = rules.settle(said_done, "1", ME, clean, 3.0)
    assert done is not None and done.status == "completed"
    never_said, _ = rules.settle(tasks, "1", ME, clean, 3.0)  # a clean end without marking it done
    assert rules.find(never_said, "1").status == "pending"
    # A settle for a claim that is no longer this agent's changes nothing.
    assert rules.settle(back, "1", ME, clean, 4.0) == (back, None)


def test_one_task_in_progress_is_per_owner() -> None:
    tasks, _ = rules.claim(plan(), "1", claim_for(ME), 1.0)
    _, outcome = rules.update(tasks, "2", status="in_progress", changes=rules.Fields(), now=2.0)
    assert not any("also in_progress" in note for note in outcome.notes)
    tasks, _ = rules.update(tasks, "2", status="in_progress", changes=rules.Fields(), now=2.0)
    tasks, counted = rules.record_tool_call(tasks, 1.5, ME)
    assert counted is not None and counted.id == "1"
    tasks, counted = rules.record_tool_call(tasks, 1.5)
    assert counted is not None and counted.id == "2"


def test_todo_write_keeps_a_claimed_task() -> None:
    from todo_agent.core.tasks.model import TodoItem

    tasks, _ = rules.claim(plan(), "1", claim_for(ME), 1.0)
    with pytest.raises(StoreError, match="keep it in the list"):
        rules.replace_all(tasks, 4, [TodoItem("b", "pending")], 2.0)
    with pytest.raises(StoreError, match="leave it in_progress"):
        rules.replace_all(tasks, 4, [TodoItem("a", "completed")], 2.0)


def test_claims_attempts_and_metadata_survive_the_file() -> None:
    tasks, _ = rules.claim(plan(), "1", claim_for(ME), 1.0)
    tasks, _ = rules.settle(tasks, "1", ME, Attempt("general-1", "failed", "boom", ("x.py  +1 −0",), 2.0, "s1"), 2.0)
    tasks, _ = rules.claim(tasks, "1", claim_for(SIBLING), 3.0)
    tasks, _ = rules.update(tasks, "1", status=None, changes=rules.Fields(metadata=(("k", "1"),)), now=3.0, by=SIBLING)
    document = json.loads(encode(tasks, 4))
    assert decode(document) == (tasks, 4)
    assert "claim" not in document["tasks"][1]  # an untouched task's line is as before


def test_release_dead_gives_back_only_what_died() -> None:
    alive, dead = AgentRef("general-1", "live"), AgentRef("general-2", "gone")
    tasks, _ = rules.claim(plan(), "1", claim_for(alive), 1.0)
    tasks, _ = rules.claim(tasks, "2", claim_for(dead), 1.0)
    released_tasks, released = rules.release_dead(
        tasks, lambda c: c.session == "gone", lambda t: Attempt("general-2", "lost"), 5.0
    )
    assert [t.id for t in released] == ["2"]
    assert rules.find(released_tasks, "2").status == "pending"
    assert rules.find(released_tasks, "1").claim is not None
