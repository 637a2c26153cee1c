"""What a tool call ends with. Free of pydantic, so the Grep worker process starts fast."""

from __future__ import annotations

from dataclasses import dataclass


class ToolError(Exception):
    """A clear, one-line failure the model should read as the tool result."""


@dataclass(frozen=True)
class ToolResult:
    output: str
    is_error: bool = False
