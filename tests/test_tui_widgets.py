"""Widgets on their own: task panel, conversation pane, tool blocks, prompt."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from textual.app import App, ComposeResult
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Log, Markdown, ProgressBar, Static
from tui_helpers import wait_until

from todo_agent.core.tasks import Task
from todo_agent.tui.transcript import AssistantEntry, NoticeEntry, PlainEntry, ToolEntry, UserEntry
from todo_agent.tui.widgets.blocks import MAX_OUTPUT_LINES, AssistantBlock, EarlierBlock, ToolBlock
from todo_agent.tui.widgets.conversation import Conversation
from todo_agent.tui.widgets.prompt import PromptBox, PromptInput, SlashSuggestions
from todo_agent.tui.widgets.spinner import Spinner
from todo_agent.tui.widgets.status import StatusLine, context_label
from todo_agent.tui.widgets.task_panel import TaskItem, TaskPanel, format_seconds, meta_line


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

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.posted.append(message)


def text_of(widget: Widget) -> str:
    return "\n".join(str(s.visual) for s in widget.query(Static).results() if hasattr(s, "visual"))


TASKS = (
    Task("1", "Read the posts module", status="completed", tool_calls=2, tool_seconds=1.5),
    Task("2", "Add pagination", activeForm="Adding pagination", status="in_progress", tool_calls=3, tool_seconds=12),
    Task("3", "Run the checks", blockedBy=("2",)),
)


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
        assert "☒ #1 Read the posts module" in text
        assert "◼ #2 Add pagination" in text and "← Adding pagination" in text
        assert "☐ #3 Run the checks" in text
        assert "3 calls · 12s" in text and "⧗ blocked by #2" in text
        assert "(1/3 completed)" in text
        bar = panel.query_one(ProgressBar)
        assert (bar.progress, bar.total) == (1, 3)
        assert items[0].has_class("-completed")
        assert len(panel.query(Spinner)) == 1
        assert not panel.query_one("#task-empty").display


def test_task_meta_and_times() -> None:
    assert meta_line(Task("1", "x"), ()) == ""
    assert meta_line(Task("1", "x", tool_calls=1, tool_seconds=0.2), ()) == "1 call · <1s"
    done = (Task("1", "a", status="completed"), Task("2", "b", blockedBy=("1",)))
    assert meta_line(done[1], done) == ""
    assert format_seconds(75) == "1m15s" and format_seconds(3700) == "1h01m"


async def test_spinner_ticks_without_rebuilding_the_list() -> None:
    panel = TaskPanel()
    async with Host(panel, animations=True).run_test() as pilot:
        await panel.show(TASKS)
        items = list(panel.query(TaskItem))
        spinner = panel.query_one(Spinner)
        first = str(spinner.visual)
        await wait_until(pilot, lambda: str(spinner.visual) != first)
        assert list(panel.query(TaskItem)) == items


async def test_task_panel_keys_post_edits() -> None:
    panel = TaskPanel()
    host = Host(panel)
    async with host.run_test(size=(60, 20)) as pilot:
        await panel.show(TASKS)
        panel.list_view.focus()
        panel.list_view.index = 0
        await pilot.press("space")
        await pilot.press("down", "x")
        await pilot.press("d")
        await pilot.press("shift+down", "K", "J", "shift+up")
        await pilot.press("a", *"Write docs", "enter")
        await pilot.press("a", "x", "escape")
        await pilot.pause()
        assert host.posted == [
            TaskPanel.StatusChange("1", "pending"),
            TaskPanel.StatusChange("2", "completed"),
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


async def test_conversation_keeps_a_bounded_number_of_blocks() -> None:
    conversation = Conversation(max_mounted=5)
    async with Host(conversation).run_test() as pilot:
        for n in range(12):
            await conversation.add(NoticeEntry(f"notice {n}"))
        await pilot.pause()
        assert conversation.mounted_blocks == 5
        assert conversation.hidden_entries == 7
        earlier = conversation.query_one(EarlierBlock)
        assert "7 earlier messages" in str(earlier.visual)
        assert len(conversation.children) == 6
        await conversation.show_earlier(4)
        assert conversation.hidden_entries == 3 and "3 earlier" in str(earlier.visual)
        await pilot.click(EarlierBlock)
        await wait_until(pilot, lambda: conversation.hidden_entries == 0)
        assert conversation.hidden_entries == 0 and not conversation.query(EarlierBlock)
        first = conversation.children[0]
        assert isinstance(first, Static) and str(first.visual).endswith("notice 0")


async def test_loading_a_long_history_mounts_only_the_newest() -> None:
    conversation = Conversation(max_mounted=20)
    async with Host(conversation).run_test() as pilot:
        await conversation.load([UserEntry(f"prompt {n}") for n in range(150)] + [AssistantEntry("**last**")])
        await pilot.pause()
        assert conversation.mounted_blocks == 20 and conversation.hidden_entries == 131
        conversation.release_anchor()  # what scrolling up by hand does
        conversation.scroll_home(animate=False)
        await wait_until(pilot, lambda: conversation.hidden_entries == 31)
        await wait_until(pilot, lambda: conversation.scroll_y > 0)  # still looking at what was on top
        conversation.scroll_home(animate=False)
        await wait_until(pilot, lambda: conversation.hidden_entries == 0)


async def test_a_finished_message_collapses_into_one_widget() -> None:
    conversation = Conversation()
    async with Host(conversation).run_test() as pilot:
        for piece in ["# Title\n\n", "- one\n", "- two\n\n", "```py\nx = 1\n```\n"]:
            await conversation.write_live(piece)
        await pilot.pause()
        assert conversation.query(Markdown)
        await conversation.finish_live("# Title\n\n- one\n- two\n\n```py\nx = 1\n```\n")
        await pilot.pause()
        assert not conversation.query(Markdown)
        blocks = list(conversation.query(AssistantBlock))
        assert len(blocks) == 1 and not blocks[0].children
        assert conversation.live is None


async def test_blocks_added_while_streaming_go_above_the_live_message() -> None:
    conversation = Conversation()
    async with Host(conversation).run_test() as pilot:
        await conversation.write_live("thinking")
        await conversation.add(NoticeEntry("a notice"))
        await pilot.pause()
        assert conversation.children[-1] is conversation.live
        await conversation.stop_live()
        assert conversation.live is None and len(conversation.children) == 1


async def test_tool_block_expands_to_a_capped_log() -> None:
    conversation = Conversation()
    async with Host(conversation).run_test() as pilot:
        await conversation.add(ToolEntry("c1", "Bash", "seq"))
        output = "\n".join(str(n) for n in range(MAX_OUTPUT_LINES + 500))
        await conversation.finish_tool("c1", "Bash", output, "ok", 2.0)
        block = conversation.query_one(ToolBlock)
        line = str(block.query_one(".tool-line", Static).visual)
        assert "⏺ Bash(seq)" in line and "✔ 0" in line and "· 2.0s" in line
        await pilot.pause()
        await pilot.click(ToolBlock)
        await pilot.pause()
        log = block.query_one(Log)
        assert log.line_count == MAX_OUTPUT_LINES + 1 and log.lines[-1] == str(MAX_OUTPUT_LINES + 499)
        assert log.lines[0] == "… 500 earlier lines not shown" and log.lines[1] == "500"
        await block.toggle()
        assert not block.query(Log)


async def test_a_whole_read_window_keeps_its_first_line() -> None:
    conversation = Conversation()
    async with Host(conversation).run_test():
        await conversation.add(ToolEntry("c1", "Read", "big.txt"))
        lines = [f"{n:>6}\tline {n}" for n in range(1, 2001)]
        output = "\n".join([*lines, "… (file has 5000 lines; use offset=2001 to read more)"])
        await conversation.finish_tool("c1", "Read", output, "ok", 0.0)
        block = conversation.query_one(ToolBlock)
        await block.toggle()
        log = block.query_one(Log)
        assert log.lines[0] == "     1\tline 1" and log.line_count == 2001


async def test_a_call_waiting_for_approval_says_so() -> None:
    conversation = Conversation()
    async with Host(conversation).run_test():

        def line(index: int = -1) -> str:
            return str(conversation.query(ToolBlock)[index].query_one(".tool-line", Static).visual)

        await conversation.add(ToolEntry("c1", "Bash", "ls"))  # the start first, then the approval
        assert "⎿  running…" in line()
        conversation.set_waiting("Bash")
        assert "⎿  waiting for your approval…" in line() and "running" not in line()
        conversation.set_waiting(None)  # answered yes
        assert "⎿  running…" in line()
        await conversation.finish_tool("c1", "Bash", "x", "ok", 0.0)
        conversation.set_waiting("Edit")  # the approval first, then the start
        await conversation.add(ToolEntry("c2", "Edit", "a.py"))
        assert "⎿  waiting for your approval…" in line()
        await conversation.add(ToolEntry("c3", "Edit", "b.py"))  # a later call of the same tool
        assert "⎿  running…" in line() and "waiting" in line(-2)
        await conversation.finish_tool("c2", "Edit", "denied", "denied", 0.0)
        assert "waiting" not in line(-2)


async def test_task_tool_calls_stay_on_one_line() -> None:
    conversation = Conversation()
    async with Host(conversation).run_test():
        await conversation.add(ToolEntry("c1", "TaskUpdate", "#1 → completed"))
        await conversation.finish_tool("c1", "TaskUpdate", "Task #1 → completed\n2 task(s) remaining", "ok", 0.0)
        line = str(conversation.query_one(".tool-line", Static).visual)
        assert line == "⏺ TaskUpdate(#1 → completed) ✔"
        await conversation.add(ToolEntry("c2", "TaskUpdate", "#9"))
        await conversation.finish_tool("c2", "TaskUpdate", "Error: unknown task id '9'", "error", 0.0)
        assert "✘ Error: unknown task id '9'" in str(conversation.query(".tool-line").last().visual)  # type: ignore[attr-defined]


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
        suggestions = box.query_one(SlashSuggestions)
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


async def test_overlapping_panel_redraws_draw_each_task_once() -> None:
    panel = TaskPanel()
    async with Host(panel).run_test(size=(60, 20)) as pilot:
        older = tuple(replace(t, status="pending") for t in TASKS)
        await asyncio.gather(panel.show(older), panel.show(TASKS), panel.show(TASKS))
        await pilot.pause()
        items = list(panel.query(TaskItem))
        assert [i.task_value for i in items] == list(TASKS)  # three items, the last call's state


async def test_notice_levels_and_plain_blocks_render() -> None:
    conversation = Conversation()
    async with Host(conversation).run_test() as pilot:
        for level in ("info", "warning", "error", "dim"):
            await conversation.add(NoticeEntry(f"{level} notice", level))
        await conversation.add(PlainEntry("☐ #1 x\n(0/1 completed)"))
        await pilot.pause()
        texts = [str(c.visual) for c in conversation.children if isinstance(c, Static)]
        assert texts == [
            "◇ info notice",
            "◇ warning notice",
            "✘ error notice",
            "◇ dim notice",
            "☐ #1 x\n(0/1 completed)",
        ]


async def test_a_running_tool_says_so() -> None:
    conversation = Conversation()
    async with Host(conversation).run_test():
        await conversation.add(ToolEntry("c1", "Bash", "sleep 1"))
        assert str(conversation.query_one(".tool-line", Static).visual) == "⏺ Bash(sleep 1)\n  ⎿  running…"
