"""The exact tool schemas sent to the model, compared with `tests/tool_schemas.json`.

Every schema costs prompt tokens on every request and is the contract the model works
to, so any change to one must be seen in review. After an intended change, regenerate
the file with `python -m pytest tests/test_tool_schemas.py --update-tool-schemas` and
read the diff (and re-measure `benchmarks/prefix.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from todo_agent.core.agents.definitions import built_in
from todo_agent.core.agents.tool import agent_tool
from todo_agent.core.runtime import build_tools
from todo_agent.core.tools.base import Tool

SNAPSHOT = Path(__file__).with_name("tool_schemas.json")


def tools(version: str) -> list[Tool]:
    """What a runtime sends: the tools, then `Agent` with the built-in agent types."""
    return [*build_tools(version), agent_tool(lambda: None, built_in(), parallel=3, max_turns=30)]


def current() -> dict[str, Any]:
    return {version: [tool.schema() for tool in tools(version)] for version in ("v2", "v1")}


def test_the_schemas_sent_to_the_model_are_the_recorded_ones(request: pytest.FixtureRequest) -> None:
    text = json.dumps(current(), indent=2, ensure_ascii=False) + "\n"
    if request.config.getoption("--update-tool-schemas"):
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert SNAPSHOT.read_text(encoding="utf-8") == text, (
        "tool schemas changed: if intended, rerun with --update-tool-schemas and review the diff"
    )


PLAN_TOOLS = {"v2": ("TaskCreate", "TaskUpdate", "TaskList", "TaskGet"), "v1": ("TodoWrite",)}
PLAN_LIMITS = {"v2": 3000, "v1": 1200}


def test_the_plan_tools_schemas_stay_within_their_limits() -> None:
    """Issue 31: the task tools are sent with every request, so their schemas are held to
    3,000 characters of JSON together in v2 (about 750 tokens) and 1,200 for TodoWrite in
    v1, measured as sent: `len(json.dumps(tool))`, every parameter included."""
    for version, names in PLAN_TOOLS.items():
        schemas = {s["function"]["name"]: s for s in current()[version]}
        size = sum(len(json.dumps(schemas[name])) for name in names)
        assert size <= PLAN_LIMITS[version], f"{version} plan tools: {size} characters"
    create = {s["function"]["name"]: s for s in current()["v2"]}["TaskCreate"]["function"]["parameters"]
    update = {s["function"]["name"]: s for s in current()["v2"]}["TaskUpdate"]["function"]["parameters"]
    assert {"subject", "description", "activeForm", "verify", "budget"} <= set(create["properties"])
    assert {"taskId", "status", "owner", "addBlocks", "addBlockedBy", "metadata", "verify", "budget"} <= set(
        update["properties"]
    )


def test_a_map_parameter_is_an_open_object_and_a_nested_one_says_no_empty_required() -> None:
    """`metadata` takes any keys (closed with no properties it would allow only `{}`); a
    nested object such as `budget` stays closed without an empty `required` list."""
    update = {s["function"]["name"]: s for s in current()["v2"]}["TaskUpdate"]["function"]["parameters"]
    assert update["properties"]["metadata"] == {"type": "object", "description": "Keys to merge; null removes one."}
    budget = update["properties"]["budget"]
    assert budget["additionalProperties"] is False and "required" not in budget
    assert set(budget["properties"]) == {"requests", "tokens", "minutes"}


def test_every_schema_is_a_closed_object_whose_required_keys_are_declared() -> None:
    for tools in current().values():
        for schema in tools:
            parameters = schema["function"]["parameters"]
            assert parameters["type"] == "object"
            assert parameters["additionalProperties"] is False
            assert set(parameters["required"]) <= set(parameters["properties"])


async def test_each_required_key_of_each_schema_is_required_by_its_check(tmp_path: Path) -> None:
    """Schema and check come from one declaration: leaving out any key the schema marks
    required gets the one-line 'missing' error before the tool does anything."""
    from todo_agent.core.tools.context import ToolContext
    from todo_agent.core.tools.results import ToolError

    for tool in {t.name: t for version in ("v2", "v1") for t in tools(version)}.values():
        for key in tool.parameters["required"]:
            full = {k: "x" for k in tool.parameters["required"]}
            del full[key]
            with pytest.raises(ToolError) as caught:
                await tool.run(full, ToolContext("c", tmp_path))
            assert str(caught.value) == f"missing required parameter '{key}'", tool.name


def test_aliases_are_accepted_but_not_advertised() -> None:
    from todo_agent.core.tools.base import parse_as
    from todo_agent.core.tools.tasks import TASK_CREATE, TASK_UPDATE, TaskUpdateArgs

    args = parse_as(TaskUpdateArgs, {"task_id": "#3", "active_form": "Testing"})
    assert (args.taskId, args.activeForm) == ("3", "Testing")
    for tool in (TASK_CREATE, TASK_UPDATE):
        assert not {"title", "task_id", "id", "active_form"} & set(tool.parameters["properties"])


def test_todo_write_active_form_is_optional_in_the_schema_as_in_the_check() -> None:
    from todo_agent.core.tools.base import parse_as
    from todo_agent.core.tools.tasks import TODO_WRITE, TodoWriteArgs

    item = TODO_WRITE.parameters["properties"]["todos"]["items"]
    assert item["required"] == ["content", "status"]
    [todo] = parse_as(TodoWriteArgs, {"todos": [{"content": "Run tests", "status": "pending"}]}).items()
    assert (todo.content, todo.status, todo.active_form) == ("Run tests", "pending", "")
