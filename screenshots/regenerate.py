"""Regenerate screenshots/*.svg and *.png from the real app, driven like the tests drive it.

Usage (from the repository root, with the test extra installed):

    python screenshots/regenerate.py

PNGs are made with `rsvg-convert` when it is installed (Debian: librsvg2-bin, plus
fonts-symbola for symbols like ⏺ and ⎿), else with cairosvg. The SVGs name the web font
Fira Code (which a browser fetches); neither converter can, and fontconfig would stand
in a proportional font (DejaVu Sans), so each piece of text, placed at its own column,
came out too wide or too narrow; and both drop a piece's leading space unless told to
keep spaces, so inline code ran into the next word ("pageand"). The PNGs are therefore
drawn with the installed monospace font (`fc-match monospace`) and `xml:space="preserve"`.

It runs the bundled demo (`examples/`) in the real `TodoAgentApp` with its scripted model,
through the same harness as the TUI tests (`tests/tui_helpers.py`), and saves:
demo_fanout (two sub-agents at work side by side on two tasks), approval_subagent (a
sub-agent's Write approval, labelled with it and its task), approval_diff (the Edit
approval with its diff), demo_midrun (plan in progress, panel docked), plan_completed
(5/5 and /todos), panel_hidden (ctrl+t) and welcome (no model).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
SIZE = (140, 42)
CLOCK = 1_768_400_000.0
sys.path.insert(0, str(ROOT / "tests"))

from agent_helpers import gate_children
from tui_helpers import main_screen, send, turn_done, wait_until

from todo_agent.core.model.base import Message, StreamItem
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.settings import Config
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.screens.approval import ApprovalScreen
from todo_agent.tui.widgets.task_panel import TaskPanel


class PausedAt:
    """The demo's scripted model, holding step `pause_at` until released (a mid-run moment)."""

    def __init__(self, model: ScriptedModel, pause_at: int) -> None:
        self.model, self.pause_at = model, pause_at
        self.reached, self.release = asyncio.Event(), asyncio.Event()

    @property
    def name(self) -> str:
        return self.model.name

    def for_agent(self, text: str) -> ScriptedModel:
        return self.model.for_agent(text)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        if self.model.used == self.pause_at:
            self.reached.set()
            await self.release.wait()
        async for item in self.model.stream(messages, tools, max_tokens=max_tokens):
            yield item


def monospace_family() -> str:
    """The monospace font fontconfig picks here (DejaVu Sans Mono on Debian)."""
    if shutil.which("fc-match"):
        found = subprocess.run(
            ["fc-match", "--format=%{family[0]}", "monospace"], capture_output=True, text=True, check=False
        )
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip()
    return "DejaVu Sans Mono"


def for_png(svg: str, family: str) -> str:
    """`svg` drawn with `family` instead of the web font Fira Code (see the module doc),
    and with its spaces kept: each piece of text that starts with a space (a no-break
    space, as Rich writes it) otherwise loses it, which glued " and" to the `page` before."""
    svg = re.sub(r'font-family:\s*"?Fira Code"?', f'font-family: "{family}"', svg)
    return svg.replace("<svg ", '<svg xml:space="preserve" ', 1)


def save(app: TodoAgentApp, name: str) -> None:
    svg, png = OUT / f"{name}.svg", OUT / f"{name}.png"
    app.save_screenshot(str(svg))
    drawable = for_png(svg.read_text(encoding="utf-8"), monospace_family()).encode()
    # librsvg keeps the SVG's fixed glyph positions and falls back through fontconfig for
    # symbols like ⏺; cairosvg (a test dependency) is the fallback when it is not installed.
    if shutil.which("rsvg-convert"):
        subprocess.run(["rsvg-convert", "--zoom", "1.5", "-o", str(png)], input=drawable, check=True)
    else:
        import cairosvg

        cairosvg.svg2png(bytestring=drawable, write_to=str(png))
    print(f"wrote screenshots/{name}.svg and .png")


def demo_project(tmp: Path) -> tuple[Path, dict[str, Any]]:
    project = tmp / "demo_project"
    shutil.copytree(ROOT / "examples" / "demo_project", project, ignore=shutil.ignore_patterns("__pycache__"))
    for path in project.iterdir():  # Glob orders by mtime; make the shots the same from any checkout
        os.utime(path, (1_700_000_000, 1_700_000_000))
    return project, json.loads((ROOT / "examples" / "demo_script.json").read_text(encoding="utf-8"))


async def demo_run(tmp: Path) -> None:
    project, script = demo_project(tmp)
    scripted = ScriptedModel.from_data(
        {"steps": script["steps"], "agents": script["agents"]}, label="script:demo_script.json"
    )
    model = PausedAt(scripted, pause_at=7)  # after the edit: #1-#4 done, the checks next
    config = Config(workspace=project, model="script:demo_script.json")
    app = TodoAgentApp.for_config(config, model=model, animations=False)
    assert app.runtime is not None  # a frozen clock: task times read the same on any machine
    app.runtime.store.clock = lambda: CLOCK
    TaskPanel.clock = staticmethod(lambda: CLOCK)
    # Both sub-agents held mid-way: the explorer after its search, the writer before its first answer.
    release = asyncio.Event()
    held = gate_children(app.runtime, {"every caller": {2: release}, "README.md": {0: release}})
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, script["prompt"])
        await wait_until(pilot, lambda: all(g.waiting.is_set() for g in held.values()))
        await wait_until(pilot, lambda: main_screen(app).caught_up)
        await pilot.pause()
        save(app, "demo_fanout")
        release.set()
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        save(app, "approval_subagent")
        await pilot.press("1")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking and app.screen.request.tool == "Edit",
        )
        save(app, "approval_diff")
        await pilot.press("1")
        await wait_until(pilot, model.reached.is_set)
        await pilot.pause()
        save(app, "demo_midrun")
        model.release.set()
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        await pilot.press("1")
        await turn_done(pilot)
        await send(pilot, "/todos")
        await pilot.pause()
        save(app, "plan_completed")
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: not main_screen(app).query_one("#task-panel").display)
        save(app, "panel_hidden")


async def welcome(tmp: Path) -> None:
    app = TodoAgentApp.for_config(Config(workspace=tmp), animations=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        save(app, "welcome")


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        await demo_run(Path(tmp))
        await welcome(Path(tmp))


if __name__ == "__main__":
    asyncio.run(main())
