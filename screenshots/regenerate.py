"""Regenerate screenshots/*.svg and *.png from the real app, driven like the tests drive it.

Usage (from the repository root, with the test extra installed):

    python screenshots/regenerate.py

PNGs are made with `rsvg-convert` when it is installed (Debian: librsvg2-bin, plus
fonts-noto-core and fonts-symbola for the symbols), else with cairosvg.

It runs the bundled demo (`examples/`) in the real `TodoAgentApp` with its scripted model,
through the same harness as the TUI tests (`tests/tui_helpers.py`), and saves:
demo_midrun (plan in progress, panel docked), approval_diff (the Edit approval with its
diff), plan_completed (3/3 and /todos), panel_hidden (ctrl+t) and welcome (no model).
"""

from __future__ import annotations

import asyncio
import json
import os
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
sys.path.insert(0, str(ROOT / "tests"))

from tui_helpers import main_screen, send, turn_done, wait_until

from todo_agent.core.model import Message, ScriptedModel, StreamItem
from todo_agent.core.settings import Config
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.screens.approval import ApprovalScreen


class PausedAt:
    """The demo's scripted model, holding step `pause_at` until released (a mid-run moment)."""

    def __init__(self, model: ScriptedModel, pause_at: int) -> None:
        self.model, self.pause_at = model, pause_at
        self.reached, self.release = asyncio.Event(), asyncio.Event()

    @property
    def name(self) -> str:
        return self.model.name

    async def stream(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> AsyncIterator[StreamItem]:
        if self.model.used == self.pause_at:
            self.reached.set()
            await self.release.wait()
        async for item in self.model.stream(messages, tools):
            yield item


def save(app: TodoAgentApp, name: str) -> None:
    svg, png = OUT / f"{name}.svg", OUT / f"{name}.png"
    app.save_screenshot(str(svg))
    # librsvg keeps the SVG's fixed glyph positions and falls back through fontconfig for
    # symbols like ⏺; cairosvg (a test dependency) is the fallback when it is not installed.
    if shutil.which("rsvg-convert"):
        subprocess.run(["rsvg-convert", "--zoom", "1.5", "-o", str(png), str(svg)], check=True)
    else:
        import cairosvg

        cairosvg.svg2png(url=str(svg), write_to=str(png))
    print(f"wrote screenshots/{name}.svg and .png")


def demo_project(tmp: Path) -> tuple[Path, dict[str, Any]]:
    project = tmp / "demo_project"
    shutil.copytree(ROOT / "examples" / "demo_project", project, ignore=shutil.ignore_patterns("__pycache__"))
    for path in project.iterdir():  # Glob orders by mtime; make the shots the same from any checkout
        os.utime(path, (1_700_000_000, 1_700_000_000))
    return project, json.loads((ROOT / "examples" / "demo_script.json").read_text(encoding="utf-8"))


async def demo_run(tmp: Path) -> None:
    project, script = demo_project(tmp)
    scripted = ScriptedModel.from_data({"steps": script["steps"]}, label="script:demo_script.json")
    model = PausedAt(scripted, pause_at=6)  # after the edit: #1 and #2 done, #3 in progress
    config = Config(workspace=project, model="script:demo_script.json")
    app = TodoAgentApp.for_config(config, model=model, animations=False)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, script["prompt"])
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        save(app, "approval_diff")
        await pilot.press("1")
        await wait_until(pilot, model.reached.is_set)
        await pilot.pause()
        save(app, "demo_midrun")
        model.release.set()
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
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
