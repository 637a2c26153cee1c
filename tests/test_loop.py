"""Event sequences of the agent loop, with the scripted model and small test tools."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from todo_agent.core.engine.batch import NO_APPROVER
from todo_agent.core.engine.loop import Agent, AgentOptions
from todo_agent.core.events import (
    AssistantMessage,
    Error,
    Event,
    Notice,
    ResponseDiscarded,
    Retrying,
    TasksUpdated,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnEnd,
    Usage,
)
from todo_agent.core.lifecycle import Lifecycle, TurnState
from todo_agent.core.model.base import Message, ModelError, ModelResponse, StreamItem, ToolCall
from todo_agent.core.model.history import assistant_message, cut_arguments, unanswered_tool_calls
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.core.permissions.policy import PermissionPolicy
from todo_agent.core.tasks.model import Task
from todo_agent.core.tools.arguments import object_schema
from todo_agent.core.tools.base import Tool
from todo_agent.core.tools.context import ToolContext
from todo_agent.core.tools.results import ToolError


async def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"echo {args.get('text', '')}"


async def _fail(args: dict[str, Any], ctx: ToolContext) -> str:
    raise ToolError("this always fails")


async def _emit_three(args: dict[str, Any], ctx: ToolContext) -> str:
    for n in range(3):
        ctx.emit(TasksUpdated((Task(id=str(n + 1), subject=f"t{n + 1}"),)))
    return "emitted"


async def _write(args: dict[str, Any], ctx: ToolContext) -> str:
    target = ctx.resolve(args["file_path"])
    target.write_text(args.get("content", ""))
    return f"wrote {target.name}"


BLOCKER = asyncio.Event()
STARTED = asyncio.Event()


async def _block(args: dict[str, Any], ctx: ToolContext) -> str:
    STARTED.set()
    await BLOCKER.wait()
    return "unblocked"


ECHO = Tool(
    "Echo", "echo text", object_schema({"text": {"type": "string"}}), _echo, "read", lambda a: a.get("text", "")
)
FAIL = Tool("Fail", "fails", object_schema({}), _fail, "read")
EMIT = Tool("Emit", "emits task events", object_schema({}), _emit_three, "task")
WRITE = Tool(
    "Write", "writes", object_schema({"file_path": {"type": "string"}}), _write, "edit", paths={"file_path": "write"}
)
BLOCK = Tool("Block", "waits forever", object_schema({}), _block, "read")
TOOLS = [ECHO, FAIL, EMIT, WRITE, BLOCK]


def call(name: str, args: Any, call_id: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "arguments": args}
    if call_id:
        entry["id"] = call_id
    return entry


def make_agent(workspace: Path, steps: list[Any], **kwargs: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel.from_data(steps)
    agent = Agent(
        model=model,
        tools=TOOLS,
        workspace=workspace,
        permissions=kwargs.pop("permissions", PermissionPolicy(workspace)),
        system_prompt="test",
        options=AgentOptions(retry_delay=0),
        **kwargs,
    )
    return agent, model


async def collect(agent: Agent, prompt: str) -> list[Event]:
    async with aclosing(agent.run_turn(prompt)) as events:
        return [event async for event in events]


def kinds(events: Sequence[Event]) -> list[str]:
    """Event type names, with runs of text deltas folded into one."""
    names: list[str] = []
    for event in events:
        name = type(event).__name__
        if name == "TextDelta" and names and names[-1] == "TextDelta":
            continue
        names.append(name)
    return names


def assert_history_valid(history: list[Message]) -> None:
    """Every assistant tool call is answered before the next non-tool message."""
    for index, message in enumerate(history):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        replies = []
        for later in history[index + 1 :]:
            if later.get("role") != "tool":
                break
            replies.append(later["tool_call_id"])
        assert sorted(replies) == sorted(c["id"] for c in message["tool_calls"]), history
        for c in message["tool_calls"]:
            json.loads(c["function"]["arguments"])


async def test_text_only_turn(workspace: Path) -> None:
    agent, model = make_agent(workspace, [{"text": "Hello there, this is a longer answer."}])
    events = await collect(agent, "hi")
    assert kinds(events) == ["TextDelta", "Usage", "AssistantMessage", "TurnEnd"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there, this is a longer answer."
    end = events[-1]
    assert isinstance(end, TurnEnd) and end.reason == "done" and end.final_text.startswith("Hello")
    assert [m["role"] for m in agent.history] == ["user", "assistant"]
    model.assert_complete()


async def test_read_only_batch_runs_concurrently_and_replies_in_order(workspace: Path) -> None:
    steps = [
        {"tool_calls": [call("Echo", {"text": "a"}), call("Echo", {"text": "b"})]},
        {"text": "done"},
    ]
    agent, model = make_agent(workspace, steps)
    events = await collect(agent, "go")
    assert kinds(events) == [
        "Usage",
        "AssistantMessage",
        "ToolStarted",
        "ToolStarted",
        "ToolFinished",
        "ToolFinished",
        "TextDelta",
        "Usage",
        "AssistantMessage",
        "TurnEnd",
    ]
    outputs = [e.output for e in events if isinstance(e, ToolFinished)]
    assert outputs == ["echo a", "echo b"]
    assert_history_valid(agent.history)
    # The second request saw both tool replies.
    assert [m["role"] for m in model.requests[1]] == ["system", "user", "assistant", "tool", "tool"]
    model.assert_complete()


async def test_bad_calls_get_error_results_and_valid_history(workspace: Path) -> None:
    steps = [
        {
            "tool_calls": [
                call("Nope", {}),
                call("Echo", '{"text": "unterminated'),
                call("Fail", {}),
                call("Echo", json.dumps(json.dumps({"text": "double"}))),
            ]
        },
        {"text": "ok"},
    ]
    agent, _model = make_agent(workspace, steps)
    events = await collect(agent, "go")
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [e.is_error for e in finished] == [True, True, True, False]
    assert "unknown tool 'Nope'" in finished[0].output
    assert "invalid JSON" in finished[1].output
    assert finished[2].output == "Error: this always fails"
    assert finished[3].output == "echo double"
    stored = agent.history[1]["tool_calls"]
    assert stored[1]["function"]["arguments"] == "{}"  # never replayed as invalid JSON
    assert_history_valid(agent.history)
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "done"


async def test_a_call_of_an_unknown_tool_shows_what_the_model_sent(workspace: Path) -> None:
    steps = [
        {"tool_calls": [call("Nope", {"path": "x.txt", "n": 2}), call("Gone", "not json at all")]},
        {"text": "ok"},
    ]
    agent, _model = make_agent(workspace, steps)
    events = await collect(agent, "go")
    started = [e for e in events if isinstance(e, ToolStarted)]
    assert [e.arguments for e in started] == [{"path": "x.txt", "n": 2}, {"arguments": "not json at all"}]
    assert_history_valid(agent.history)


async def test_batch_events_are_coalesced(workspace: Path) -> None:
    steps = [{"tool_calls": [call("Emit", {}), call("Emit", {})]}, {"text": "ok"}]
    agent, _ = make_agent(workspace, steps)
    events = await collect(agent, "go")
    updates = [e for e in events if isinstance(e, TasksUpdated)]
    assert len(updates) == 1
    assert updates[0].tasks[0].id == "3"
    # Forwarded after the batch: after the last ToolFinished, before the next response.
    index = events.index(updates[0])
    assert isinstance(events[index - 1], ToolFinished)


async def test_headless_denies_what_would_ask(workspace: Path) -> None:
    steps = [{"tool_calls": [call("Write", {"file_path": "x.txt", "content": "hi"})]}, {"text": "ok"}]
    agent, _ = make_agent(workspace, steps)
    events = await collect(agent, "go")
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert finished.status == "denied" and finished.output.startswith(NO_APPROVER)
    assert not (workspace / "x.txt").exists()


async def test_bypass_mode_allows_edits(workspace: Path) -> None:
    steps = [{"tool_calls": [call("Write", {"file_path": "x.txt", "content": "hi"})]}, {"text": "ok"}]
    agent, _ = make_agent(workspace, steps, permissions=PermissionPolicy(workspace, "bypassPermissions"))
    await collect(agent, "go")
    assert (workspace / "x.txt").read_text() == "hi"


def approver_answering(*answers: ApprovalAnswer) -> tuple[Any, list[ApprovalRequest]]:
    asked: list[ApprovalRequest] = []
    queue = list(answers)

    async def approve(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return queue.pop(0)

    return approve, asked


async def test_approval_yes_runs_the_tool(workspace: Path) -> None:
    approve, asked = approver_answering(ApprovalAnswer("yes"))
    steps = [{"tool_calls": [call("Write", {"file_path": "x.txt", "content": "hi"})]}, {"text": "ok"}]
    agent, _ = make_agent(workspace, steps, approver=approve)
    events = await collect(agent, "go")
    assert (workspace / "x.txt").read_text() == "hi"
    assert asked[0].tool == "Write" and asked[0].suggested_rule == "Write(x.txt)"
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "done"


@pytest.mark.script_may_end_early("the second step is a sentinel: `model.used == 1` proves it was never asked for")
async def test_approval_no_stops_turn_and_cancels_rest_of_batch(workspace: Path) -> None:
    approve, _ = approver_answering(ApprovalAnswer("no"))
    steps = [
        {
            "tool_calls": [
                call("Write", {"file_path": "x.txt", "content": "hi"}),
                call("Echo", {"text": "later"}),
            ]
        },
        {"text": "never requested"},
    ]
    agent, model = make_agent(workspace, steps, approver=approve)
    events = await collect(agent, "go")
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [e.status for e in finished] == ["denied", "cancelled"]
    assert finished[1].summary == "later"  # a call that never started still says what it was
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "rejected"
    assert model.used == 1
    assert_history_valid(agent.history)


async def test_approval_feedback_goes_to_model_and_turn_continues(workspace: Path) -> None:
    approve, _ = approver_answering(ApprovalAnswer("feedback", "use y.txt instead"))
    steps = [{"tool_calls": [call("Write", {"file_path": "x.txt", "content": "hi"})]}, {"text": "ok, y.txt then"}]
    agent, model = make_agent(workspace, steps, approver=approve)
    events = await collect(agent, "go")
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "done"
    tool_reply = model.requests[1][-1]
    assert tool_reply["role"] == "tool" and "use y.txt instead" in tool_reply["content"]


async def test_approval_always_adds_a_session_rule(workspace: Path) -> None:
    approve, asked = approver_answering(ApprovalAnswer("always"))
    steps = [
        {"tool_calls": [call("Write", {"file_path": "x.txt", "content": "1"})]},
        {"tool_calls": [call("Write", {"file_path": "x.txt", "content": "2"})]},
        {"text": "ok"},
    ]
    agent, _ = make_agent(workspace, steps, approver=approve)
    await collect(agent, "go")
    assert len(asked) == 1  # the second write matched the added rule
    assert (workspace / "x.txt").read_text() == "2"
    assert [str(r) for r in agent.permissions.session_allow] == ["Write(x.txt)"]


async def test_interrupt_while_tool_runs_leaves_valid_history(workspace: Path) -> None:
    BLOCKER.clear()
    STARTED.clear()
    steps = [{"tool_calls": [call("Block", {}), call("Echo", {"text": "x"})]}]
    agent, _ = make_agent(workspace, steps)

    async def interrupt_when_started() -> None:
        await STARTED.wait()
        agent.interrupt()

    interrupter = asyncio.create_task(interrupt_when_started())
    events = await collect(agent, "go")
    await interrupter
    end = events[-1]
    assert isinstance(end, TurnEnd) and end.reason == "interrupted"
    statuses = [e.status for e in events if isinstance(e, ToolFinished)]
    assert statuses == ["cancelled", "cancelled"]
    assert_history_valid(agent.history)
    assert unanswered_tool_calls(agent.history) == []
    assert not agent.busy


class HangingModel:
    """Streams some text, then waits until cancelled."""

    name = "hanging"

    def __init__(self) -> None:
        self.streaming = asyncio.Event()

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        yield "partial answer"
        self.streaming.set()
        await asyncio.Event().wait()
        yield ModelResponse("never")


async def test_interrupt_mid_stream_keeps_partial_text(workspace: Path) -> None:
    model = HangingModel()
    agent = Agent(
        model=model, tools=TOOLS, workspace=workspace, permissions=PermissionPolicy(workspace), system_prompt=""
    )

    async def interrupt_when_streaming() -> None:
        await model.streaming.wait()
        agent.interrupt()

    interrupter = asyncio.create_task(interrupt_when_streaming())
    events = await collect(agent, "go")
    await interrupter
    assert kinds(events) == ["TextDelta", "Notice", "TurnEnd"]
    assert agent.history[-1]["role"] == "assistant"
    assert agent.history[-1]["content"].startswith("partial answer")


class FlakyModel:
    """Fails part-way once, then answers."""

    name = "flaky"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        self.calls += 1
        if self.calls == 1:
            yield "half"
            raise ModelError("the model's response was cut off", retryable=True)
        yield "whole answer"
        yield ModelResponse("whole answer")


async def test_cut_off_stream_is_discarded_and_retried(workspace: Path) -> None:
    model = FlakyModel()
    agent = Agent(
        model=model,
        tools=TOOLS,
        workspace=workspace,
        permissions=PermissionPolicy(workspace),
        system_prompt="",
        options=AgentOptions(retry_delay=0),
    )
    events = await collect(agent, "go")
    assert kinds(events) == [
        "TextDelta",
        "ResponseDiscarded",
        "Retrying",
        "TextDelta",
        "Usage",
        "AssistantMessage",
        "TurnEnd",
    ]
    assert isinstance(events[1], ResponseDiscarded)
    assert agent.history[-1] == {"role": "assistant", "content": "whole answer"}
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.estimated


async def test_script_running_out_is_an_error_not_a_crash(workspace: Path) -> None:
    agent, _ = make_agent(workspace, [{"tool_calls": [call("Echo", {"text": "a"})]}])
    events = await collect(agent, "go")
    assert isinstance(events[-2], Error) and "no step 2" in events[-2].message
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "error"
    assert_history_valid(agent.history)


async def test_lifecycle_reminders_and_turn_end_continue_once(workspace: Path) -> None:
    seen_states: list[int] = []

    def remind(history: Sequence[Message]) -> list[Message]:
        return [{"role": "user", "content": "<system-reminder>r</system-reminder>"}] if len(history) == 1 else []

    def stop_check(state: TurnState) -> str | None:
        seen_states.append(state.continuations)
        return "keep going" if state.continuations == 0 else None

    lifecycle = Lifecycle(before_request=[remind], turn_end=[stop_check])
    agent, model = make_agent(workspace, [{"text": "first"}, {"text": "second"}], lifecycle=lifecycle)
    events = await collect(agent, "go")
    assert seen_states == [0, 1]
    assert [m["content"] for m in model.requests[0][1:]] == ["go", "<system-reminder>r</system-reminder>"]
    assert model.requests[1][-1] == {"role": "user", "content": "keep going"}
    assert isinstance(events[-1], TurnEnd) and events[-1].final_text == "second"
    assert next(e for e in events if isinstance(e, AssistantMessage)).content == "first"


async def test_busy_agent_refuses_a_second_turn(workspace: Path) -> None:
    agent, _ = make_agent(workspace, [])
    agent.busy = True
    with pytest.raises(RuntimeError):
        await collect(agent, "go")


async def test_tool_started_carries_summary(workspace: Path) -> None:
    agent, _ = make_agent(workspace, [{"tool_calls": [call("Echo", {"text": "hello"})]}, {"text": "ok"}])
    events = await collect(agent, "go")
    started = next(e for e in events if isinstance(e, ToolStarted))
    assert started.summary == "hello" and started.arguments == {"text": "hello"}
    assert not any(isinstance(e, Notice) for e in events)


def test_tool_call_ids_are_made_unique() -> None:
    calls = (ToolCall("same", "Echo", "{}"), ToolCall("same", "Echo", "{}"))
    message, recorded = assistant_message([], ModelResponse("", calls))
    assert len({c.id for c in recorded}) == 2
    assert [c["id"] for c in message["tool_calls"]] == [c.id for c in recorded]


def test_huge_arguments_are_kept_cut_as_valid_json_with_the_same_keys() -> None:
    small = json.dumps({"file_path": "a.py", "content": "x = 1\n"})
    assert cut_arguments(small, 2_000) == small
    raw = json.dumps({"subject": "x" * 1_000_000, "description": "d" * 50_000, "n": 3, "tags": ["t" * 9_000]})
    kept = json.loads(cut_arguments(raw, 2_000))
    assert set(kept) == {"subject", "description", "n", "tags"} and kept["n"] == 3
    assert len(json.dumps(kept)) < 2_000 + 400  # the notes saying what was cut
    assert kept["subject"].startswith("xxx") and kept["subject"].endswith("x")
    assert "999,667 characters not kept in the history" in kept["subject"]  # a sixth of 2,000 kept
    assert "characters not kept in the history" in kept["tags"][0]
    many = json.dumps({"edits": [{"old": str(n), "new": str(n)} for n in range(5_000)]})  # no long string
    assert json.loads(cut_arguments(many, 2_000)) == {
        "_note": f"{len(many):,} characters of arguments, not kept in the history"
    }


async def test_edit_approval_shows_a_unified_diff(workspace: Path) -> None:
    from todo_agent.core.tools.files import EDIT

    (workspace / "a.py").write_text("x = 1\n")
    approve, asked = approver_answering(ApprovalAnswer("yes"))
    steps = [
        {"tool_calls": [call("Edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})]},
        {"text": "ok"},
    ]
    model = ScriptedModel.from_data(steps)
    agent = Agent(
        model=model, tools=[EDIT], workspace=workspace, permissions=PermissionPolicy(workspace), system_prompt="",
        approver=approve,
    )  # fmt: skip
    await collect(agent, "go")
    assert asked[0].preview_kind == "diff"
    assert "-x = 1" in asked[0].preview and "+x = 2" in asked[0].preview
    assert (workspace / "a.py").read_text() == "x = 2\n"


async def test_approval_summary_prefers_the_models_description(workspace: Path) -> None:
    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        return "ran"

    shell = Tool("Bash", "runs", object_schema({"command": {"type": "string"}}), run, "execute", lambda a: a["command"])
    approve, asked = approver_answering(ApprovalAnswer("yes"), ApprovalAnswer("yes"))
    steps = [
        {"tool_calls": [call("Bash", {"command": "pytest -q", "description": "Run the tests"})]},
        {"tool_calls": [call("Bash", {"command": "ls"})]},
        {"text": "ok"},
    ]
    agent = Agent(
        model=ScriptedModel.from_data(steps), tools=[shell], workspace=workspace,
        permissions=PermissionPolicy(workspace), system_prompt="", approver=approve,
    )  # fmt: skip
    await collect(agent, "go")
    assert [(r.summary, r.preview, r.preview_kind) for r in asked] == [
        ("Run the tests", "pytest -q", "command"),
        ("ls", "ls", "command"),
    ]


class BrokenModel:
    """A model client that fails in a way nobody foresaw."""

    name = "broken"

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        yield "par"
        raise KeyError("choices")


async def test_an_unforeseen_model_failure_ends_the_turn_not_the_session(workspace: Path) -> None:
    agent = Agent(
        model=BrokenModel(), tools=TOOLS, workspace=workspace, permissions=PermissionPolicy(workspace), system_prompt=""
    )
    events = await collect(agent, "go")
    assert kinds(events) == ["TextDelta", "Error", "TurnEnd"]
    assert isinstance(events[1], Error) and "could not be read (KeyError" in events[1].message
    assert agent.history == [{"role": "user", "content": "go"}]  # nothing half-read was kept


class AlwaysCutOff:
    """Every response is cut off part-way, so a retry wait always follows."""

    name = "always-cut-off"

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        yield "The answer is fo"
        raise ModelError("cut off", retryable=True)


async def test_interrupt_during_the_retry_wait_keeps_no_discarded_text(workspace: Path) -> None:
    model = AlwaysCutOff()
    agent = Agent(
        model=model, tools=TOOLS, workspace=workspace, permissions=PermissionPolicy(workspace), system_prompt="",
        options=AgentOptions(retry_delay=30),
    )  # fmt: skip
    events: list[Event] = []
    async with aclosing(agent.run_turn("go")) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ResponseDiscarded):
                agent.interrupt()
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "interrupted"
    assert agent.history == [{"role": "user", "content": "go"}]


async def test_task_tools_in_one_response_run_in_order(workspace: Path) -> None:
    from todo_agent.core.tasks.store import TaskStore
    from todo_agent.core.tools.tasks import TASK_TOOLS_V2

    steps = [
        {
            "tool_calls": [
                call("TaskCreate", {"subject": "first"}),
                call("TaskList", {}),
                call("TaskGet", {"taskId": "1"}),
            ]
        },
        {"text": "ok"},
    ]
    agent = Agent(
        model=ScriptedModel.from_data(steps), tools=TASK_TOOLS_V2, workspace=workspace,
        permissions=PermissionPolicy(workspace), system_prompt="", tasks=TaskStore.load(None),
    )  # fmt: skip
    events = await collect(agent, "go")
    listing, got = [e.output for e in events if isinstance(e, ToolFinished)][1:]
    assert "first" in listing and "first" in got and not got.startswith("Error")


async def test_call_ids_stay_unique_across_turns(workspace: Path) -> None:
    steps = [
        {"tool_calls": [call("Echo", {"text": "a"}, call_id="call_1")]},
        {"text": "one"},
        {"tool_calls": [call("Echo", {"text": "b"}, call_id="call_1")]},
        {"text": "two"},
    ]
    agent, _ = make_agent(workspace, steps)
    await collect(agent, "first")
    await collect(agent, "second")
    ids = [c["id"] for m in agent.history if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert len(ids) == 2 and len(set(ids)) == 2
    assert_history_valid(agent.history)


class AlwaysFails:
    """Every request fails before any text, with an error worth retrying."""

    name = "always-fails"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        self.calls += 1
        raise ModelError("server error (HTTP 503)", retryable=True)
        yield ""  # pragma: no cover  (makes this an async generator)


@pytest.mark.parametrize("retries", [0, 1, 3])
async def test_request_retries_stop_after_the_configured_count(workspace: Path, retries: int) -> None:
    model = AlwaysFails()
    agent = Agent(
        model=model, tools=TOOLS, workspace=workspace, permissions=PermissionPolicy(workspace), system_prompt="",
        options=AgentOptions(request_retries=retries, retry_delay=0),
    )  # fmt: skip
    events = await collect(agent, "go")
    assert model.calls == retries + 1
    waits = [(e.retry, e.retries, e.message) for e in events if isinstance(e, Retrying)]
    assert waits == [(n, retries, "server error (HTTP 503)") for n in range(1, retries + 1)]
    assert kinds(events)[-2:] == ["Error", "TurnEnd"]
    error = next(e for e in events if isinstance(e, Error))
    gave_up = f" (gave up after {retries} {'retry' if retries == 1 else 'retries'} in 0 s)" if retries else ""
    assert error.message == "server error (HTTP 503)" + gave_up
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "error"


async def test_a_read_outside_the_workspace_asks_even_among_other_reads(workspace: Path, tmp_path: Path) -> None:
    from todo_agent.core.tools import files

    outside = tmp_path / "elsewhere" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text("outside\n")
    (workspace / "a.txt").write_text("a\n")
    (workspace / "c.txt").write_text("c\n")
    approve, asked = approver_answering(ApprovalAnswer("yes"))
    reads = [call("Read", {"file_path": p}) for p in ("a.txt", str(outside), "c.txt")]
    agent = Agent(
        model=ScriptedModel.from_data([{"tool_calls": reads}, {"text": "ok"}]), tools=files.TOOLS,
        workspace=workspace, permissions=PermissionPolicy(workspace), system_prompt="", approver=approve,
    )  # fmt: skip
    events = await collect(agent, "go")
    assert [(r.tool, r.arguments["file_path"], r.outside_workspace) for r in asked] == [("Read", str(outside), True)]
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [e.status for e in finished] == ["ok", "ok", "ok"] and "outside" in finished[1].output


@pytest.mark.script_may_end_early("checks that assert_complete() itself fails on a script nobody played")
async def test_a_script_can_answer_a_rejected_call_with_its_own_steps(workspace: Path) -> None:
    """The demo's way out: `on_rejected` steps replace the rest of the script."""
    approve, _ = approver_answering(ApprovalAnswer("feedback", "use a smaller page"), ApprovalAnswer("no"))
    steps = [
        {
            "tool_calls": [call("Write", {"file_path": "x.txt", "content": "hi"})],
            "on_rejected": [{"tool_calls": [call("Echo", {"text": "undo"})]}, {"text": "Left x.txt alone."}],
        },
        {"text": "x.txt written and checked."},  # what a script without the branch would say
    ]
    agent, model = make_agent(workspace, steps, approver=approve)
    events = await collect(agent, "write it")
    texts = [e.content for e in events if isinstance(e, AssistantMessage) and e.content]
    assert texts == ["Left x.txt alone."] and not (workspace / "x.txt").exists()
    assert [e.name for e in events if isinstance(e, ToolStarted)] == ["Write", "Echo"]
    model.assert_complete()  # the branch ends the script
    with pytest.raises(AssertionError):
        ScriptedModel.from_data(steps).assert_complete()

    # A plain "no" stops the turn; the branch answers the person's next message.
    agent, model = make_agent(workspace, steps, approver=approve)
    first = await collect(agent, "write it")
    assert isinstance(first[-1], TurnEnd) and first[-1].reason == "rejected"
    again = await collect(agent, "why not?")
    assert [e.content for e in again if isinstance(e, AssistantMessage) and e.content] == ["Left x.txt alone."]
    model.assert_complete()
