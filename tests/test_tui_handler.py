"""The event handler, checked against a recording fake UI (no app runs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from todo_agent.core.events import (
    AssistantMessage,
    Compacted,
    Compacting,
    Error,
    Event,
    GoalProgress,
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
from todo_agent.core.tasks.model import Task
from todo_agent.tui.handler import ConversationUI, EventHandler
from todo_agent.tui.transcript import Entry, NoticeEntry, ToolEntry, ToolStatus


class RecordingUI:
    """Implements `ConversationUI` by writing down every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def stream_text(self, text: str) -> None:
        self.calls.append(("stream", text))

    async def finish_message(self, text: str | None) -> None:
        self.calls.append(("finish", text))

    async def discard_message(self) -> None:
        self.calls.append(("discard", None))

    async def add_entry(self, entry: Entry) -> None:
        self.calls.append(("entry", entry))

    async def stream_reasoning(self, text: str) -> None:
        self.calls.append(("reasoning", text))

    async def finish_reasoning(self, seconds: float) -> None:
        self.calls.append(("thought", seconds >= 0))

    async def finish_tool(self, call_id: str, name: str, output: str, status: ToolStatus, elapsed: float) -> None:
        self.calls.append(("tool_done", (call_id, name, output, status, elapsed)))

    async def show_tasks(self, tasks: Sequence[Task]) -> None:
        self.calls.append(("tasks", tuple(tasks)))

    def show_usage(self, usage: Usage) -> None:
        self.calls.append(("usage", (usage.prompt_tokens, usage.completion_tokens, usage.estimated)))

    def set_activity(self, text: str) -> None:
        self.calls.append(("activity", text))

    def count_down(self, say: Callable[[float], str], seconds: float) -> None:
        self.calls.append(("count_down", (say(seconds), say(seconds - 5.5), say(0), seconds)))

    def turn_ended(self, reason: str) -> None:
        self.calls.append(("ended", reason))

    def show_goal(self, progress: GoalProgress) -> None:
        self.calls.append(("goal", progress.label()))


async def run(*events: Event) -> list[tuple[str, Any]]:
    ui = RecordingUI()
    handler = EventHandler(ui)
    for event in events:
        await handler.handle(event)
    return ui.calls


def test_recording_ui_satisfies_the_protocol() -> None:
    ui: ConversationUI = RecordingUI()
    assert ui is not None


async def test_streamed_text_then_the_finished_message() -> None:
    calls = await run(
        TextDelta("Hel"), TextDelta("lo"), Usage(100, 5), AssistantMessage("Hello"), TurnEnd("done", "Hello")
    )
    assert calls == [
        ("stream", "Hel"),
        ("stream", "lo"),
        ("usage", (100, 5, False)),
        ("finish", "Hello"),
        ("ended", "done"),
    ]


async def test_a_tool_call_is_added_then_finished() -> None:
    calls = await run(
        AssistantMessage(""),
        ToolStarted("c1", "Bash", {"command": "ls"}, "ls"),
        ToolFinished("c1", "Bash", "a\nb", False, "ok", 0.5),
    )
    assert calls == [
        ("finish", ""),
        ("entry", ToolEntry("c1", "Bash", "ls")),
        ("tool_done", ("c1", "Bash", "a\nb", "ok", 0.5)),
    ]


async def test_a_call_cancelled_before_it_started_keeps_its_arguments() -> None:
    calls = await run(
        ToolStarted("c1", "Bash", {"command": "make"}, "make"),
        ToolFinished("c1", "Bash", "The user rejected this tool call.", True, "denied", summary="make"),
        ToolFinished("c2", "Bash", "cancelled: the user rejected", True, "cancelled", summary="rm -rf build"),
    )
    assert calls[2:] == [
        ("entry", ToolEntry("c2", "Bash", "rm -rf build")),
        ("tool_done", ("c2", "Bash", "cancelled: the user rejected", "cancelled", 0.0)),
    ]


async def test_discarded_response_drops_the_live_text_and_the_retry_says_why_counting_down() -> None:
    message = "the model's response was cut off (connection lost: reset)"
    calls = await run(
        TextDelta("partial"), ResponseDiscarded(message, 1), Retrying("connection lost", message, 8.0, 3, 6)
    )
    assert calls[1] == ("discard", None)
    kind, entry = calls[2]
    assert kind == "entry" and isinstance(entry, NoticeEntry) and entry.level == "warning"
    assert entry.text == f"{message} — retrying in 8 s (3 of 6)"
    assert calls[3] == (
        "count_down",
        (
            "connection lost — retrying in 8 s (3 of 6)",
            "connection lost — retrying in 3 s (3 of 6)",
            "connection lost — retrying now (3 of 6)",
            8.0,
        ),
    )
    assert len(calls) == 4


async def test_tasks_notices_and_errors() -> None:
    tasks = (Task("1", "Read"), Task("2", "Write", status="in_progress"))
    calls = await run(TasksUpdated(tasks), Notice("instructions loaded"), Error("rate limited"))
    assert calls == [
        ("tasks", tasks),
        ("entry", NoticeEntry("instructions loaded", "info")),
        ("entry", NoticeEntry("rate limited", "error")),
    ]


async def test_interrupted_mid_stream_keeps_what_streamed() -> None:
    calls = await run(TextDelta("half a thou"), Notice("interrupted", "warning"), TurnEnd("interrupted"))
    assert calls == [
        ("stream", "half a thou"),
        ("finish", None),
        ("entry", NoticeEntry("interrupted", "warning")),
        ("ended", "interrupted"),
    ]


async def test_error_mid_stream_closes_the_live_message_first() -> None:
    calls = await run(TextDelta("abc"), Error("server 500"), TurnEnd("error"))
    assert [c[0] for c in calls] == ["stream", "finish", "entry", "ended"]


async def test_a_rejected_tool_call_says_the_turn_stopped() -> None:
    calls = await run(TurnEnd("rejected"))
    kind, entry = calls[0]
    assert kind == "entry" and isinstance(entry, NoticeEntry) and "declined" in entry.text
    assert calls[-1] == ("ended", "rejected")


async def test_done_adds_no_notice() -> None:
    assert await run(TurnEnd("done")) == [("ended", "done")]


async def test_a_compaction_shows_activity_then_a_notice_with_tokens() -> None:
    calls = await run(Compacting("manual", 6712), Compacted(6712, 2104, "manual", 24, 6), TurnEnd("done"))
    assert calls[0] == ("activity", "compacting the conversation")
    notice = calls[1][1]
    assert isinstance(notice, NoticeEntry)
    assert notice.text == "compacted the conversation (/compact): 6,712 → 2,104 tokens; 24 messages summarised, 6 kept"
    assert calls[2] == ("usage", (2104, 0, True))


async def test_goal_progress_goes_to_the_status_line() -> None:
    progress = GoalProgress("ship it", 5, 4, 3, 1, 40, 210_400, 12 * 60 + 5)
    assert await run(progress) == [("goal", "goal 3/5 verified · 1 without a check · 12 min · 210k tok")]
