"""The front ends talk to the core through `Runtime`'s face alone (ARCHITECTURE.md):
`runtime.X` where X is in `Runtime.FACE`, and `runtime.PART.Y` where Y is a public member
of that part (`core/face/`). Read from the source of `tui/` and `frontends/`, so a screen
that reaches past the face (`runtime.store.user_add`, `runtime.agent.steer`) fails here."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from todo_agent.core.face.mcp import Mcp
from todo_agent.core.face.plan import Plan
from todo_agent.core.face.sessions import Sessions
from todo_agent.core.face.team import TeamFace
from todo_agent.core.face.trust import Trust
from todo_agent.core.face.turn import Turn
from todo_agent.core.runtime import Runtime

ROOT = Path(__file__).resolve().parents[1]
PARTS: dict[str, type] = {
    "plan": Plan, "team": TeamFace, "mcp": Mcp, "sessions": Sessions, "turn": Turn, "trust": Trust,
}  # fmt: skip


def _is_runtime(node: ast.expr) -> bool:
    """`runtime`, `self.runtime`, `host.runtime`, `app.runtime`…: a front end's runtime."""
    return (isinstance(node, ast.Name) and node.id == "runtime") or (
        isinstance(node, ast.Attribute) and node.attr == "runtime"
    )


def reaches_past(source: str) -> list[str]:
    """Each `runtime.X` or `runtime.PART.Y` in `source` that is not on the face."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Attribute) and _is_runtime(node.value)):
            continue
        if node.attr not in Runtime.FACE:
            found.append(f"{node.lineno}: runtime.{node.attr}")
    # A part held in a name (`mcp = self.runtime.mcp`) is held to the part too.
    held = {
        target.id: node.value.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and _is_runtime(node.value.value)
        for target in node.targets
        if isinstance(target, ast.Name) and node.value.attr in PARTS
    }
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        inner = node.value
        if isinstance(inner, ast.Attribute) and _is_runtime(inner.value) and inner.attr in PARTS:
            part = inner.attr
        elif isinstance(inner, ast.Name) and inner.id in held:
            part = held[inner.id]
        else:
            continue
        if node.attr not in _members(PARTS[part]):
            found.append(f"{node.lineno}: runtime.{part}.{node.attr}")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def _members(cls: type) -> set[str]:
    """A part's public methods and properties, and the attributes its `__init__` sets."""
    names = {name for name in vars(cls) if not name.startswith("_")}
    init = ast.parse(inspect.getsource(cls))
    for node in ast.walk(init):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and isinstance(node.ctx, ast.Store)
            and not node.attr.startswith("_")
        ):
            names.add(node.attr)
    return names


def _front_end_files() -> list[Path]:
    return sorted([*(ROOT / "tui").rglob("*.py"), *(ROOT / "frontends").rglob("*.py")])


@pytest.mark.parametrize("path", _front_end_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_front_ends_use_only_the_runtime_face(path: Path) -> None:
    assert reaches_past(path.read_text(encoding="utf-8")) == []


def test_the_check_finds_a_screen_reaching_past_the_face() -> None:
    source = (
        "async def edit(self):\n"
        "    await self.runtime.store.user_add('x')\n"
        "    host.runtime.agent.steer('y')\n"
        "    runtime.plan.store\n"
        "    runtime.turn.run('ok')\n"
        "    await self.runtime.plan.add('fine')\n"
        "    mcp = self.runtime.mcp\n"
        "    mcp.listeners.append(print)\n"
        "    mcp.start()\n"
    )
    assert reaches_past(source) == [
        "2: runtime.store", "3: runtime.agent", "4: runtime.plan.store", "8: runtime.mcp.listeners"
    ]  # fmt: skip


def test_every_name_on_the_face_exists() -> None:
    for name in Runtime.FACE:
        assert hasattr(Runtime, name) or name in _members(Runtime), name
    for name, cls in PARTS.items():
        assert name in Runtime.FACE and _members(cls), name
