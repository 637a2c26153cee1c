"""How a tool is declared: once, with its schema, description and permission kind.

The model-facing name, JSON schema and description all come from one `Tool` value;
long descriptions live in a Markdown file beside the tool module.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from ..context import ToolContext
from ..history import strict_json

ToolKind = Literal["read", "edit", "execute", "task"]
"""`read` never writes; `edit` writes files (the path is in `file_path`); `execute`
runs commands; `task` only touches the agent's own task list."""


class ToolError(Exception):
    """A clear, one-line failure the model should read as the tool result."""


@dataclass(frozen=True)
class ToolResult:
    output: str
    is_error: bool = False


ToolFunc = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult | str]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: ToolFunc
    kind: ToolKind = "read"
    summarize: Callable[[dict[str, Any]], str] = field(default=lambda args: "")
    preview: Callable[[dict[str, Any], ToolContext], str] | None = None
    """What the approval prompt shows (a unified diff for file edits)."""

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def load_description(package: str, filename: str) -> str:
    """Read a tool's long description from the `.md` file shipped beside it."""
    return resources.files(package).joinpath(filename).read_text(encoding="utf-8").strip()


def object_schema(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


def short(text: str, limit: int = 60) -> str:
    """One line, at most `limit` characters, for `⏺ Name(...)` summaries."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def parse_arguments(raw: str) -> dict[str, Any]:
    """Parse a model's raw argument text into an object, or raise `ToolError`.

    Some models double-encode (a JSON string holding JSON); that is accepted.
    """
    text = raw.strip() or "{}"
    try:
        value = strict_json(text)
        if isinstance(value, str):
            value = strict_json(value)
    except json.JSONDecodeError as exc:
        raise ToolError(f"invalid JSON in tool arguments ({exc.msg} at char {exc.pos}); send a JSON object") from exc
    except ValueError as exc:
        raise ToolError(f"invalid JSON in tool arguments ({exc}); send a JSON object") from exc
    if not isinstance(value, dict):
        raise ToolError(f"tool arguments must be a JSON object, got {type(value).__name__}")
    _check_values(value)
    return value


MAX_ARGUMENT_DEPTH = 64
"""Deeper tool arguments are refused: no tool takes them, and deep data strains
everything that later walks them (events, logs, the UI)."""


def _check_values(value: dict[str, Any]) -> None:
    """Refuse arguments nested deeper than MAX_ARGUMENT_DEPTH or holding a lone surrogate
    (`\\ud83d`: not a character, so not a path or text any tool can use). Iterative, so
    no depth of nesting can exhaust the stack here."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            raise ToolError(f"tool arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep; send flatter JSON")
        if isinstance(item, str) and _has_lone_surrogate(item):
            raise ToolError(
                "tool arguments contain a lone surrogate (an escape such as \\ud83d that is not a character); "
                "send valid Unicode"
            )
        if isinstance(item, dict):
            stack.extend((part, depth + 1) for pair in item.items() for part in pair)
        elif isinstance(item, list):
            stack.extend((part, depth + 1) for part in item)


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def require_str(args: dict[str, Any], key: str, *, allow_empty: bool = False) -> str:
    value = args.get(key)
    if value is None:
        raise ToolError(f"missing required parameter '{key}'")
    if not isinstance(value, str):
        raise ToolError(f"parameter '{key}' must be a string")
    if not allow_empty and not value:
        raise ToolError(f"parameter '{key}' must not be empty")
    return value


def optional_int(args: dict[str, Any], key: str, *, minimum: int = 0) -> int | None:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        if len(value.strip()) > 18:
            raise ToolError(f"parameter '{key}' is too large")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise ToolError(f"parameter '{key}' must be an integer")
    if value < minimum:
        raise ToolError(f"parameter '{key}' must be >= {minimum}")
    return int(value)
