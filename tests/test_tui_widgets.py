"""Widgets on their own: task panel, prompt, status line (the conversation: test_tui_conversation.py)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.message import Message
from textual.widget import Widget
from textual.widgets import ProgressBar, Static
from tui_helpers import screen_text, wait_until

from todo_agent.core.tasks.model import Task
from todo_agent.tui.widgets.prompt import PromptBox, PromptInput, Suggestions
from todo_agent.tui.widgets.spinner import Spinner
from todo_agent.tui.widgets.status import StatusLine, context_label, format_seconds
from todo_agent.tui.widgets.task_panel import TaskItem, TaskPanel, meta_line


class Host(App[None]):
    """Mounts one widget and records the messages it posts."""

    def __init__(self, widget: Widget, *, animations: bool = False) -> None:
        super().__init__()
        self.widget = widget
        self.posted: list[Message] = []
        if not animations:
            self.animation_level = "none"

    def compose(self) -> ComposeResult:
        yield self.widget

    def on_task_panel_add(self, message: TaskPanel.Add) -> None:
        self.posted.append(message)

    def on_task_panel_status_change(self, message: TaskPanel.StatusChange) -> None:
        self.posted.append(message)

    def on_task_panel_delete(self, message: TaskPanel.Delete) -> None:
        self.posted.append(message)

    def on_task_panel_move(self, message: TaskPanel.Move) -> None:
        self.posted.append(message)

    def on_task_panel_open_agent(self, message: TaskPanel.OpenAgent) -> None:
        self.posted.append(message)

    def on_task_panel_stop_agent(self, message: TaskPanel.StopAgent) -> None:
        self.posted.append(message)

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.posted.append(message)


def text_of(widget: Widget) -> str:
    return "\n".join(str(s.visual) for s in widget.query(Static).results() if hasattr(s, "visual"))


NOW = 1_000_012.0
TASKS = (
    Task("1", "Read the posts module", status="completed", tool_calls=2, started_at=1.0, progress_seconds=1.5),
    Task(
        "2",
        "Add pagination",
        activeForm="Adding pagination",
        status="in_progress",
        tool_calls=3,
        tool_seconds=0.5,  # the tools ran for half a second; the task has been in progress 12 s
        started_at=NOW - 12,
        progress_since=NOW - 12,
    ),
    Task("3", "Run the checks", blockedBy=("2",)),
)


@pytest.fixture(autouse=True)
def panel_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TaskPanel, "clock", staticmethod(lambda: NOW))


async def test_empty_task_panel_says_so() -> None:
    panel = TaskPanel()
    async with Host(panel).run_test() as pilot:
        await pilot.pause()
        assert panel.query_one("#task-empty").display
        assert not panel.query_one(ProgressBar).display or panel.has_class("-empty")
        assert "No tasks yet" in text_of(panel)


async def test_task_panel_draws_markers_progress_and_work() -> None:
    panel = TaskPanel()
    async with Host(panel).run_test(size=(60, 20)) as pilot:
        await panel.show(TASKS)
        await pilot.pause()
        items = list(panel.query(TaskItem))
        assert [i.task_value.id for i in items] == ["1", "2", "3"]
        text = text_of(panel)
        rows = screen_text(pilot.app)  # type: ignore[arg-type]
        assert "☒ #1 Read the posts module" in rows
        assert "◼ #2 Add pagination" in rows and "← Adding pagination" in text
        assert "☐ #3 Run the checks" in rows
        assert "3 calls · 12s" in text and "⧗ blocked by #2" in text
        assert "(1/3 completed)" in text
        bar = panel.query_one(ProgressBar)
        assert (bar.progress, bar.total) == (1, 3)
        assert items[0].has_class("-completed")
        assert not [s for s in panel.query(Spinner) if s.spinning]  # nothing runs: nothing turns
        panel.working = True
        assert [s.spinning for s in panel.query(Spinner)] == [False, True, False]
        assert not panel.query_one("#task-empty").display


async def test_a_long_subject_wraps_under_itself() -> None:
    panel = TaskPanel()
    subject = "Rewrite the pagination helpers so every caller gets the same page size"
    async with Host(panel).run_test(size=(30, 12)) as pilot:
        await panel.show((Task("1", subject),))
        await pilot.pause()
        rows = [r for r in screen_text(pilot.app).splitlines() if r.strip()]  # type: ignore[arg-type]
        start = next(i for i, r in enumerate(rows) if "☐ #1 Rewrite" in r)
        first, second = rows[start], rows[start + 1]
        indent = first.index("#1")
        assert second[:indent].strip(" │") == "" and second[indent] != " "  # a hanging indent
        words = " ".join(r[indent:].strip(" │") for r in rows[start : start + 4])
        assert subject in words  # every word whole, in order


async def test_the_time_in_progress_ticks_while_the_agent_works(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [NOW]
    monkeypatch.setattr(TaskPanel, "clock", staticmethod(lambda: now[0]))
    panel = TaskPanel()
    async with Host(panel, animations=True).run_test(size=(60, 20)) as pilot:
        await panel.show(TASKS)
        panel.working = True
        meta = panel.query(TaskItem)[1].query_one(".task-meta", Static)
        assert str(meta.render()) == "3 calls · 12s"
        now[0] += 60  # a minute waiting on an approval: no event, the panel still moves
        await wait_until(pilot, lambda: str(meta.render()) == "3 calls · 1m12s")
        panel.working = False
        now[0] += 60
        await pilot.pause()
        assert panel._ticker is None and str(meta.render()) == "3 calls · 1m12s"


def test_task_meta_and_times() -> None:
    assert meta_line(Task("1", "x"), (), now=NOW) == ""  # never started: nothing to say
    waited = Task("1", "x", status="in_progress", tool_calls=1, tool_seconds=0.2, started_at=100, progress_since=100)
    assert meta_line(waited, (), now=170.0) == "1 call · 1m10s"  # 70 s on an approval count
    assert meta_line(Task("1", "x", status="in_progress", started_at=100, progress_since=100), (), now=100.4) == "<1s"
    done = (Task("1", "a", status="completed"), Task("2", "b", blockedBy=("1",)))
    assert meta_line(done[1], done, now=NOW) == ""
    assert format_seconds(75) == "1m15s" and format_seconds(3700) == "1h01m"


async def test_spinner_ticks_without_rebuilding_the_list_and_stops_when_idle() -> None:
    panel = TaskPanel()
    async with Host(panel, animations=True).run_test() as pilot:
        await panel.show(TASKS)
        panel.working = True
        items = list(panel.query(TaskItem))
        spinner = items[1].query_one(Spinner)
        assert spinner.ticking
        first = str(spinner.visual)
        await wait_until(pilot, lambda: str(spinner.visual) != first)
        assert list(panel.query(TaskItem)) == items
        panel.working = False  # the turn ended with the task still in progress
        await pilot.pause()
        assert not spinner.spinning and not spinner.ticking and spinner.region.width == 0


async def test_task_panel_keys_post_edits() -> None:
    panel = TaskPanel()
    host = Host(panel)
    async with host.run_test(size=(60, 20)) as pilot:
        await panel.show(TASKS)
        panel.list_view.focus()
        panel.list_view.index = 0
        await pilot.press("space")
        await pilot.press("down", "space")
        await pilot.press("o", "x")  # the task's sub-agent: its transcript, stop it
        await pilot.press("d")
        await pilot.press("shift+down", "K", "J", "shift+up")
        await pilot.press("a", *"Write docs", "enter")
        await pilot.press("a", "x", "escape")
        await pilot.pause()
        assert host.posted == [
            TaskPanel.StatusChange("1", "pending"),
            TaskPanel.StatusChange("2", "completed"),
            TaskPanel.OpenAgent("2"),
            TaskPanel.StopAgent("2"),
            TaskPanel.Delete("2"),
            TaskPanel.Move("2", 1),
            TaskPanel.Move("2", -1),
            TaskPanel.Move("2", 1),
            TaskPanel.Move("2", -1),
            TaskPanel.Add("Write docs"),
        ]
        assert not panel.query_one("#task-add").display
        assert panel.list_view.has_focus


async def test_highlight_stays_on_the_same_task_after_a_redraw() -> None:
    panel = TaskPanel()
    async with Host(panel).run_test(size=(60, 20)) as pilot:
        await panel.show(TASKS)
        panel.list_view.index = 2
        await panel.show((TASKS[2], TASKS[0], TASKS[1]))
        await pilot.pause()
        assert panel.list_view.index == 0


async def test_prompt_enter_sends_and_shift_enter_adds_a_line() -> None:
    box = PromptBox()
    host = Host(box)
    async with host.run_test() as pilot:
        prompt = box.query_one(PromptInput)
        prompt.focus()
        await pilot.press(*"line one", "shift+enter", *"two", "ctrl+j", *"three")
        assert prompt.text == "line one\ntwo\nthree"
        await pilot.press("enter")
        await pilot.pause()
        assert host.posted == [PromptInput.Submitted("line one\ntwo\nthree")]
        assert prompt.text == ""
        await pilot.press("enter")
        assert len(host.posted) == 1  # nothing to send


async def test_prompt_history_recall() -> None:
    box = PromptBox()
    host = Host(box)
    async with host.run_test() as pilot:
        prompt = box.query_one(PromptInput)
        prompt.focus()
        for text in ("first", "second\nprompt"):
            prompt.text = text
            await pilot.press("enter")
        await pilot.press(*"draft")
        await pilot.press("up")
        assert prompt.text == "second\nprompt"
        await pilot.press("up")  # cursor is on the last line: move up within the prompt
        assert prompt.text == "second\nprompt" and prompt.cursor_location[0] == 0
        await pilot.press("up")
        assert prompt.text == "first"
        await pilot.press("down")
        assert prompt.text == "second\nprompt"
        await pilot.press("down", "down")
        assert prompt.text == "draft"


async def test_slash_suggestions_complete_with_tab() -> None:
    box = PromptBox()
    host = Host(box)
    async with host.run_test() as pilot:
        prompt = box.query_one(PromptInput)
        suggestions = box.query_one(Suggestions)
        prompt.focus()
        await pilot.press("/", "m", "o")
        await pilot.pause()
        assert suggestions.display and [c.name for c in suggestions.commands] == ["/mode", "/model"]
        await pilot.press("down", "tab")
        assert prompt.text == "/model "
        await pilot.pause()
        assert not suggestions.display
        prompt.text = "/to"
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert host.posted[-1] == PromptInput.Submitted("/todos")


async def test_status_line_shows_model_mode_context_and_activity() -> None:
    status = StatusLine()
    async with Host(status).run_test(size=(120, 5)) as pilot:
        status.set_model("gpt-4o-mini")
        status.mode = "plan"
        status.set_context(12_300, 128_000)
        status.busy = True
        status.set_activity("running Bash")
        await pilot.pause()
        text = text_of(status)
        assert "gpt-4o-mini" in text and "plan (shift+tab)" in text and "ctx 12k/128k (9%)" in text
        assert "running Bash · 0s · esc to interrupt" in text
        assert status.query_one(Spinner).display
        status.set_waiting("Bash")  # an approval is open: esc answers it, it does not interrupt
        await pilot.pause()
        assert "waiting for your approval · Bash · 0s · esc = no" in text_of(status)
        assert "esc to interrupt" not in text_of(status)
        status.set_waiting(None)
        await pilot.pause()
        assert "running Bash · 0s · esc to interrupt" in text_of(status)
        status.busy = False
        await pilot.pause()
        assert "esc to interrupt" not in text_of(status)
    assert context_label(950, None) == "950 tokens"


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize(
    ("model", "mode", "window"),
    [("gpt-4o-mini", "default", None), ("script:demo_script.json", "bypassPermissions", 128_000)],
)
async def test_the_status_line_keeps_whole_words_however_narrow(
    width: int, model: str, mode: str, window: int | None
) -> None:
    status = StatusLine()
    async with Host(status).run_test(size=(width, 1)) as pilot:
        status.set_model(model)
        status.mode = mode
        status.set_context(12_300, window)

        async def row() -> str:
            await pilot.pause()
            return screen_text(pilot.app).splitlines()[0]  # type: ignore[arg-type]

        def shown(selector: str) -> str:
            return str(status.query_one(selector, Static).render())

        states = [("idle", None), ("busy", None), ("waiting", "Bash")]
        for state, tool in states:
            status.busy = state != "idle"
            status.set_activity("ready" if state == "idle" else "thinking")
            status.set_waiting(tool)
            line = await row()
            for whole in (shown("#status-activity"), shown("#status-mode"), context_label(12_300, window)):
                assert whole in line, f"{whole!r} cut at {width} columns ({state}): {line!r}"
            assert ("ready" if state == "idle" else "thinking" if state == "busy" else "approval") in line
            name = status.query_one("#status-model", Static)
            if name.display:  # a long name may be cut, but only at its end, with an ellipsis
                visible = line.split(shown("#status-activity"), 1)[1].split(shown("#status-mode"), 1)[0].strip()
                assert visible == model or (visible.endswith("…") and model.startswith(visible[:-1]))
        if width >= 120:
            assert "(shift+tab)" in await row() or mode == "bypassPermissions"


async def test_the_approval_clock_counts_from_the_question() -> None:
    now = [1000.0]
    status = StatusLine()
    status.clock = lambda: now[0]
    async with Host(status, animations=True).run_test(size=(120, 1)) as pilot:
        status.busy = True
        now[0] += 70  # the turn has run for 70 s when the approval opens
        status.set_waiting("Bash")
        await pilot.pause()
        assert "waiting for your approval · Bash · <1s · esc = no" in text_of(status)
        now[0] += 5
        status.set_waiting(None)  # answered: the turn's own clock again
        await pilot.pause()
        assert "1m15s · esc to interrupt" in text_of(status)


async def test_the_spinner_rests_while_an_answer_s_text_arrives() -> None:
    """The text shows the work; each spinner frame would be a screen update of its own."""
    status = StatusLine()
    async with Host(status, animations=True).run_test(size=(120, 1)) as pilot:
        status.busy = True
        await pilot.pause()
        spinner = status.query_one(Spinner)
        shown = str(spinner.render())
        status.text_arriving()
        for _ in range(3):
            spinner._tick()  # its timer's ticks, while the text arrives
        assert str(spinner.render()) == shown
        spinner.rest(0)  # half a second after the last text
        spinner._tick()
        assert str(spinner.render()) != shown


async def test_the_ticking_clock_repaints_the_status_line_without_a_layout() -> None:
    """Every second of a turn the clock changes the words: that is a repaint of the line,
    not a layout of the whole screen (which repaints everything on it)."""
    now = [1000.0]
    status = StatusLine()
    status.clock = lambda: now[0]
    async with Host(status, animations=True).run_test(size=(120, 1)) as pilot:
        status.busy = True
        status.set_activity("writing")
        await pilot.pause()
        layouts = 0
        real = pilot.app.screen._refresh_layout

        def counting(*args: Any, **kwargs: Any) -> None:
            nonlocal layouts
            layouts += 1
            real(*args, **kwargs)

        pilot.app.screen._refresh_layout = counting  # type: ignore[method-assign]
        for second in range(1, 4):
            now[0] += 1
            status._fit()  # the clock's tick
            await pilot.pause()
            assert f"writing · {second}s · esc to interrupt" in text_of(status)
        assert layouts == 0


async def test_overlapping_panel_redraws_draw_each_task_once() -> None:
    panel = TaskPanel()
    async with Host(panel).run_test(size=(60, 20)) as pilot:
        older = tuple(replace(t, status="pending") for t in TASKS)
        await asyncio.gather(panel.show(older), panel.show(TASKS), panel.show(TASKS))
        await pilot.pause()
        items = list(panel.query(TaskItem))
        assert [i.task_value for i in items] == list(TASKS)  # three items, the last call's state


async def test_a_running_call_shows_its_own_time_and_the_mcp_count() -> None:
    now = [1000.0]
    status = StatusLine()
    status.clock = lambda: now[0]
    async with Host(status, animations=True).run_test(size=(120, 1)) as pilot:
        assert "mcp" not in text_of(status)  # no server configured: nothing said
        status.set_mcp(2, 3)
        status.busy = True
        now[0] += 40  # the turn has run 40 s when a long MCP call starts
        status.set_activity("running mcp__db__query", timed=True)
        now[0] += 12
        await pilot.pause()
        status.set_context(100, 1000)  # any redraw
        await pilot.pause()
        text = text_of(status)
        assert "running mcp__db__query · 12s · esc to interrupt" in text and "mcp 2/3" in text
        status.set_activity("thinking")  # back to the turn's clock
        await pilot.pause()
        assert "thinking · 52s" in text_of(status)
