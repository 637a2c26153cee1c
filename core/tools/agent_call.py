"""The `Agent` tool's arguments (Claude Code's names), declared here with the other tools'
arguments; the tool itself is `core/agents/tool.py`, which knows the agent types."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, ValidationInfo, WithJsonSchema

from .arguments import Arguments, Count, Label, Text
from .tasks import task_id


def _optional_task(value: Any, info: ValidationInfo) -> str | None:
    if value is None or value == "":
        return None
    return task_id(value, info.field_name or "task_id")


class AgentArgs(Arguments):
    aliases: ClassVar[Mapping[str, str]] = {"taskId": "task_id", "type": "subagent_type", "maxTurns": "max_turns"}
    description: Text = Field(description="3-5 words saying what it does, shown while it runs.")
    prompt: Text = Field(description="The complete brief: it sees nothing of this conversation.")
    subagent_type: Label = Field(None, description="The kind of sub-agent (default general).")
    task_id: Annotated[str | None, BeforeValidator(_optional_task), WithJsonSchema({"type": "string"})] = Field(
        None, description='A pending task for it to claim and work, e.g. "3".'
    )
    max_turns: Count = Field(None, ge=1, description="Its model requests at most.")
