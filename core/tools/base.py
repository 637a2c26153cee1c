"""How a tool is declared: one arguments model and one function.

The arguments model (`arguments.py`) gives the JSON schema the model sees and the check
of what it sends; the description is the Markdown file named after the tool, beside its
module (`TaskCreate` → `task_create.md`). `declare()` joins them into a `Tool`, whose
`run` takes the raw argument dict and answers bad arguments with one `ToolError` line
before the function runs. `paths` says which arguments are paths and whether the tool
reads or writes them (`core/access.py`): the permission gate asks before a path outside
the workspace and applies the path rules (`deny = ["Read(.env)"]`) to exactly those,
so a tool that leaves one out could read any file unasked.

Adding a tool is one declaration and one function. This is the pattern the file tools
follow: the path type that refuses empty and NUL-byte paths, disk work in a worker
thread (a big file or a slow disk never stalls the app), the file opened with
`open_regular` (a directory, FIFO or device is refused, never opened: reading a FIFO
would wait for ever), a cap on what is read, and a binary file refused rather than
counted as text:

```python
# core/tools/example_word_count.py, with its description in core/tools/example_word_count.md
import asyncio
from pathlib import Path

from pydantic import Field

from .arguments import Arguments, PathText
from .base import declare
from .context import ToolContext
from .fs import BINARY_SAMPLE, display_path, looks_binary, open_regular
from .results import ToolError

MAX_BYTES = 10_000_000


class ExampleWordCountArgs(Arguments):
    file_path: PathText = Field(description="Path of the file (absolute, or relative to the workspace).")


def _count(path: Path, shown: str) -> int:
    opened = open_regular(path, shown)
    if opened is None:
        raise ToolError(f"File does not exist: {shown}")
    try:
        with opened as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from exc
    if len(data) > MAX_BYTES:
        raise ToolError(f"{shown} is over {MAX_BYTES:,} bytes; count it with Bash (`wc -w`)")
    if looks_binary(data[:BINARY_SAMPLE]):
        raise ToolError(f"{shown} looks like a binary file; ExampleWordCount counts the words of text")
    return len(data.decode("utf-8", errors="replace").split())


async def example_word_count(args: ExampleWordCountArgs, ctx: ToolContext) -> str:
    path = ctx.resolve(args.file_path)
    shown = display_path(path, ctx)
    return f"{shown}: {await asyncio.to_thread(_count, path, shown)} words"


EXAMPLE_WORD_COUNT = declare(
    "ExampleWordCount", ExampleWordCountArgs, example_word_count, kind="read", paths={"file_path": "read"}
)
```

(the example's name is one no real tool takes: name yours for what it does), then list it
in `build_tools()` (`core/runtime.py`; two tools of one name are refused at start),
regenerate the schema snapshot (`pytest tests/test_tool_schemas.py --update-tool-schemas`)
and re-measure the fixed prompt (`python benchmarks/prefix.py`; README, "A window too small"). A tool built
without `declare()` (from an MCP server's schema) is a `Tool` value with the same
fields; left at its defaults it asks before every call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Any, TypeVar

from pydantic import ValidationError

from ..access import PathUse, ToolKind, check_declaration
from ..model.history import strict_json
from .arguments import Arguments, arguments_error
from .context import ToolContext
from .results import ToolError, ToolResult

A = TypeVar("A", bound=Arguments)
_PKG = "todo_agent.core.tools"


ToolFunc = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult | str]]


def _as_sent(args: dict[str, Any]) -> dict[str, Any]:
    return args


@dataclass(frozen=True)
class Tool:
    """A tool as the agent runs it and the permission gate judges it.

    Built by `declare()` for the tools here; a tool from elsewhere (an MCP server's) may
    be built directly, and is then gated safely by default: `kind="execute"` and no path
    asks before every call. Give it a `kind` of `read` only if it reads nothing but the
    paths it declares.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    """The JSON schema of the arguments (for a declared tool, built on first use)."""
    run: ToolFunc
    kind: ToolKind = "execute"
    summarize: Callable[[dict[str, Any]], str] = field(default=lambda args: "")
    preview: Callable[[dict[str, Any], ToolContext], str] | None = None
    """What the approval prompt shows (a unified diff for file edits)."""
    paths: Mapping[str, PathUse] = field(default_factory=dict)
    """Argument name → what the tool does with that path (`core/access.py`): the gate's
    outside-workspace prompt and path rules apply to exactly these arguments."""
    check: Callable[[dict[str, Any]], dict[str, Any]] = _as_sent
    """The arguments as the tool will read them (a declared tool's model, validated and
    dumped: aliases renamed, lenient forms decoded), or `ToolError`. The gate judges
    these, so what it checks is what the tool then uses."""
    network: str | None = None
    """The argument holding a URL the tool reads from the network (`core/access.py`): the
    gate asks for it unless a `Tool(domain:host)` rule allows the host."""
    fan_out: bool = False
    """Calls of this tool in one response run side by side (each is asked about and decided
    alone) and show their progress live (`ctx.live`): the `Agent` tool."""
    commands: Callable[[dict[str, Any], ToolContext], list[tuple[str, str]]] | None = None
    """The shell commands a call sets to run later, as (what, command): a task's check,
    set, changed or removed. The gate judges each as a Bash call of it, at that moment."""
    live: bool = False
    """A call alone in its group shows events while it runs (`ctx.live`): Bash's output."""

    def __post_init__(self) -> None:
        check_declaration(self.name, self.kind, self.paths, self.network)
        object.__setattr__(self, "paths", MappingProxyType(dict(self.paths)))

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
    paths: Mapping[str, PathUse] | None = None,
    network: str | None = None,
    summarize: Callable[[dict[str, Any]], str] | None = None,
    preview: Callable[[dict[str, Any], ToolContext], str] | None = None,
    description: str | None = None,
    fan_out: bool = False,
    commands: Callable[[A, ToolContext], list[tuple[str, str]]] | None = None,
    live: bool = False,
) -> Tool:
    """A tool from its arguments model and its function. The description defaults to the
    Markdown file named after the tool in this package (`TaskCreate` → `task_create.md`).

    `paths` names the arguments that are paths and what the tool does with each
    (`{"file_path": "read"}`; uses in `core/access.py`). A `read` or `edit` tool must say,
    `paths={}` when it has none: forgetting would let it reach any file unasked.
    `network` names the argument holding a URL a read tool fetches (`"url"`).
    `summarize` gives the one line the transcript and the approval show for a call; left
    out, it is the first declared path (or the URL), so an approval always names the file.
    """
    if paths is None:
        if kind in ("read", "edit"):
            raise ValueError(
                f"tool {name}: say which arguments are paths, e.g. paths={{'file_path': 'read'}} (or paths={{}})"
            )
        paths = {}
    unknown = sorted({*paths, *([network] if network else [])} - set(arguments.model_fields))
    if unknown:
        raise ValueError(f"tool {name}: {', '.join(unknown)} in paths is not an argument of {arguments.__name__}")

    async def checked(args: dict[str, Any], ctx: ToolContext) -> ToolResult | str:
        return await run(parse_as(arguments, args), ctx)

    if summarize is None:
        summarize = _naming(next(iter(paths), None), network)

    def normalised(args: dict[str, Any]) -> dict[str, Any]:
        return parse_as(arguments, args).model_dump()

    if description is None:
        description = load_description(_PKG, re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() + ".md")
    return Tool(
        name,
        description,
        _LazySchema(arguments),
        checked,
        kind,
        summarize,
        preview,
        paths,
        normalised,
        network=network,
        fan_out=fan_out,
        commands=None if commands is None else lambda args, ctx: commands(parse_as(arguments, args), ctx),
        live=live,
    )


def _naming(path: str | None, url: str | None) -> Callable[[dict[str, Any]], str]:
    """The default summary of a declared tool's call: its first path (the end kept: the
    file's name matters most), else its URL."""

    def summary(args: dict[str, Any]) -> str:
        from .fs import short_path

        if path and isinstance(args.get(path), str):
            return short_path(args[path])
        return short(args[url]) if url and isinstance(args.get(url), str) else ""

    return summary


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
