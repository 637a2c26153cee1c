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

from todo_agent.core.runtime import build_tools

SNAPSHOT = Path(__file__).with_name("tool_schemas.json")


def current() -> dict[str, Any]:
    return {version: [tool.schema() for tool in build_tools(version)] for version in ("v2", "v1")}


def test_the_schemas_sent_to_the_model_are_the_recorded_ones(request: pytest.FixtureRequest) -> None:
    text = json.dumps(current(), indent=2, ensure_ascii=False) + "\n"
    if request.config.getoption("--update-tool-schemas"):
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert SNAPSHOT.read_text(encoding="utf-8") == text, (
        "tool schemas changed: if intended, rerun with --update-tool-schemas and review the diff"
    )


def test_every_schema_is_a_closed_object_whose_required_keys_are_declared() -> None:
    for tools in current().values():
        for schema in tools:
            parameters = schema["function"]["parameters"]
            assert parameters["type"] == "object"
            assert parameters["additionalProperties"] is False
            assert set(parameters["required"]) <= set(parameters["properties"])
