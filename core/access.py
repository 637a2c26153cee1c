"""What a tool may touch: its kind and its path arguments, as the tool declares them and
the permission gate reads them.

The tools (`core/tools/base.py`) declare this and the gate (`core/permissions/policy.py`)
decides from it; neither imports the other, both import this vocabulary. The gate keeps
no list of tool names: a new tool that reads a file is covered by the outside-workspace
prompt and the path rules because it says which argument is a path, not because the
gate knows its name. A tool that says nothing is taken to do anything (`execute`, no
path): it asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol, get_args

ToolKind = Literal["read", "edit", "execute", "task"]
"""`read`: looks, changes nothing (allowed without asking, except for paths outside the
workspace or under a deny rule); `edit`: changes files (allowed in acceptEdits when every
path it writes is in the workspace); `execute`: anything else, a command or a tool from
outside (asks unless a rule allows it); `task`: only the agent's own task list."""

PathUse = Literal["read", "write", "edit", "glob"]
"""What a tool does with one path argument:

- `read`: reads the file or directory it names (left out or empty: the workspace root);
- `write`: writes it, never showing its content;
- `edit`: reads and writes it (its result may show the content);
- `glob`: a glob pattern the tool reads from: its literal leading directories, under the
  tool's `read` argument (or the workspace root), are where it looks (Glob's `pattern`).
"""

TOOL_KINDS: tuple[ToolKind, ...] = get_args(ToolKind)
PATH_USES: tuple[PathUse, ...] = get_args(PathUse)
READ_ONLY: frozenset[PathUse] = frozenset({"read", "glob"})
"""Uses that only read: a rule on a tool whose paths are all these is a rule on reading."""
WRITES: frozenset[PathUse] = frozenset({"write", "edit"})


class Declared(Protocol):
    """What the gate reads of a tool; a `core.tools.base.Tool` is one."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> ToolKind: ...

    @property
    def paths(self) -> Mapping[str, PathUse]:
        """Argument name → what the tool does with the path it holds."""

    @property
    def network(self) -> str | None:
        """The argument holding a URL the tool reads from the network (WebFetch's `url`), or
        None. Such a tool asks unless a `Tool(domain:host)` rule allows that host."""


def check_declaration(name: str, kind: str, paths: Mapping[str, str], network: str | None = None) -> None:
    """Raise ValueError for a declaration the gate could misread: an unknown kind or use, a
    read-only tool that writes, a task tool with paths, a glob with no single base, a
    network tool that is not a read."""
    if network is not None and kind != "read":
        raise ValueError(f"tool {name}: a tool that reads the network is a read tool (kind='read')")
    if kind not in TOOL_KINDS:
        raise ValueError(f"tool {name}: unknown kind {kind!r} (one of {', '.join(TOOL_KINDS)})")
    for argument, use in paths.items():
        if use not in PATH_USES:
            raise ValueError(f"tool {name}: path argument {argument!r} has unknown use {use!r}")
    uses = set(paths.values())
    if kind == "read" and uses & WRITES:
        raise ValueError(f"tool {name}: a read tool cannot declare a path it writes")
    if kind == "task" and paths:
        raise ValueError(f"tool {name}: a task tool touches only the task list, it has no path")
    if "glob" in uses and list(paths.values()).count("read") > 1:
        raise ValueError(f"tool {name}: a glob argument needs at most one read argument to start from")
