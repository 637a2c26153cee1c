"""How a tool is declared: one arguments model and one function.

The arguments model (`arguments.py`) gives the JSON schema the model sees and the check
of what it sends; the description is the Markdown file named after the tool, beside its
module (`TaskCreate` → `task_create.md`). `declare()` joins them into a `Tool`, whose
`run` takes the raw argument dict and answers bad arguments with one `ToolError` line
before the function runs. Adding a tool is one declaration and one function:

```python
# core/tools/word_count.py, with its description in core/tools/word_count.md
from pydantic import Field

from .context import ToolContext
from .arguments import Arguments, Text
from .base import ToolError, declare


class WordCountArgs(Arguments):
    file_path: Text = Field(description="Path of the file to count.")


async def word_count(args: WordCountArgs, ctx: ToolContext) -> str:
    try:
        text = ctx.resolve(args.file_path).read_text(errors="replace")
    except OSError as exc:
        raise ToolError(f"Cannot read {args.file_path}: {exc.strerror}") from exc
    return f"{len(text.split())} words"


WORD_COUNT = declare("WordCount", WordCountArgs, word_count, kind="read")
```

then list it in `build_tools()` (`core/runtime.py`) and regenerate the schema snapshot
(`pytest tests/test_tool_schemas.py --update-tool-schemas`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from ..model.history import strict_json
from .arguments import Arguments, arguments_error
from .context import ToolContext
from .results import ToolError, ToolResult

ToolKind = Literal["read", "edit", "execute", "task"]
"""`read` never writes; `edit` writes files (the path is in `file_path`); `execute`
runs commands; `task` only touches the agent's own task list."""

A = TypeVar("A", bound=Arguments)
_PKG = "todo_agent.core.tools"


ToolFunc = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult | str]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, Any]
    """The JSON schema of the arguments (for a declared tool, built on first use)."""
    run: ToolFunc
    kind: ToolKind = "read"
    summarize: Callable[[dict[str, Any]], str] = field(default=lambda args: "")
    preview: Callable[[dict[str, Any], ToolContext], str] | None = None
    """What the approval prompt shows (a unified diff for file edits)."""
    fan_out: bool = False
    """Calls of this tool in one response run side by side (each is asked about and decided
    alone) and show their progress live (`ctx.live`): the `Agent` tool."""

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }


def load_description(package: str, filename: str) -> str:
    """Read a tool's long description from the `.md` file shipped beside it."""
    return resources.files(package).joinpath(filename).read_text(encoding="utf-8").strip()


def declare(
    name: str,
    arguments: type[A],
    run: Callable[[A, ToolContext], Awaitable[ToolResult | str]],
    *,
    kind: ToolKind,
    summarize: Callable[[dict[str, Any]], str] = lambda args: "",
    preview: Callable[[dict[str, Any], ToolContext], str] | None = None,
    description: str | None = None,
    fan_out: bool = False,
) -> Tool:
    """A tool from its arguments model and its function. The description defaults to the
    Markdown file named after the tool in this package (`TaskCreate` → `task_create.md`)."""

    async def checked(args: dict[str, Any], ctx: ToolContext) -> ToolResult | str:
        return await run(parse_as(arguments, args), ctx)

    if description is None:
        description = load_description(_PKG, re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() + ".md")
    return Tool(name, description, _LazySchema(arguments), checked, kind, summarize, preview, fan_out)


class _LazySchema(Mapping[str, Any]):
    """An arguments model's schema, made when first read: compiling a pydantic model takes
    a few milliseconds, and start-up should not pay that for every tool."""

    def __init__(self, arguments: type[Arguments]) -> None:
        self._arguments = arguments
        self._schema: dict[str, Any] | None = None

    def _built(self) -> dict[str, Any]:
        if self._schema is None:
            self._schema = self._arguments.json_schema()
        return self._schema

    def __getitem__(self, key: str) -> Any:
        return self._built()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())


def parse_as(arguments: type[A], args: dict[str, Any]) -> A:
    """`args` checked against a tool's arguments model; a `ToolError` line when they do not fit."""
    try:
        return arguments.model_validate(args)
    except ValidationError as exc:
        raise ToolError(arguments_error(exc)) from None


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
