"""Reminders derived from history, and the stop check, against hand-built histories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from todo_agent.core.lifecycle import Lifecycle, TurnState
from todo_agent.core.model.base import Message
from todo_agent.core.tasks.reminders import (
    is_task_reminder,
    steps_since_task_list,
    task_reminder_provider,
    unfinished_stop_check,
    wrap,
)
from todo_agent.core.tasks.render import LEGEND
from todo_agent.core.tasks.store import TaskStore

NOT_VISIBLE = "<system-reminder>\nThis is the current task list for this session"
STALE_6 = "<system-reminder>\nYou have not updated the task list in the last 6 steps"


class Conversation:
    """Plays the loop: before each request the provider may append; the model answers."""

    def __init__(self, store: TaskStore, interval: int = 6) -> None:
        self.store = store
        self.lifecycle = Lifecycle(before_request=[task_reminder_provider(store, interval)])
        self.history: list[Message] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}]
        self.requests = 0

    def request(self) -> list[str]:
        """Request number `self.requests`: what got appended before it."""
        self.requests += 1
        added = self.lifecycle.collect_before_request(self.history)
        self.history.extend(added)
        return [str(m["content"]) for m in added]

    async def respond(self, *tools: str) -> None:
        """Response number `self.requests`, calling `tools` (task tools really run)."""
        calls: list[dict[str, Any]] = [
            {"id": f"c{self.requests}_{n}", "type": "function", "function": {"name": name, "arguments": "{}"}}
            for n, name in enumerate(tools)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": "working"}
        if calls:
            message["tool_calls"] = calls
        self.history.append(message)
        for call in calls:
            if call["function"]["name"] == "TaskCreate":
                await self.store.create(f"task from response {self.requests}")
            self.history.append({"role": "tool", "tool_call_id": call["id"], "content": "ok"})


async def test_interval_reminder_comes_exactly_before_request_k_plus_7() -> None:
    store = TaskStore(None)
    talk = Conversation(store)
    assert talk.request() == []  # request 1: nothing on the list yet
    await talk.respond("TaskCreate", "Read")  # response k = 1
    k = talk.requests
    for _ in range(6):  # requests k+1 … k+6
        assert talk.request() == []
        await talk.respond("Read")
    reminders = talk.request()  # request k+7
    assert talk.requests == k + 7
    assert len(reminders) == 1 and reminders[0].startswith(STALE_6)
    assert "\n☐ #1 task from response 1\n" in reminders[0]

    # The reminder restarts the count: six more responses, then the next one.
    r = talk.requests
    for _ in range(5):
        await talk.respond("Bash")  # responses r … r+4
        assert talk.request() == []  # requests r+1 … r+5
    await talk.respond("Bash")  # response r+5
    assert talk.request()[0].startswith(STALE_6)
    assert talk.requests == r + 6


async def test_reminder_cadence_is_every_interval_without_task_calls() -> None:
    store = TaskStore(None)
    await store.create("long job")
    talk = Conversation(store, interval=3)
    talk.history.append(
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "TaskCreate", "arguments": "{}"}}]}
    )
    talk.history.append({"role": "tool", "tool_call_id": "x", "content": "Task #1 created: long job"})
    reminded = []
    for _ in range(12):
        if talk.request():
            reminded.append(talk.requests)
        await talk.respond("Read")
    assert reminded == [4, 7, 10]


async def test_a_task_call_resets_the_count_and_is_never_followed_by_a_reminder() -> None:
    store = TaskStore(None)
    await store.create("a")
    talk = Conversation(store, interval=1)
    await talk.respond("TaskUpdate")
    assert talk.request() == []  # right after a task-tool call: never
    await talk.respond("Read")
    assert len(talk.request()) == 1  # interval 1: the very next step
    await talk.respond("TodoWrite")
    assert talk.request() == []


async def test_list_not_visible_in_history_is_shown_on_the_first_request() -> None:
    store = TaskStore(None)
    await store.create("Read posts route")
    await store.create("Add pagination")
    await store.update("1", status="in_progress")
    talk = Conversation(store)  # a resumed or compacted history: no task calls, no reminders

    reminders = talk.request()

    assert reminders == [
        wrap(
            "This is the current task list for this session. Continue from it and keep it up to date "
            f"with the task tools.\n\n◼ #1 Read posts route\n☐ #2 Add pagination\n({LEGEND})"
        )
    ]
    assert talk.history[-1] == {"role": "user", "content": reminders[0]}
    await talk.respond("Read")
    assert talk.request() == []  # the reminder itself now counts as seen


async def test_nothing_when_everything_is_completed_or_the_list_is_empty() -> None:
    store = TaskStore(None)
    talk = Conversation(store)
    assert talk.request() == []
    await store.create("a")
    await store.update("1", status="completed")
    for _ in range(10):
        await talk.respond("Read")
        assert talk.request() == []


async def test_interval_zero_turns_the_periodic_reminder_off() -> None:
    store = TaskStore(None)
    talk = Conversation(store, interval=0)
    await talk.respond("TaskCreate")
    for _ in range(20):
        assert talk.request() == []
        await talk.respond("Read")


async def test_user_edits_are_delivered_once_with_the_list() -> None:
    store = TaskStore(None)
    talk = Conversation(store)
    await talk.respond("TaskCreate")
    await store.user_add("Write the changelog")
    await store.user_set_status("1", "completed")

    assert talk.request() == [
        wrap(
            'The user edited the task list: added #2 "Write the changelog"; marked #1 completed. '
            f"Follow the updated list.\n\n☒ #1 task from response 0\n☐ #2 Write the changelog\n({LEGEND})"
        )
    ]
    assert talk.request() == []
    assert store.take_user_changes() == ()


async def test_user_edits_are_delivered_even_when_nothing_is_left_to_do() -> None:
    store = TaskStore(None)
    await store.user_add("only")
    await store.user_delete("1")
    talk = Conversation(store)
    [reminder] = talk.request()
    assert reminder == wrap(
        'The user edited the task list: added #1 "only"; deleted #1 "only". Follow the updated list.\n\nNo tasks.'
    )


def test_only_our_own_reminders_are_recognised() -> None:
    ours = {
        "role": "user",
        "content": wrap("You have not updated the task list in the last 6 steps.\n\n#1 [pending] a"),
    }
    assert is_task_reminder(ours)
    assert is_task_reminder({"role": "user", "content": wrap("You still have unfinished tasks: #1")})
    not_ours: list[Message] = [
        {"role": "user", "content": "what does <system-reminder> mean?"},
        {"role": "user", "content": "see:\n" + ours["content"]},  # quoted after other text
        {"role": "user", "content": wrap("Some other system note")},  # the tag, but not our header
        {"role": "user", "content": "<system-reminder>\nThis is the current task list for this session"},  # unclosed
        {"role": "assistant", "content": ours["content"]},
        {"role": "user", "content": [{"type": "text", "text": ours["content"]}]},
    ]
    assert not any(is_task_reminder(m) for m in not_ours)


async def test_text_that_only_looks_like_a_reminder_does_not_reset_the_count() -> None:
    store = TaskStore(None)
    talk = Conversation(store)
    await talk.respond("TaskCreate")
    for _ in range(6):
        assert talk.request() == []
        await talk.respond("Read")
    talk.history.append(
        {"role": "user", "content": "fyi <system-reminder>\nThis is the current task list for this session"}
    )
    assert talk.request()[0].startswith(STALE_6)


def test_steps_are_counted_from_tool_call_names() -> None:
    def assistant(*names: str) -> Message:
        return {"role": "assistant", "tool_calls": [{"function": {"name": n, "arguments": "{}"}} for n in names]}

    assert steps_since_task_list([assistant("Read")]) is None
    assert steps_since_task_list([assistant("Read", "TaskGet"), assistant("Bash"), {"role": "user"}]) == 1
    assert steps_since_task_list([assistant("TaskList"), assistant(), assistant("Edit")]) == 2
    odd: Message = {"role": "assistant", "tool_calls": [None, {"function": "TaskList"}, {"nope": 1}]}
    assert steps_since_task_list([odd]) is None
    json.dumps(odd)  # still a plain, serialisable message


async def test_stop_check_fires_once_when_a_task_is_still_in_progress() -> None:
    store = TaskStore(None)
    changed = {"1": ["api.py", "tests/test_api.py"]}
    check = unfinished_stop_check(store, lambda task_id: changed.get(task_id, []))
    await store.create("Add pagination")
    await store.create("Run tests")
    await store.create("Write docs")
    assert check(TurnState(history=[], continuations=0)) is None  # pending only: not "in progress"

    await store.update("1", status="in_progress")
    for _ in range(7):
        await store.record_tool_call(0.1)
    await store.update("3", status="completed")
    text = check(TurnState(history=[], continuations=0))
    assert text == wrap(
        'You still have unfinished tasks: #1 "Add pagination" still in_progress. Finish the work and mark it '
        "completed, or set it back to pending if it cannot be finished now; then end your turn.\n"
        "Done under the open tasks: #1 7 calls, changed api.py, tests/test_api.py; #2 nothing yet.\n\n"
        f"◼ #1 Add pagination\n☐ #2 Run tests\n☒ #3 Write docs\n({LEGEND})"
    )
    assert is_task_reminder({"role": "user", "content": text})
    assert check(TurnState(history=[], continuations=1)) is None
    assert check(TurnState(history=[], continuations=2)) is None

    await store.update("1", status="completed")
    assert check(TurnState(history=[], continuations=0)) is None


async def test_a_panel_edit_is_announced_once_however_often_the_session_is_resumed(workspace: Path) -> None:
    from contextlib import aclosing

    from todo_agent.core.model.scripted import ScriptedModel
    from todo_agent.core.runtime import Runtime
    from todo_agent.core.settings import Config
    from todo_agent.core.tasks.reminders import USER_EDITED

    config = Config(workspace=workspace, model="script:test")

    async def turn(runtime: Runtime) -> None:
        async with aclosing(runtime.agent.run_turn("go on")) as events:
            async for _ in events:
                pass
        await runtime.store.drain()  # what the delivery wrote is on disk before we quit
        runtime.session.close()

    first = Runtime.create(config, model=ScriptedModel.from_data(["ok"]))
    await first.store.user_add("Write the docs")  # the person adds a task in the panel
    await turn(first)
    for _ in range(2):  # `--continue`, twice
        await turn(Runtime.create(config, continue_latest=True, model=ScriptedModel.from_data(["ok"])))
    history = Runtime.create(config, continue_latest=True).sessions.history
    announced = [m for m in history if m["role"] == "user" and USER_EDITED in str(m["content"])]
    assert len(announced) == 1 and 'added #1 "Write the docs"' in announced[0]["content"]
