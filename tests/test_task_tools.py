"""The task tools as the model calls them: results, errors, normalised arguments, events."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from todo_agent.core.events import TasksUpdated
from todo_agent.core.tasks.model import Task
from todo_agent.core.tasks.reminders import TASK_TOOL_NAMES
from todo_agent.core.tasks.render import LEGEND
from todo_agent.core.tasks.store import TaskStore
from todo_agent.core.tools.base import Tool, parse_arguments
from todo_agent.core.tools.context import ToolContext
from todo_agent.core.tools.results import ToolError, ToolResult
from todo_agent.core.tools.tasks import (
    SYSTEM_PROMPT_LINE,
    SYSTEM_PROMPT_LINE_V1,
    SYSTEM_PROMPT_LINE_V2,
    TASK_CREATE,
    TASK_GET,
    TASK_LIST,
    TASK_TOOLS_V1,
    TASK_TOOLS_V2,
    TASK_UPDATE,
    TODO_WRITE,
)


class Harness:
    """Calls tools the way the loop does: a fresh context per call, events collected."""

    def __init__(self, store: TaskStore | None) -> None:
        self.store = store
        self.events: list[list[Any]] = []

    async def __call__(self, tool: Tool, args: dict[str, Any] | str) -> str:
        ctx = ToolContext(call_id=f"call_{len(self.events)}", workspace=Path("."))
        if self.store is not None:
            ctx.tasks = self.store
        self.events.append(ctx.pending_events)
        arguments = parse_arguments(args) if isinstance(args, str) else args
        result = await tool.run(arguments, ctx)
        return result.output if isinstance(result, ToolResult) else result

    async def error(self, tool: Tool, args: dict[str, Any] | str) -> str:
        with pytest.raises(ToolError) as caught:
            await self(tool, args)
        return str(caught.value)

    @property
    def last_events(self) -> list[Any]:
        return self.events[-1]


@pytest.fixture
def store() -> TaskStore:
    return TaskStore(None)


@pytest.fixture
def call(store: TaskStore) -> Harness:
    return Harness(store)


def task(store: TaskStore, task_id: str) -> Task:
    found = store.get(task_id)
    assert found is not None
    return found


async def make_three(call: Harness) -> None:
    for subject in ("Read posts route", "Add pagination", "Run tests"):
        await call(TASK_CREATE, {"subject": subject})


async def test_create_start_complete(call: Harness, store: TaskStore) -> None:
    assert await call(TASK_CREATE, {"subject": "Read posts route", "activeForm": "Reading"}) == (
        "#1 created · 1 open: #1"
    )
    await call(TASK_CREATE, {"subject": "Add pagination", "description": "page and page_size"})
    await call(TASK_CREATE, {"subject": "Run tests"})

    assert await call(TASK_UPDATE, {"taskId": "1", "status": "in_progress"}) == ("#1 → in_progress · 3 open: #1 #2 #3")
    assert await call(TASK_UPDATE, {"taskId": "1", "status": "completed"}) == ("#1 → completed · 2 open: #2 #3")
    await call(TASK_UPDATE, {"taskId": "2", "status": "completed"})
    assert await call(TASK_UPDATE, {"taskId": "3", "status": "completed"}) == ("#3 → completed · all 3 completed")
    assert [t.status for t in store.snapshot()] == ["completed"] * 3
    second = task(store, "2")
    assert (second.subject, second.description, second.status) == ("Add pagination", "page and page_size", "completed")


async def test_each_change_emits_exactly_one_tasks_updated_with_the_new_list(call: Harness, store: TaskStore) -> None:
    await call(TASK_CREATE, {"subject": "a"})
    await call(TASK_UPDATE, {"taskId": "1", "status": "in_progress"})
    await call(TODO_WRITE, {"todos": [{"content": "a", "status": "completed", "activeForm": "A-ing"}]})
    for events in call.events:
        assert len(events) == 1 and isinstance(events[0], TasksUpdated)
    assert call.last_events == [TasksUpdated(store.snapshot())]
    assert call.events[0][0].tasks[0].status == "pending"  # the state right after that call

    await call(TASK_LIST, {})
    await call(TASK_GET, {"taskId": "1"})
    assert call.events[-2:] == [[], []]
    await call.error(TASK_UPDATE, {"taskId": "9", "status": "completed"})
    assert call.last_events == []


async def test_a_concurrent_batch_applies_in_call_order(call: Harness, store: TaskStore) -> None:
    """The loop runs consecutive task tools concurrently; the result must read like the batch."""
    batch = [(TASK_CREATE, {"subject": s}) for s in ("a", "b", "c")] + [
        (TASK_UPDATE, {"taskId": "1", "status": "in_progress"})
    ]
    results = await asyncio.gather(*(call(tool, args) for tool, args in batch))

    assert results[-1] == "#1 → in_progress · 3 open: #1 #2 #3"
    assert [(t.id, t.subject, t.status) for t in store.snapshot()] == [
        ("1", "a", "in_progress"),
        ("2", "b", "pending"),
        ("3", "c", "pending"),
    ]
    assert [len(events) for events in call.events] == [1, 1, 1, 1]
    assert call.events[-1] == [TasksUpdated(store.snapshot())]


async def test_unknown_id_invalid_status_and_missing_subject_are_one_line_errors(call: Harness) -> None:
    await call(TASK_CREATE, {"subject": "a"})
    assert await call.error(TASK_UPDATE, {"taskId": "99", "status": "completed"}) == "no task #99 (existing tasks: #1)"
    assert await call.error(TASK_UPDATE, {"taskId": "1", "status": "done"}) == (
        "invalid status 'done'; use pending, in_progress, completed or deleted"
    )
    assert await call.error(TASK_CREATE, {}) == "missing required parameter 'subject'"
    assert await call.error(TASK_CREATE, {"subject": "   "}) == "subject must not be empty"
    assert await call.error(TASK_UPDATE, {"status": "completed"}) == "missing required parameter 'taskId'"
    assert (
        await call.error(TASK_UPDATE, {"taskId": "one"})
        == "parameter 'taskId' must be a task id such as \"3\", got 'one'"
    )
    assert await call.error(TASK_GET, {"taskId": "7"}) == "no task #7 (existing tasks: #1)"
    assert await call.error(TASK_CREATE, {"subject": ["a"]}) == "parameter 'subject' must be a string"


async def test_a_second_in_progress_is_accepted_with_a_note(call: Harness, store: TaskStore) -> None:
    await make_three(call)
    await call(TASK_UPDATE, {"taskId": "1", "status": "in_progress"})
    assert await call(TASK_UPDATE, {"taskId": "2", "status": "in_progress"}) == (
        "#2 → in_progress · 3 open: #1 #2 #3\nNote: #1 also in_progress; keep only one in progress."
    )
    assert [t.id for t in store.in_progress()] == ["1", "2"]


async def test_deleted_removes_the_task_and_its_id_is_not_reused(call: Harness, store: TaskStore) -> None:
    await make_three(call)
    assert await call(TASK_UPDATE, {"taskId": "3", "status": "deleted"}) == ("#3 deleted · 2 open: #1 #2")
    assert await call(TASK_CREATE, {"subject": "Run all tests"}) == "#4 created · 3 open: #1 #2 #4"
    assert [t.id for t in store.snapshot()] == ["1", "2", "4"]


async def test_blockers_and_cycles(call: Harness, store: TaskStore) -> None:
    await make_three(call)
    assert await call(TASK_UPDATE, {"taskId": "3", "addBlockedBy": "1,2"}) == (
        "#3 → pending [blocked by #1, #2] · 3 open: #1 #2 #3"
    )
    assert await call.error(TASK_UPDATE, {"taskId": "3", "addBlocks": ["1"]}) == (
        "blocker cycle: #1 already blocks #3 (directly or through other tasks)"
    )
    assert await call.error(TASK_UPDATE, {"taskId": "2", "addBlocks": "#2"}) == "task #2 cannot block itself"
    await call(TASK_UPDATE, {"taskId": "1", "status": "completed"})
    result = await call(TASK_UPDATE, {"taskId": "3", "status": "in_progress"})
    assert result.splitlines()[0] == "#3 → in_progress [blocked by #2] · 2 open: #2 #3"
    assert result.splitlines()[-1] == "Note: #3 is blocked by #2, not completed yet."
    assert task(store, "1").blocks == ("3",)
    assert task(store, "3").blockedBy == ("1", "2")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"taskId": 3, "status": "completed"}', "3"),
        ('{"taskId": "#3", "status": "completed"}', "3"),
        ('{"taskId": " 03 ", "status": "completed"}', "3"),
        ('{"task_id": 3.0, "status": "completed"}', "3"),
        ('"{\\"taskId\\": \\"3\\", \\"status\\": \\"completed\\"}"', "3"),  # double-encoded object
    ],
)
async def test_task_ids_in_any_reasonable_form(call: Harness, raw: str, expected: str) -> None:
    await make_three(call)
    assert (await call(TASK_UPDATE, raw)).startswith(f"#{expected} → completed")


@pytest.mark.parametrize(
    "blocked_by",
    ['["1", "2"]', "[1, 2]", "['1', '2']", "1, 2", "#1 #2", ["1", 2], ("#1", "#2")],
)
async def test_blocker_lists_in_any_reasonable_form(call: Harness, store: TaskStore, blocked_by: Any) -> None:
    await make_three(call)
    await call(TASK_UPDATE, {"taskId": "3", "addBlockedBy": blocked_by})
    assert task(store, "3").blockedBy == ("1", "2")


async def test_status_spelling_is_normalised(call: Harness, store: TaskStore) -> None:
    await make_three(call)
    await call(TASK_UPDATE, {"taskId": "1", "status": " In Progress "})
    assert task(store, "1").status == "in_progress"


async def test_task_list_and_task_get(call: Harness) -> None:
    assert await call(TASK_LIST, {}) == "No tasks yet."
    await make_three(call)
    await call(TASK_UPDATE, {"taskId": "1", "status": "completed", "owner": "main"})
    await call(
        TASK_UPDATE, {"taskId": "3", "addBlockedBy": ["1", "2"], "description": "pytest -q", "activeForm": "Testing"}
    )
    assert await call(TASK_LIST, {}) == (
        "☒ #1 Read posts route (owner: main)\n"
        "☐ #2 Add pagination\n"
        "☐ #3 Run tests [blocked by #2]\n"
        f"({LEGEND})\n"
        "2 open: #2 #3"
    )
    assert await call(TASK_GET, {"taskId": 3}) == (
        "Task #3: Run tests\n"
        "Status: pending\n"
        "Description: pytest -q\n"
        "Active form: Testing\n"
        "Blocked by: #1 (completed), #2 (pending)"
    )


async def test_todo_write_keeps_ids_and_warns_about_dropped_unfinished_items(call: Harness, store: TaskStore) -> None:
    first = [
        {"content": "Read posts route", "status": "completed", "activeForm": "Reading"},
        {"content": "Add pagination", "status": "in_progress", "activeForm": "Adding pagination"},
        {"content": "Run tests", "status": "pending", "activeForm": "Running tests"},
        {"content": "Update docs", "status": "pending", "activeForm": "Updating docs"},
    ]
    assert await call(TODO_WRITE, {"todos": first}) == ("Saved · 1 completed, 1 in_progress, 2 pending")
    second = [
        {"content": "Add pagination", "status": "completed", "activeForm": "Adding pagination"},
        {"content": "Run the tests", "status": "in_progress", "activeForm": "Running tests"},
    ]
    assert await call(TODO_WRITE, {"todos": second}) == (
        "Saved · 1 completed, 1 in_progress\n"
        'Warning: unfinished items were dropped without being completed: #3 "Run tests", #4 "Update docs". '
        "If they still need doing, add them back; if they are done, list them as completed."
    )
    assert [(t.id, t.subject) for t in store.snapshot()] == [("2", "Add pagination"), ("5", "Run the tests")]


TODOS_JSON = '[{"content": "x", "status": "pending", "activeForm": "X-ing"}, {"content": "y", "status": "completed"}]'


@pytest.mark.parametrize(
    "todos",
    [
        TODOS_JSON,
        "[{'content': 'x', 'status': 'pending', 'activeForm': 'X-ing'}, {'content': 'y', 'status': 'completed'}]",
        '{"todos": ' + TODOS_JSON + "}",
        ['{"content": "x", "status": "pending", "activeForm": "X-ing"}', {"content": "y", "status": "completed"}],
    ],
)
async def test_todo_write_accepts_json_text_and_python_literals(call: Harness, store: TaskStore, todos: Any) -> None:
    await call(TODO_WRITE, {"todos": todos})
    assert [(t.subject, t.status, t.activeForm) for t in store.snapshot()] == [
        ("x", "pending", "X-ing"),
        ("y", "completed", ""),
    ]


async def test_todo_write_errors(call: Harness, store: TaskStore) -> None:
    assert await call.error(TODO_WRITE, {}) == "missing required parameter 'todos'"
    assert await call.error(TODO_WRITE, {"todos": "not a list"}) == (
        "parameter 'todos' must be a list of {content, status, activeForm} objects"
    )
    assert await call.error(TODO_WRITE, {"todos": [{"status": "pending"}]}) == "todos[0] is missing 'content'"
    assert await call.error(TODO_WRITE, {"todos": [{"content": "a"}]}) == (
        "todos[0] is missing 'status' (pending, in_progress or completed)"
    )
    assert await call.error(
        TODO_WRITE, {"todos": [{"content": "a", "status": "pending"}, {"content": "b", "status": "done"}]}
    ) == ("todos[1]: invalid status 'done'; use pending, in_progress or completed")
    assert await call.error(TODO_WRITE, {"todos": ["oops"]}) == (
        "todos[0] must be an object with content, status and activeForm"
    )
    assert store.snapshot() == ()
    assert all(events == [] for events in call.events)


async def test_todo_write_notes_several_in_progress(call: Harness) -> None:
    result = await call(TODO_WRITE, {"todos": [{"content": c, "status": "in_progress"} for c in "ab"]})
    assert result.splitlines()[-1] == "Note: #1, #2 are all in_progress; keep only one in progress."


async def test_every_tool_needs_a_store() -> None:
    call = Harness(None)
    for tool, args in ((TASK_CREATE, {"subject": "a"}), (TASK_LIST, {}), (TODO_WRITE, {"todos": []})):
        assert await call.error(tool, args) == "no task list is available in this session"


def test_summaries() -> None:
    assert TASK_CREATE.summarize({"subject": "Add pagination"}) == "Add pagination"
    assert TASK_UPDATE.summarize({"taskId": 1, "status": "in_progress"}) == "#1 → in_progress"
    assert TASK_UPDATE.summarize({"taskId": "#2", "subject": "x"}) == "#2"
    assert TASK_UPDATE.summarize({"status": ["odd"]}) == "? → ['odd']"
    assert TASK_GET.summarize({"taskId": "3"}) == "#3"
    assert TASK_LIST.summarize({}) == ""
    todos = [{"content": "a", "status": "completed"}, {"content": "b", "status": "in_progress"}]
    assert TODO_WRITE.summarize({"todos": todos}) == "2 items, b"
    assert TODO_WRITE.summarize({"todos": 5}) == ""


def test_declarations() -> None:
    tools = [*TASK_TOOLS_V2, *TASK_TOOLS_V1]
    assert [t.name for t in TASK_TOOLS_V2] == ["TaskCreate", "TaskUpdate", "TaskList", "TaskGet"]
    assert [t.name for t in TASK_TOOLS_V1] == ["TodoWrite"]
    assert {t.name for t in tools} == TASK_TOOL_NAMES
    for tool in tools:
        assert tool.kind == "task"
        assert tool.schema()["function"]["parameters"]["type"] == "object"
    assert TASK_UPDATE.parameters["properties"]["status"]["enum"] == ["pending", "in_progress", "completed", "deleted"]
    assert TODO_WRITE.parameters["required"] == ["todos"]


def test_descriptions_say_what_the_model_must_know_once() -> None:
    """When to plan is the system prompt's line; how to keep the list is the tools' words;
    the limits are in the refusals (the code enforces them), not argued in prose."""
    for tool in (TASK_UPDATE, TODO_WRITE):
        text = tool.description
        assert "before you start it" in text and "completed as soon as it is fully done" in text
        assert "failing tests" in text
    assert "one at a time" in TASK_UPDATE.description and "Keep one item in_progress" in TODO_WRITE.description
    for line in (SYSTEM_PROMPT_LINE_V2, SYSTEM_PROMPT_LINE_V1):
        assert "three or more steps" in line and "skip the list for one-step work" in line
    assert "three or more" not in TASK_CREATE.description + TODO_WRITE.description  # said once, in the prompt
    assert SYSTEM_PROMPT_LINE == SYSTEM_PROMPT_LINE_V2
    assert "TaskCreate" in SYSTEM_PROMPT_LINE
    assert "TodoWrite" in SYSTEM_PROMPT_LINE_V1


async def test_a_subject_over_the_limit_is_one_clear_tool_error(store: TaskStore) -> None:
    call = Harness(store)
    error = await call.error(TASK_CREATE, {"subject": "x" * 1_048_576})
    assert (
        error
        == "subject is 1,048,576 characters; the limit is 200 (keep it a short title and put detail in description)"
    )
    assert store.snapshot() == () and call.last_events == []


@pytest.mark.parametrize(
    ("tool", "args", "said"),
    [
        (TASK_CREATE, {"subject": "s", "budget": "[" * 100_000}, "parameter 'budget' must be an object"),
        (TASK_UPDATE, {"taskId": "1", "metadata": "{" * 100_000}, "parameter 'metadata' must be an object"),
        (TODO_WRITE, {"todos": "[" * 100_000}, "parameter 'todos' must be a list"),
    ],
)
async def test_an_argument_nested_past_pythons_limit_is_one_line_refused(
    call: Harness, tool: Tool, args: dict[str, Any], said: str
) -> None:
    await call(TASK_CREATE, {"subject": "exists"})
    assert said in await call.error(tool, args)
