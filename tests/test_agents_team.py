"""Sub-agents end to end in one process: scripted models over real files and real commands."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from agent_helpers import agent, call, finished, gate_children, inner, results, run, runtime_for

from todo_agent.core.events import AgentEvent, AgentFinished, AgentStarted, Notice, ToolFinished, ToolStarted, TurnEnd
from todo_agent.core.tasks.model import AgentRef


def plan(*subjects: str) -> dict[str, object]:
    return {"tool_calls": [call("TaskCreate", subject=s, activeForm=f"Doing {s}") for s in subjects]}


def child(match: str, *steps: object) -> dict[str, object]:
    return {"match": match, "steps": list(steps)}


def done(task: str, summary: str) -> list[object]:
    """A child's last two steps: it looks (a child that did nothing at all is settled
    `unverified`), marks its task completed, and sums up."""
    look = call("Glob", pattern="*")
    return [{"tool_calls": [look, call("TaskUpdate", taskId=task, status="completed")]}, {"text": summary}]


async def test_two_children_work_two_tasks_side_by_side_and_the_harness_settles_them(workspace: Path) -> None:
    script = {
        "steps": [
            plan("Write a", "Write b"),
            {
                "tool_calls": [
                    agent("Write a", "write a.txt", task_id="1"),
                    agent("Write b", "write b.txt", task_id="2"),
                ]
            },
            {"text": "both done"},
        ],
        "agents": [
            child("Write a", {"tool_calls": [call("Write", file_path="a.txt", content="a\n")]}, *done("1", "wrote a")),
            child(
                "Write b", {"tool_calls": [call("Write", file_path="b.txt", content="b\nb\n")]}, *done("2", "wrote b")
            ),
        ],
    }
    runtime, _ = runtime_for(workspace, script, permission_mode="acceptEdits")
    events = await run(runtime, "go")

    starts = [i for i, e in enumerate(events) if isinstance(e, AgentStarted) and not e.waiting]
    ends = [i for i, e in enumerate(events) if e in finished(events).values()]
    assert len(starts) == 2 and max(starts) < min(ends)  # both were at work at once
    ended = finished(events)
    assert {k: (v.status, v.files) for k, v in ended.items()} == {
        "general-1": ("completed", ("a.txt  +1 −0 (created)",)),
        "general-2": ("completed", ("b.txt  +2 −0 (created)",)),
    }
    tasks = {t.id: t for t in runtime.plan.tasks()}
    assert [(t.status, t.owner, t.claim) for t in tasks.values()] == [("completed", "", None)] * 2
    assert [a.outcome for a in tasks["1"].attempts] == ["completed"]
    outputs = {r.call_id: r.output for r in results(events)}  # each as it ended, not in call order
    assert outputs["call_2_1"].startswith('[general-1] completed: task #1 "Write a" is completed')
    assert "a.txt  +1 −0 (created)" in outputs["call_2_1"]
    assert (workspace / "a.txt").read_text() == "a\n"
    # Each child's transcript lives beside the session, and says how it ended.
    directory = runtime.session.path.with_name(f"{runtime.session.id}.agents")
    assert sorted(p.name for p in directory.iterdir()) == ["general-1.jsonl", "general-2.jsonl"]
    assert '"agent_result"' in (directory / "general-1.jsonl").read_text()


async def test_more_calls_than_slots_wait_their_turn(workspace: Path) -> None:
    script = {
        "steps": [
            {"tool_calls": [agent("First", "one"), agent("Second", "two")]},
            {"text": "ok"},
        ],
        "agents": [child("First", {"text": "one done"}), child("Second", {"text": "two done"})],
    }
    runtime, _ = runtime_for(workspace, script, max_parallel_agents=1)
    release, queued = asyncio.Event(), asyncio.Event()
    gated = gate_children(runtime, {"one": {0: release}})

    def seen(event: object) -> None:
        if isinstance(event, AgentStarted) and event.waiting:
            queued.set()

    turn = asyncio.ensure_future(run(runtime, "go", seen))
    await gated["one"].waiting.wait()
    await queued.wait()
    assert [(r.agent_id, r.phase) for r in runtime.team.rows()] == [("general-1", "running"), ("general-2", "waiting")]
    release.set()
    events = await turn
    order = [
        (e.agent_id, "wait" if e.waiting else "start") if isinstance(e, AgentStarted) else (e.agent_id, "end")
        for e in events
        if isinstance(e, AgentStarted) or e in finished(events).values()
    ]
    assert order == [
        ("general-1", "start"),
        ("general-2", "wait"),
        ("general-1", "end"),
        ("general-2", "start"),
        ("general-2", "end"),
    ]


async def test_a_blocked_task_is_never_started_and_starts_once_its_blocker_is_done(workspace: Path) -> None:
    script = {
        "steps": [
            plan("First", "Then"),
            {"tool_calls": [call("TaskUpdate", taskId="2", addBlockedBy=["1"])]},
            {"tool_calls": [agent("Then", "do the second", task_id="2")]},
            {"tool_calls": [agent("First", "do the first", task_id="1")]},
            {"tool_calls": [agent("Then", "do the second", task_id="2")]},
            {"text": "ok"},
        ],
        "agents": [child("do the first", *done("1", "first done")), child("do the second", *done("2", "second done"))],
    }
    runtime, _ = runtime_for(workspace, script)
    events = await run(runtime, "go")
    first, _, third = (r.output for r in results(events))
    assert first == "Error: no sub-agent started: task #2 is blocked by #1: those must be completed first"
    assert third.startswith("[general-2] completed")  # the refused call started none: no general-1 left behind
    assert [t.status for t in runtime.plan.tasks()] == ["completed", "completed"]


async def test_a_child_cannot_update_a_siblings_task(workspace: Path) -> None:
    script = {
        "steps": [plan("Mine", "Theirs"), {"tool_calls": [agent("Mine", "work", task_id="1")]}, {"text": "ok"}],
        "agents": [
            child(
                "Mine",
                {"tool_calls": [call("TaskUpdate", taskId="2", status="completed")]},
                {"tool_calls": [call("TaskCreate", subject="A subtask")]},
                {"tool_calls": [call("TaskUpdate", taskId="3", status="completed")]},
                *done("1", "done"),
            )
        ],
    }
    runtime, _ = runtime_for(workspace, script)
    events = await run(runtime, "go")
    outputs = [e.output for e in inner(events, "general-1") if isinstance(e, ToolFinished)]
    assert outputs[0] == (
        "Error: task #2 is not yours: your task is #1; you may update only it and the subtasks you create"
    )
    assert outputs[2].startswith("#3 → completed · 2 open: #1 #2")
    tasks = {t.id: t for t in runtime.plan.tasks()}
    assert (tasks["2"].status, tasks["3"].created_by, tasks["1"].status) == ("pending", "general-1", "completed")


async def test_a_child_stopped_by_max_turns_comes_back_partial_and_its_task_pending(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("n\n")
    script = {
        "steps": [
            plan("Long"),
            {"tool_calls": [agent("Long", "read a lot", task_id="1", max_turns=2)]},
            {"text": "ok"},
        ],
        "agents": [
            child(
                "Long",
                {"tool_calls": [call("Read", file_path="notes.txt")]},
                {"tool_calls": [call("Write", file_path="out.txt", content="half\n")]},
            )
        ],
    }
    runtime, _ = runtime_for(workspace, script, permission_mode="acceptEdits")
    events = await run(runtime, "go")
    result = finished(events)["general-1"]
    assert (result.status, result.reason) == ("partial", "it used up its model requests (max_turns)")
    assert result.files == ("out.txt  +1 −0 (created)",)
    task = runtime.plan.tasks()[0]
    assert (task.status, task.owner) == ("pending", "")
    assert [(a.agent, a.outcome, a.files) for a in task.attempts] == [
        ("general-1", "partial", ("out.txt  +1 −0 (created)",))
    ]
    (agent_result,) = results(events)
    assert agent_result.is_error and "is pending again; the attempt is recorded" in agent_result.output


async def test_stopping_one_child_kills_its_command_and_leaves_its_sibling_running(workspace: Path) -> None:
    script = {
        "steps": [
            plan("Sleep", "Work"),
            {"tool_calls": [agent("Sleep", "sleep long", task_id="1"), agent("Work", "work", task_id="2")]},
            {"text": "ok"},
        ],
        "agents": [
            child("sleep long", {"tool_calls": [call("Bash", command="echo $$ > pid; exec sleep 60")]}),
            child("work", *done("2", "worked")),
        ],
    }
    runtime, _ = runtime_for(workspace, script, permission_mode="bypassPermissions")
    release = asyncio.Event()
    gated = gate_children(runtime, {"work": {1: release}})
    sleeping, stopped = asyncio.Event(), asyncio.Event()

    def seen(event: object) -> None:
        if isinstance(event, AgentEvent) and isinstance(event.event, ToolStarted) and event.event.name == "Bash":
            sleeping.set()
        if isinstance(event, AgentFinished) and event.agent_id == "general-1":
            stopped.set()

    turn = asyncio.ensure_future(run(runtime, "go", seen))
    await sleeping.wait()
    await gated["work"].waiting.wait()
    pid_file = workspace / "pid"
    for _ in range(500):  # the command writes its pid as it starts
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    pid = int(pid_file.read_text())
    assert runtime.team.stop("general-1")
    await stopped.wait()
    assert runtime.team_runner.children["general-2"].phase == "running"  # its sibling is still at work
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    release.set()
    events = await turn
    ended = finished(events)
    assert (ended["general-1"].status, ended["general-1"].reason) == ("cancelled", "stopped by you")
    assert ended["general-2"].status == "completed"
    assert [t.status for t in runtime.plan.tasks()] == ["pending", "completed"]


@pytest.mark.script_may_end_early("the interrupt stops both children before their last steps")
async def test_an_interrupt_stops_every_child_and_their_partial_work_comes_back(workspace: Path) -> None:
    script = {
        "steps": [plan("A", "B"), {"tool_calls": [agent("A", "do a", task_id="1"), agent("B", "do b", task_id="2")]}],
        "agents": [
            child("do a", {"tool_calls": [call("Write", file_path="a.txt", content="a\n")]}, {"text": "never"}),
            child("do b", {"text": "never"}),
        ],
    }
    runtime, _ = runtime_for(workspace, script, permission_mode="acceptEdits")
    a_waits, b_waits = asyncio.Event(), asyncio.Event()
    gated = gate_children(runtime, {"do a": {1: a_waits}, "do b": {0: b_waits}})
    turn = asyncio.ensure_future(run(runtime, "go"))
    await gated["do a"].waiting.wait()
    await gated["do b"].waiting.wait()
    runtime.turn.interrupt()
    events = await turn
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "interrupted"
    outputs = {r.call_id: r for r in results(events)}
    first = outputs["call_2_1"]
    assert first.status == "cancelled"
    assert "What it had done by then:\n[general-1] cancelled (interrupted)" in first.output
    assert "a.txt  +1 −0 (created)" in first.output
    assert [(t.status, t.owner, len(t.attempts)) for t in runtime.plan.tasks()] == [
        ("pending", "", 1),
        ("pending", "", 1),
    ]
    # The history is valid: every call answered, the partial results in it.
    replies = [m for m in runtime.sessions.history if m.get("role") == "tool" and m["tool_call_id"] == "call_2_1"]
    assert "What it had done by then" in replies[0]["content"]


async def test_two_children_editing_one_file_one_is_refused_and_no_bytes_are_lost(workspace: Path) -> None:
    script = {
        "steps": [
            plan("A", "B"),
            {"tool_calls": [agent("A", "write it", task_id="1"), agent("B", "overwrite it", task_id="2")]},
            {"text": "ok"},
        ],
        "agents": [
            child(
                "write it",
                {"tool_calls": [call("Write", file_path="shared.txt", content="from a\n")]},
                *done("1", "wrote it"),
            ),
            child(
                "overwrite it",
                {"tool_calls": [call("Write", file_path="shared.txt", content="from b\n")]},
                {"text": "it was held"},
                {"text": "it is general-1's file; I leave it"},  # after the nudge about its unfinished task
            ),
        ],
    }
    runtime, _ = runtime_for(workspace, script, permission_mode="acceptEdits")
    a_wrote, b_tried = asyncio.Event(), asyncio.Event()
    gate_children(runtime, {"write it": {1: b_tried}, "overwrite it": {0: a_wrote}})

    def seen(event: object) -> None:
        if isinstance(event, AgentEvent) and isinstance(event.event, ToolFinished) and event.event.name == "Write":
            (a_wrote if event.agent_id == "general-1" else b_tried).set()

    events = await run(runtime, "go", seen)
    (refused,) = [e for e in inner(events, "general-2") if isinstance(e, ToolFinished)]
    assert refused.is_error
    assert refused.output.startswith('Error: shared.txt is held by general-1 (task #1 "A"), which changed it')
    assert (workspace / "shared.txt").read_text() == "from a\n"
    result = finished(events)["general-2"]
    assert (result.status, result.reason) == ("partial", "it ended without marking its task completed")


def _bash_over_held(command: str) -> dict[str, object]:
    """general-1 writes shared.txt for task #1; general-2 (task #2) then runs `command`."""
    return {
        "steps": [
            plan("A", "B"),
            {"tool_calls": [agent("A", "write it", task_id="1"), agent("B", "shell it", task_id="2")]},
            {"text": "ok"},
        ],
        "agents": [
            child(
                "write it",
                {"tool_calls": [call("Write", file_path="shared.txt", content="from a\n")]},
                *done("1", "wrote it"),
            ),
            child("shell it", {"tool_calls": [call("Bash", command=command)]}, *done("2", "ran it")),
        ],
    }


@pytest.mark.parametrize(
    "command",
    ["echo from b > shared.txt", "rm shared.txt", "mv shared.txt moved.txt", "sed -i s/a/b/ shared.txt"],
)
async def test_a_childs_command_over_a_file_another_childs_task_holds_is_put_back(
    workspace: Path, command: str
) -> None:
    runtime, _ = runtime_for(workspace, _bash_over_held(command), permission_mode="bypassPermissions")
    a_wrote, b_ran = asyncio.Event(), asyncio.Event()
    gate_children(runtime, {"write it": {1: b_ran}, "shell it": {0: a_wrote}})

    def seen(event: object) -> None:
        if isinstance(event, AgentEvent) and isinstance(event.event, ToolFinished):
            if event.event.name == "Write":
                a_wrote.set()
            elif event.event.name == "Bash":
                b_ran.set()

    events = await run(runtime, "go", seen)
    (ran,) = [e for e in inner(events, "general-2") if isinstance(e, ToolFinished) and e.name == "Bash"]
    assert 'Put back shared.txt as general-1 (task #1 "A") left it: that task holds the file.' in ran.output
    assert (workspace / "shared.txt").read_text() == "from a\n"
    b_files = [f.path for f in runtime.changes.files_of("2")]
    assert "shared.txt" not in b_files  # what was undone is not task #2's change
    a_files = [(f.path, f.kind) for f in runtime.changes.files_of("1")]
    assert a_files == [("shared.txt", "created")]


async def test_a_held_file_is_left_alone_when_putting_it_back_could_lose_bytes(workspace: Path) -> None:
    """general-1 edits the file again outside its record (its own command, still running):
    general-2's change is then kept, and the result says whose file it was."""
    from todo_agent.core.agents.holds import Holds

    runtime, _ = runtime_for(
        workspace, _bash_over_held("echo from b > shared.txt"), permission_mode="bypassPermissions"
    )
    a_wrote, b_ran = asyncio.Event(), asyncio.Event()
    gate_children(runtime, {"write it": {1: b_ran}, "shell it": {0: a_wrote}})
    holds: Holds = runtime.team_runner.holds

    def seen(event: object) -> None:
        if isinstance(event, AgentEvent) and isinstance(event.event, ToolFinished):
            if event.event.name == "Write":
                holds.commands_of(AgentRef("general-1", runtime.session.id))(1)  # as if a command of its ran
                a_wrote.set()
            elif event.event.name == "Bash":
                b_ran.set()

    events = await run(runtime, "go", seen)
    (ran,) = [e for e in inner(events, "general-2") if isinstance(e, ToolFinished) and e.name == "Bash"]
    assert 'shared.txt is held by general-1 (task #1 "A"): this command changed it, and it was left so' in ran.output
    assert "running a command too" in ran.output
    assert (workspace / "shared.txt").read_text() == "from b\n"


@pytest.mark.script_may_end_early("the session's request budget stops two sub-agents before their scripts")
async def test_a_model_that_fans_out_without_end_is_stopped_with_a_stated_reason(workspace: Path) -> None:
    fan = {"tool_calls": [agent(f"Job {n}", f"job {n}") for n in range(3)]}
    script = {
        "steps": [fan, fan],
        "agents": [child(f"job {n}", {"text": f"job {n} done"}) for n in range(3)] * 2,
    }
    runtime, _ = runtime_for(workspace, script, max_turns=6)
    events = await run(runtime, "go")
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert "stopped after 6 model requests in this turn (max_turns), 4 of them by sub-agents" in notices
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "max_turns"
    statuses = sorted(r.status for r in finished(events).values())
    assert statuses == ["completed"] * 4 + ["partial"] * 2  # the second fan-out found one request left
    assert {r.reason for r in finished(events).values() if r.status == "partial"} == {
        "the main agent's turn used up its model requests (max_turns), its sub-agents' included"
    }


async def test_compact_while_children_run_keeps_them_known(workspace: Path) -> None:
    (workspace / "big.txt").write_text("".join(f"line {n} of something worth reading\n" for n in range(400)))
    script = {
        "steps": [
            {"tool_calls": [call("Read", file_path="big.txt")]},
            {"tool_calls": [agent("Slow job", "work slowly")]},
            {"text": "## Goal\nwork\n## Done\nthe slow job"},  # the summary request (no tools)
            {"text": "all done"},
        ],
        "agents": [child("work slowly", {"text": "slow job done: 3 files checked"})],
    }
    runtime, model = runtime_for(workspace, script)
    release = asyncio.Event()
    gated = gate_children(runtime, {"work slowly": {0: release}})
    turn = asyncio.ensure_future(run(runtime, "go"))
    await gated["work slowly"].waiting.wait()
    runtime.turn.compact_soon("")
    release.set()
    events = await turn
    assert any(type(e).__name__ == "Compacted" for e in events)
    last = model.requests[-1][-1]["content"]
    assert last.startswith("<system-reminder>\nSub-agents of this session")
    assert '- general-1 (general, "Slow job"): completed: slow job done: 3 files checked' in last


async def test_children_run_the_subagent_hooks_with_claude_codes_fields(workspace: Path) -> None:
    import json

    from todo_agent.core.hooks.spec import HookSpec

    log = workspace.parent / "hooks.jsonl"
    script = {
        "steps": [{"tool_calls": [agent("Look", "look around", subagent_type="explore")]}, {"text": "ok"}],
        "agents": [child("Look", {"text": "looked"}, {"text": "looked again"})],
    }
    hooks = [
        HookSpec("SubagentStart", f"cat >> {log}; echo >> {log}", matcher="explore"),
        HookSpec(
            "SubagentStop",
            f"cat >> {log}; echo >> {log}; "
            f"grep -q '\"stop_hook_active\": false' {log} && [ $(grep -c SubagentStop {log}) = 1 ] "
            "&& { echo 'check once more' >&2; exit 2; }; exit 0",
        ),
    ]
    runtime, _ = runtime_for(workspace, script, hooks=hooks)
    events = await run(runtime, "go")
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    start, first_stop, second_stop = lines
    assert (start["hook_event_name"], start["agent_id"], start["agent_type"]) == (
        "SubagentStart",
        "explore-1",
        "explore",
    )
    assert first_stop["hook_event_name"] == "SubagentStop" and first_stop["stop_hook_active"] is False
    assert first_stop["agent_transcript_path"].endswith(".agents/explore-1.jsonl")
    assert first_stop["last_assistant_message"] == "looked"
    assert second_stop["stop_hook_active"] is True  # the block kept it at work once
    assert finished(events)["explore-1"].summary == "looked again"


async def test_agent_types_narrow_tools_and_a_project_file_cannot_widen_anything(workspace: Path) -> None:
    agents = workspace / ".todo-agent" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews a diff\ntools: Read, Grep, Bash\n"
        "permissionMode: bypassPermissions\nmodel: script:evil.json\n---\nYou review.\n"
    )
    (agents / "explore.md").write_text("---\nname: explore\ntools: Write, Bash\n---\nWiden me.\n")
    claude = workspace / ".claude" / "agents"
    claude.mkdir(parents=True)
    (claude / "docs.md").write_text("---\nname: docs\ndescription: |\n  Writes docs.\n  Carefully.\n---\nWrite docs.\n")
    script = {
        "steps": [
            {
                "tool_calls": [
                    agent("Review", "review it", subagent_type="reviewer"),
                    agent("Peek", "peek", subagent_type="explore"),
                ]
            },
            {"text": "ok"},
        ],
        "agents": [
            child("review it", {"tool_calls": [call("Bash", command="echo hi")]}, {"text": "reviewed"}),
            child("peek", {"tool_calls": [call("Write", file_path="x.txt", content="x")]}, {"text": "peeked"}),
        ],
    }
    runtime, _ = runtime_for(workspace, script)  # default mode: no approver here, so asking means denied
    assert set(runtime.agent_types) == {"general", "explore", "reviewer", "docs"}
    assert runtime.agent_types["docs"].description == "Writes docs. Carefully."
    assert runtime.agent_types["reviewer"].model is None
    warnings = "\n".join(runtime.agent_warnings)
    assert "'permissionMode' ignored" in warnings and "a script: model ignored" in warnings
    assert "cannot replace the built-in 'explore'" in warnings
    events = await run(runtime, "go")
    tools = {name: [t.name for t in c.agent.tools] for name, c in runtime.team_runner.children.items() if c.agent}
    assert tools["reviewer-1"] == ["Read", "Bash", "Grep", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet"]
    assert tools["explore-2"] == ["Read", "Glob", "Grep", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet"]
    bash, write = (e for a in ("reviewer-1", "explore-2") for e in inner(events, a) if isinstance(e, ToolFinished))
    assert bash.status == "denied" and "nobody can be asked" in bash.output  # gated exactly like the main agent
    assert write.output.startswith("Error: unknown tool 'Write'")


async def test_a_resumed_session_knows_its_children_and_their_transcripts(workspace: Path) -> None:
    from todo_agent.core.runtime import Runtime
    from todo_agent.core.settings import Config

    script = {
        "steps": [plan("Job"), {"tool_calls": [agent("Job", "do the job", task_id="1")]}, {"text": "ok"}],
        "agents": [child("do the job", *done("1", "job done"))],
    }
    runtime, _ = runtime_for(workspace, script)
    await run(runtime, "go")
    runtime.close()
    resumed = Runtime.create(Config(workspace=workspace, model="script:none"), continue_latest=True)
    try:
        (record,) = resumed.team_runner.records()
        assert (record.agent_id, record.status, record.summary, record.task_id) == (
            "general-1",
            "completed",
            "job done",
            "1",
        )
        transcript = resumed.team.transcript("general-1")
        assert transcript is not None and transcript[0]["content"].startswith("do the job")
        assert resumed.team.results()[0]["files"] == []
        # numbers go on
        assert (
            resumed.team_runner._child(resumed.agent_types["general"], _call(), "c").id == "general-2"
        )  # numbers go on
    finally:
        resumed.close()


def _call() -> object:
    from todo_agent.core.agents.team import AgentCall

    return AgentCall("x", "y")


async def test_the_main_agents_edit_of_a_file_changed_since_it_read_it_is_refused(workspace: Path) -> None:
    from todo_agent.core.tools.context import ToolContext
    from todo_agent.core.tools.files import EDIT, READ, WRITE
    from todo_agent.core.tools.ledger import FileLedger
    from todo_agent.core.tools.results import ToolError

    target = workspace / "f.py"
    target.write_text("x = 1\n")
    ctx = ToolContext("c", workspace, files=FileLedger())
    edit = {"file_path": "f.py", "old_string": "x = 1", "new_string": "x = 3"}
    await READ.run({"file_path": "f.py"}, ctx)
    target.write_text("x = 1\ny = 2\n")  # the person, a formatter, another agent
    with pytest.raises(ToolError, match=r"f\.py changed since you last read it"):
        await EDIT.run(edit, ctx)
    assert target.read_text() == "x = 1\ny = 2\n"
    await READ.run({"file_path": "f.py"}, ctx)
    await EDIT.run(edit, ctx)
    assert target.read_text() == "x = 3\ny = 2\n"
    await EDIT.run({"file_path": "f.py", "old_string": "y = 2", "new_string": "y = 4"}, ctx)  # its own write is seen
    target.write_text("changed again\n")
    with pytest.raises(ToolError, match="changed since you last read it"):
        await WRITE.run({"file_path": "f.py", "content": "overwrite"}, ctx)
    assert target.read_text() == "changed again\n"


async def test_a_held_file_names_its_task_and_is_free_once_the_task_ends(workspace: Path) -> None:
    from todo_agent.core.agents.holds import Holds
    from todo_agent.core.changes.log import ChangeLog
    from todo_agent.core.tasks.model import Attempt, Claim
    from todo_agent.core.tasks.store import TaskStore

    store, changes = TaskStore.load(None), ChangeLog(None, workspace)
    ref = AgentRef("general-1", "s")
    await store.create("Write it")
    await store.claim("1", Claim("general-1", "s", 1, 0.0))
    holds = Holds(store, changes)
    path = (workspace / "it.txt").resolve()
    holds.wrote_by(ref, lambda: "1")(path)
    assert holds.holder_for(None)(path) == 'general-1 (task #1 "Write it")'
    assert holds.holder_for(ref)(path) is None  # its own file
    await store.update("1", status="completed", by=ref)
    await store.settle("1", ref, Attempt("general-1", "completed"))
    assert holds.holder_for(None)(path) is None
