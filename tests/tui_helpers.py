"""Shared harness for the TUI tests: build the real app on a scripted model, wait on state."""

from __future__ import annotations

import asyncio
import html
import math
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import TextArea

from todo_agent.core.model.base import Message, ModelResponse, StreamItem
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.settings import Config
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.screens.approval import ApprovalScreen
from todo_agent.tui.screens.main import MainScreen
from todo_agent.tui.screens.trust import TrustScreen
from todo_agent.tui.widgets.conversation import Conversation

SIZE = (120, 36)

INJECTIONS = (
    "[/bold]",
    "[red]x[/]",
    "[link=x]click[/link]",
    "\x1b[2J",
    "\x1b]0;title\x07",
    "\x1b]8;;http://x\x1b\\y\x1b]8;;\x1b\\",
    "[bold][/]]",
    "\x9b31mC1\x85",
)
"""Strings that break markup parsers or drive the terminal if drawn as they are."""

LITERALS = ("[/bold]", "[red]x[/]", "[link=x]click[/link]", "[bold][/]]")
"""What of `INJECTIONS` must appear on screen, literally."""

HOSTILE = " ".join(INJECTIONS)


def make_config(workspace: Path, **overrides: Any) -> Config:
    return Config(workspace=workspace, model="script:test", **overrides)


def make_app(
    workspace: Path,
    model: Any,
    *,
    resume: str | None = None,
    continue_latest: bool = False,
    **config: Any,
) -> TodoAgentApp:
    if isinstance(model, list | dict):
        model = ScriptedModel.from_data(model)
    return TodoAgentApp.for_config(
        make_config(workspace, **config),
        model=model,
        resume=resume,
        continue_latest=continue_latest,
        animations=False,
    )


def main_screen(app: TodoAgentApp) -> MainScreen:
    for screen in app.screen_stack:
        if isinstance(screen, MainScreen):
            return screen
    raise AssertionError(f"no main screen in {app.screen_stack}")


async def wait_until(pilot: Pilot[Any], condition: Callable[[], bool], *, limit: float = 60.0) -> None:
    """Let the app run until `condition()` holds (fails after `limit` seconds).

    The limit only bounds a failure; a passing wait returns as soon as the state is there.
    It is generous because a 2-core machine shared with other work (load 7) took more
    than 15 s to play the demo.
    """
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached within {limit}s")
        await pilot.pause()


async def answer_approval(pilot: Pilot[Any], tool: str | None, *keys: str) -> None:
    """Wait, as a person reading it would, until the approval for `tool` (any tool if None)
    takes `keys[0]` as its answer, then press `keys`. Pressing as soon as it opens can be
    dropped as a double tap of the previous answer (`TodoAgentApp.answers_now`)."""
    app = pilot.app
    assert isinstance(app, TodoAgentApp)

    def ready() -> bool:
        screen = app.screen
        return (
            isinstance(screen, ApprovalScreen)
            and (tool is None or screen.request.tool == tool)
            and app.answers_now(keys[0])
        )

    await wait_until(pilot, ready)
    await pilot.press(*keys)


async def trust_question(pilot: Pilot[Any], kind: type[TrustScreen]) -> TrustScreen:
    """A trust question on screen, as if read for a while (keys right after it appears are
    taken as typing, not as an answer)."""
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, kind) and app.screen.shown_at < math.inf)
    screen = app.screen
    assert isinstance(screen, kind)
    screen.shown_at -= 1000.0
    return screen


async def send(pilot: Pilot[Any], text: str) -> None:
    """Type `text` into the prompt and press enter."""
    screen = main_screen(pilot.app)  # type: ignore[arg-type]
    prompt = screen.query_one("#prompt")
    prompt.focus()
    prompt.text = text  # type: ignore[attr-defined]
    await pilot.press("enter")


async def turn_done(pilot: Pilot[Any]) -> None:
    screen = main_screen(pilot.app)  # type: ignore[arg-type]
    await wait_until(pilot, lambda: not screen.busy)
    await pilot.pause()


def settled(app: TodoAgentApp) -> bool:
    """Whether the screen shows what the core has done so far: every event of the turn is
    drawn and the task panel shows the store (no redraw under way)."""
    screen = main_screen(app)
    panel = screen.panel
    return screen.caught_up and not panel.drawing and panel.tasks == screen.runtime.store.snapshot()


async def wait_settled(pilot: Pilot[Any]) -> None:
    """Wait until `settled`, then for the frame that shows it.

    `Pilot.pause` brings only the top screen's layout up to date; the main screen under a
    modal lays itself out on its own timer, which a loaded machine may not have run yet.
    It is brought up to date the same way here, so a screenshot shows what is settled.
    """
    app = pilot.app
    await wait_until(pilot, lambda: settled(app))  # type: ignore[arg-type]
    await pilot.pause()
    main_screen(app)._on_timer_update()  # type: ignore[arg-type]
    await pilot.pause()


def screen_text(app: TodoAgentApp) -> str:
    """Everything visible on screen as plain text, one line per row, each piece at its
    column (from the SVG export; a gap between two pieces stays a gap)."""
    svg = app.export_screenshot()
    rows: dict[float, dict[int, str]] = {}
    cell = 0.0
    pattern = r'<text[^>]*\bx="([\d.]+)"[^>]*\by="([\d.]+)"[^>]*textLength="([\d.]+)"[^>]*>([^<]*)</text>'
    for x, y, length, raw in re.findall(pattern, svg):
        text = html.unescape(raw).replace("\xa0", " ")
        if not cell and len(text) == 1 and text.isascii():
            cell = float(length)
        rows.setdefault(float(y), {})[round(float(x) * 1000)] = text
    cell = cell or 12.2
    lines = []
    for _, pieces in sorted(rows.items()):
        line = ""
        for x, text in sorted(pieces.items()):
            column = round(x / 1000 / cell)
            line = line.ljust(column) + text if column > len(line) else line + text
        lines.append(line.rstrip())
    return "\n".join(lines)


@dataclass
class GatedModel:
    """Streams `text`, then waits on `release` before finishing (for interrupts mid-stream)."""

    text: str = "Working on it"
    release: asyncio.Event = field(default_factory=asyncio.Event)
    name: str = "gated"
    requests: list[Sequence[Message]] = field(default_factory=list)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        self.requests.append(list(messages))
        yield self.text
        await self.release.wait()
        yield ModelResponse(content=self.text)


def bash_step(command: str, call_id: str = "call_bash") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "Bash", "arguments": {"command": command}}]}


def task_steps(*subjects: str, start: str | None = "1") -> list[dict[str, Any]]:
    """Steps that create tasks (one batch) and start one."""
    steps: list[dict[str, Any]] = [
        {
            "tool_calls": [
                {"name": "TaskCreate", "arguments": {"subject": s, "activeForm": f"Doing {s}"}} for s in subjects
            ]
        }
    ]
    if start:
        steps.append({"tool_calls": [{"name": "TaskUpdate", "arguments": {"taskId": start, "status": "in_progress"}}]})
    return steps


class Host(App[None]):
    """A conversation pane on its own, and a text area to type into beside it."""

    def __init__(self, conversation: Conversation) -> None:
        super().__init__()
        self.conversation = conversation
        self.animation_level = "none"

    def compose(self) -> ComposeResult:
        yield self.conversation
        yield TextArea(id="typing")


def pieces(text: str, size: int = 3) -> Iterator[str]:
    """`text` in pieces of `size` characters, as a model streams it."""
    for start in range(0, len(text), size):
        yield text[start : start + size]
