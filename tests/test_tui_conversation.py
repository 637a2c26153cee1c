"""The conversation pane: blocks as lines, the live message, long histories, tool output.

Speed is measured in `benchmarks/`, never here; these tests pin the structure that makes
it fast (no widget per message, finished Markdown blocks drawn once, keystrokes that
leave the conversation alone) and what the person sees.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from rich.segment import Segment
from textual.geometry import Offset, Region
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import TextArea
from tui_helpers import SIZE, Host, main_screen, make_app, pieces, screen_text, send, turn_done, wait_until

from todo_agent.core.session.transcript import Session
from todo_agent.tui.transcript import AssistantEntry, Entry, NoticeEntry, PlainEntry, ToolEntry, UserEntry
from todo_agent.tui.widgets import blocks, markdown_body
from todo_agent.tui.widgets.blocks import MAX_OUTPUT_LINES, Block, LiveBlock, ToolBlock
from todo_agent.tui.widgets.conversation import Conversation
from todo_agent.tui.widgets.markdown_blocks import Piece
from todo_agent.tui.widgets.painter import Painter
from todo_agent.tui.widgets.scrollbar import SteadyScrollBar

ANSWER = """# Plan {n}

The loader reads **every** file twice; here is how to fix it ({n}).

- read each file once
- parse it in one pass:
  - split the lines
  - keep the errors {n}

```python
def parse(text):
    rows = []  # {n}
    for line in text.splitlines():
        rows.append(line.split(","))
    return rows
```

1. change `load()`
2. run the tests {n}

> note: the cache stays as it is ({n})

| step | done |
|---|---|
| read | {n} |

Last paragraph with a [link](https://example.com) and `code` ({n}).
"""
LONG_ANSWER = ANSWER.format(n=0)


def long_answer(copies: int) -> str:
    """`copies` answers in one, every block different."""
    return "".join(ANSWER.format(n=n) for n in range(copies))


def history(exchanges: int) -> list[Entry]:
    entries: list[Entry] = []
    for n in range(exchanges):
        entries += [
            UserEntry(f"prompt {n}"),
            ToolEntry(f"c{n}", "Read", "m.py", "ok", "     1\tdef parse(text):\n" * 30),
            AssistantEntry(f"Answer {n}:\n\n- a list\n\n```py\nx = {n}\n```\n"),
        ]
    return entries


# --- history ----------------------------------------------------------------------------


async def test_the_widget_tree_does_not_grow_with_history() -> None:
    counts = []
    for exchanges in (3, 700):
        app = Host(Conversation())
        async with app.run_test(size=SIZE) as pilot:
            await app.conversation.load(history(exchanges))
            await pilot.pause()
            counts.append(len(list(app.screen.query("*"))))
            rendered = sum(1 for b in app.conversation.blocks if isinstance(b, Block) and b.rendered)
            assert rendered < 40  # only what is near the view was drawn
    assert counts[0] == counts[1]


async def test_scrolling_to_the_top_of_a_long_session_shows_the_oldest_message() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        await conversation.load(history(700))  # 2,100 entries
        await pilot.pause()
        assert "Answer 699" in screen_text(app)  # type: ignore[arg-type]
        conversation.release_anchor()
        conversation.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)  # type: ignore[arg-type]
        assert "prompt 0" in text and "Answer 0" in text
        assert conversation.scroll_y == 0


async def test_reading_back_keeps_the_view_still_while_blocks_are_drawn() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        # Markdown answers are taller than their estimate (headings, tables, code blocks).
        await conversation.load(
            [e for n in range(100) for e in (UserEntry(f"p{n}"), AssistantEntry(ANSWER.format(n=n)))]
        )
        await pilot.pause()
        conversation.release_anchor()
        for _ in range(6):  # page up through blocks that had only an estimated height
            here = screen_text(app)  # type: ignore[arg-type]
            conversation.scroll_page_up(animate=False)
            await pilot.pause()
            await pilot.pause()
            above = screen_text(app)  # type: ignore[arg-type]
            assert above != here
            # Drawing the page above measured its blocks; had the view not kept still, a
            # page down would land on other lines than the ones just read.
            conversation.scroll_page_down(animate=False)
            await pilot.pause()
            await pilot.pause()
            assert screen_text(app) == here  # type: ignore[arg-type]
            conversation.scroll_page_up(animate=False)
            await pilot.pause()


async def test_typing_in_the_prompt_leaves_the_conversation_alone() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        await conversation.load(history(300))
        await pilot.pause()
        app.query_one("#typing").focus()
        await pilot.pause()
        calls = Counter[str]()
        real_lines, real_layout = conversation.render_line, conversation._relayout

        def render_line(y: int) -> Any:
            calls["render_line"] += 1
            return real_lines(y)

        def relayout() -> None:
            calls["relayout"] += 1
            real_layout()

        conversation.render_line = render_line  # type: ignore[method-assign]
        conversation._relayout = relayout  # type: ignore[method-assign]
        await pilot.press(*"hello world")
        await pilot.pause()
        assert app.query_one("#typing", TextArea).text == "hello world"
        assert calls == Counter()


async def test_a_width_change_draws_the_blocks_again() -> None:
    app = Host(Conversation())
    async with app.run_test(size=(100, 30)) as pilot:
        await app.conversation.add(UserEntry("word " * 30))
        await pilot.pause()
        (block,) = app.conversation.blocks
        assert isinstance(block, Block) and block.height == 2
        await pilot.resize_terminal(60, 30)
        await pilot.pause()
        await pilot.pause()
        assert block.height == 3 and "❯ word word" in app.conversation.block_text(block)


# --- the live message ---------------------------------------------------------------------


async def test_a_streamed_answer_looks_at_every_step_like_the_finished_one() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        finished = Conversation()
        await app.mount(finished)  # draws the text so far as a finished message
        streamed = ""
        for piece in pieces(LONG_ANSWER, 7):
            streamed += piece
            await conversation.write_live(piece)
            await pilot.pause()
            await wait_until(pilot, lambda: conversation.live is not None and not conversation.live.dirty)
            await finished.clear()
            await finished.add(AssistantEntry(streamed))
            await pilot.pause()
            assert conversation.live is not None
            live_lines = conversation.block_text(conversation.live)
            expected = finished.block_text(finished.blocks[0]) if streamed.strip() else ""
            assert live_lines == expected, streamed
        text = conversation.block_text(conversation.blocks[-1])
        assert "def parse(text):" in text and "• parse it in one pass:" in text and "1 change load()" in text


async def test_finished_markdown_blocks_are_never_drawn_again() -> None:
    app = Host(Conversation())
    again: list[Piece] = []
    drawn: set[tuple[Piece, int]] = set()
    real = markdown_body.block_lines

    def watching(piece: Piece, width: int, painter: Painter) -> list[Any]:
        live = app.conversation.live
        finished = live is not None and piece in live.final_pieces
        if finished and (piece, width) in drawn:
            again.append(piece)
        if finished:
            drawn.add((piece, width))
        return real(piece, width, painter)

    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = long_answer(3)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(markdown_body, "block_lines", watching)
            patch.setattr(blocks, "block_lines", watching)
            for piece in pieces(text, 12):  # ~120 frames (a pause waits for one: 4 characters took 15 s)
                await app.conversation.write_live(piece)
                await pilot.pause()
            await wait_until(pilot, lambda: app.conversation.live is not None and not app.conversation.live.dirty)
        assert app.conversation.live is not None and len(app.conversation.live.final_pieces) > 20
        assert again == []


async def test_the_scrollbar_is_drawn_again_only_when_its_thumb_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    # Textual repaints a scrollbar at every change of position or size: every frame that
    # follows a streaming answer. In a long session the thumb moves a cell in dozens of lines.
    drawn: list[int] = []
    real = SteadyScrollBar.render

    def counting(bar: SteadyScrollBar) -> Any:
        drawn.append(1)
        return real(bar)

    monkeypatch.setattr(SteadyScrollBar, "render", counting)
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        await conversation.load(history(300))  # ~12,000 lines
        await pilot.pause()
        bar = conversation.vertical_scrollbar
        assert isinstance(bar, SteadyScrollBar) and bar.display
        frames = 0
        drawn.clear()
        for n in range(60):  # a line a frame, the view following
            await conversation.write_live(f"line {n} of the answer\n\n")
            await wait_until(pilot, lambda: conversation.live is not None and not conversation.live.dirty)
            await pilot.pause()
            frames += 1
        assert 1 <= len(drawn) < frames // 4, (len(drawn), frames)
        size, _, end = bar.thumb()
        assert end >= size * 8 - 8  # at the bottom, where the view is
        await pilot.resize_terminal(SIZE[0], SIZE[1] - 6)  # Textual's own reasons still repaint it
        await pilot.pause()
        assert bar.thumb()[0] == bar.size.height


async def test_tokens_are_drawn_a_frame_at_a_time() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        conversation = app.conversation
        frames = 0
        real = conversation._draw_live

        def counting() -> None:
            nonlocal frames
            frames += 1
            real()

        conversation._draw_live = counting  # type: ignore[method-assign]
        for piece in pieces(long_answer(5), 2):  # ~1,800 tokens, no pause between them
            await conversation.write_live(piece)
        await wait_until(pilot, lambda: conversation.live is not None and not conversation.live.dirty)
        assert frames == 1
        assert "Last paragraph" in conversation.block_text(conversation.blocks[-1])


async def test_a_steady_stream_repaints_only_the_line_that_grows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Words added to the last line of a long paragraph repaint that line, not the
    paragraph (each repainted line costs the screen a chop and a write, 20 times a second)."""
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        await conversation.write_live("A paragraph " + "of several words " * 40 + "\n" + "and more " * 3)
        await wait_until(pilot, lambda: conversation.live is not None and not conversation.live.dirty)
        await pilot.pause()
        live = conversation.live
        assert live is not None and live.height >= 6
        framing = conversation._framing()
        assert framing is not None
        painted: list[Strip] = []
        real = type(framing).frame

        def frame(self: Any, line: Strip) -> Strip:
            painted.append(line)  # a line drawn anew (the others are kept as they were)
            return real(self, line)

        monkeypatch.setattr(type(framing), "frame", frame)
        frames = []
        for word in ("one ", "two ", "three ", "four "):  # the last line has room for them
            height = live.height
            await conversation.write_live(word)
            await wait_until(pilot, lambda: not live.dirty)
            await pilot.pause()
            assert live.height == height
            frames.append(len(painted))
            painted.clear()
        assert frames == [1, 1, 1, 1]
        assert "three four" in conversation.block_text(live)


async def test_the_finished_message_takes_the_live_one_s_place_and_lines() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        await conversation.add(UserEntry("go"))
        for piece in pieces(LONG_ANSWER, 5):
            await conversation.write_live(piece)
        await wait_until(pilot, lambda: conversation.live is not None and not conversation.live.dirty)
        live = conversation.live
        assert live is not None
        shown = conversation.block_text(live)
        drawn: list[Piece] = []
        real = markdown_body.block_lines

        def counting(piece: Piece, width: int, painter: Painter) -> list[Any]:
            drawn.append(piece)
            return real(piece, width, painter)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(markdown_body, "block_lines", counting)
            patch.setattr(blocks, "block_lines", counting)
            await conversation.finish_live(LONG_ANSWER)
            assert conversation.live is None and len(conversation.blocks) == 2
            block = conversation.blocks[1]
            assert isinstance(block, Block) and block.entry == AssistantEntry(LONG_ANSWER)
            assert conversation.block_text(block) == shown
        assert drawn == []  # nothing drawn again: the live message's lines are the finished one's
        assert conversation.entries == [UserEntry("go"), AssistantEntry(LONG_ANSWER)]


async def test_blocks_added_while_streaming_go_above_the_live_message() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        await conversation.write_live("thinking")
        await conversation.add(NoticeEntry("a notice"))
        await pilot.pause()
        assert isinstance(conversation.blocks[-1], LiveBlock)
        await conversation.stop_live()
        assert conversation.live is None and len(conversation.blocks) == 1


async def test_a_live_message_keeps_the_view_at_the_end() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        for piece in pieces(long_answer(4) + "\n\nTHE END", 9):
            await conversation.write_live(piece)
        await wait_until(pilot, lambda: conversation.live is not None and not conversation.live.dirty)
        await pilot.pause()
        assert "THE END" in screen_text(app)  # type: ignore[arg-type]


# --- tool calls ---------------------------------------------------------------------------


def tool_text(conversation: Conversation, index: int = -1) -> str:
    tools = [b for b in conversation.blocks if isinstance(b, ToolBlock)]
    return conversation.block_text(tools[index])


async def test_clicking_a_tool_block_shows_its_whole_output() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        await conversation.add(ToolEntry("c1", "Bash", "seq"))
        output = "\n".join(str(n) for n in range(MAX_OUTPUT_LINES + 500))
        await conversation.finish_tool("c1", "Bash", output, "ok", 2.0)
        line = tool_text(conversation)
        assert "⏺ Bash(seq)" in line and "✔ 0" in line and "· 2.0s" in line
        await pilot.pause()
        await pilot.click(Conversation, offset=Offset(4, 2))  # padding, blank line, then the call
        await pilot.pause()
        block = conversation.last_tool_block()
        assert block is not None and block.expanded
        lines = tool_text(conversation).splitlines()
        assert len(lines) == 2 + MAX_OUTPUT_LINES + 1
        assert lines[2].endswith("… 500 earlier lines not shown") and lines[3].endswith("500")
        assert lines[-1].endswith(str(MAX_OUTPUT_LINES + 499))
        assert "… 500 earlier lines not shown" in screen_text(app)  # type: ignore[arg-type]
        await conversation.toggle_output(block)
        assert not block.expanded and len(tool_text(conversation).splitlines()) == 2


async def test_a_whole_read_window_keeps_its_first_line() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE):
        conversation = app.conversation
        await conversation.add(ToolEntry("c1", "Read", "big.txt"))
        lines = [f"{n:>6}\tline {n}" for n in range(1, 2001)]
        output = "\n".join([*lines, "… (file has 5000 lines; use offset=2001 to read more)"])
        await conversation.finish_tool("c1", "Read", output, "ok", 0.0)
        await conversation.toggle_last_output()
        shown = tool_text(conversation).splitlines()
        assert shown[2].endswith("1\tline 1".expandtabs()[-6:]) and "line 1" in shown[2]
        assert len(shown) == 2 + 2001


async def test_a_call_waiting_for_approval_says_so() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE):
        conversation = app.conversation
        await conversation.add(ToolEntry("c1", "Bash", "ls"))  # the start first, then the approval
        assert "⎿  running…" in tool_text(conversation)
        conversation.set_waiting("Bash")
        assert "⎿  waiting for your approval…" in tool_text(conversation)
        assert "running" not in tool_text(conversation)
        conversation.set_waiting(None)  # answered yes
        assert "⎿  running…" in tool_text(conversation)
        await conversation.finish_tool("c1", "Bash", "x", "ok", 0.0)
        conversation.set_waiting("Edit")  # the approval first, then the start
        await conversation.add(ToolEntry("c2", "Edit", "a.py"))
        assert "⎿  waiting for your approval…" in tool_text(conversation)
        await conversation.add(ToolEntry("c3", "Edit", "b.py"))  # a later call of the same tool
        assert "⎿  running…" in tool_text(conversation) and "waiting" in tool_text(conversation, -2)
        await conversation.finish_tool("c2", "Edit", "denied", "denied", 0.0)
        assert "waiting" not in tool_text(conversation, -2)


async def test_task_tool_calls_stay_on_one_line() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE):
        conversation = app.conversation
        await conversation.add(ToolEntry("c1", "TaskUpdate", "#1 → completed"))
        await conversation.finish_tool("c1", "TaskUpdate", "Task #1 → completed\n2 task(s) remaining", "ok", 0.0)
        assert tool_text(conversation) == "⏺ TaskUpdate(#1 → completed) ✔"
        await conversation.add(ToolEntry("c2", "TaskUpdate", "#9"))
        await conversation.finish_tool("c2", "TaskUpdate", "Error: unknown task id '9'", "error", 0.0)
        assert "✘ Error: unknown task id '9'" in tool_text(conversation)


async def test_a_running_tool_says_so_and_a_long_line_is_cut_short() -> None:
    app = Host(Conversation())
    async with app.run_test(size=(60, 20)):
        conversation = app.conversation
        await conversation.add(ToolEntry("c1", "Bash", "sleep 1"))
        assert tool_text(conversation) == "⏺ Bash(sleep 1)\n  ⎿  running…"
        await conversation.add(ToolEntry("c2", "Bash", "x" * 200))
        head = tool_text(conversation).splitlines()[0]
        assert head.endswith("…") and len(head) <= 58


async def test_notice_levels_and_plain_blocks_render() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE):
        conversation = app.conversation
        for level in ("info", "warning", "error", "dim"):
            await conversation.add(NoticeEntry(f"{level} notice", level))
        await conversation.add(PlainEntry("☐ #1 x\n(0/1 completed)"))
        await conversation.add(PlainEntry("/help  this", "help"))
        texts = [conversation.block_text(b) for b in conversation.blocks]
        assert texts == [
            "◇ info notice",
            "◇ warning notice",
            "✘ error notice",
            "◇ dim notice",
            "  ☐ #1 x\n  (0/1 completed)",
            "▊ /help  this",
        ]


async def test_selected_conversation_text_can_be_copied() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        await conversation.add(UserEntry("first prompt"))
        await conversation.add(AssistantEntry("An **answer** here"))
        await pilot.pause()
        # Document lines: 0 blank, 1 the prompt, 2 blank, 3 the answer.
        selection = Selection(Offset(3, 1), Offset(8, 3))
        text, _ = conversation.get_selection(selection) or ("", "")
        assert text == "first prompt\n\n● An ans"


# --- in the app -----------------------------------------------------------------------------


def long_session(workspace: Any, exchanges: int) -> None:
    session = Session.create(workspace)
    for n in range(exchanges):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "m.py"}'}}
        session.append({"role": "user", "content": f"Look at module {n}"})
        session.append({"role": "assistant", "content": None, "tool_calls": [call]})
        session.append({"role": "tool", "tool_call_id": f"c{n}", "content": "     1\tdef parse(text):\n" * 30})
        session.append({"role": "assistant", "content": f"Module {n}:\n\n- reads twice\n"})
    session.close()


async def test_continuing_a_2000_message_session_mounts_no_widget_per_message(workspace: Any) -> None:
    long_session(workspace, 500)
    app = make_app(workspace, ["hi"], continue_latest=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await pilot.pause()
        assert len(screen.conversation.entries) >= 1500
        assert len(list(screen.query("*"))) < 80
        assert "Module 499" in screen_text(app)
        screen.conversation.release_anchor()
        screen.conversation.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        await pilot.pause()
        assert "Look at module 0" in screen_text(app)  # the oldest message, 2,000 back
        screen.conversation.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        await send(pilot, "one more")
        await turn_done(pilot)
        assert "hi" in screen_text(app).split("one more", 1)[1]


async def test_ctrl_o_shows_the_last_output_in_the_app(workspace: Any) -> None:
    (workspace / "a.txt").write_text("line one\nline two\nline three\n")
    steps = [{"tool_calls": [{"name": "Read", "arguments": {"file_path": "a.txt"}}]}, "read it"]
    app = make_app(workspace, steps)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "read a.txt")
        await turn_done(pilot)
        assert "line three" not in screen_text(app)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert "line three" in screen_text(app)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert "line three" not in screen_text(app)


async def test_another_theme_draws_the_conversation_again() -> None:
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        await conversation.add(UserEntry("hello"))
        await conversation.write_live("An answer")
        await pilot.pause()
        await wait_until(pilot, lambda: conversation.live is not None and not conversation.live.dirty)

        def backgrounds() -> set[str]:
            return {
                str(s.style.bgcolor)
                for b in conversation.blocks
                for line in b.all_lines(78, conversation._painter)
                for s in line
                if s.style
            }

        before = backgrounds()
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await pilot.pause()
        await pilot.pause()
        assert backgrounds() != before


# --- framing the lines ------------------------------------------------------------------------


def framed_as_textual_would(conversation: Conversation) -> tuple[list[list[Segment]], list[list[Segment]]]:
    """The pane's lines as it frames them, and as Textual's own styles cache frames them."""
    crop = Region(0, 0, *conversation.region.size)
    ours = conversation.render_lines(crop)
    textuals = Widget.render_lines(conversation, crop)
    return [list(strip) for strip in ours], [list(strip) for strip in textuals]


async def test_the_pane_frames_its_lines_exactly_as_textual_does(workspace: Any) -> None:
    """The pane frames its lines itself (padding, background, the app's colour filters)
    so that they can be kept per line of the document; what it draws must be exactly what
    Textual would: in the app's CSS (padding on three sides), in a short and a scrolled
    conversation, with a selection, in another theme, and with the styles it cannot frame."""
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        conversation = main_screen(app).conversation
        await pilot.pause()
        ours, textuals = framed_as_textual_would(conversation)
        assert ours == textuals and conversation._framing() is not None  # short: lifted to the prompt
        await conversation.load(history(30))
        await conversation.write_live(LONG_ANSWER)
        await wait_until(pilot, lambda: conversation.live is not None and not conversation.live.dirty)
        ours, textuals = framed_as_textual_would(conversation)
        assert ours == textuals
        conversation.release_anchor()
        conversation.scroll_to(y=40, animate=False, immediate=True)
        await pilot.pause()
        main_screen(app).selections = {conversation: Selection(Offset(3, 45), Offset(10, 48))}
        ours, textuals = framed_as_textual_would(conversation)
        assert ours == textuals and any("prompt" in "".join(s.text for s in line) for line in ours)
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await pilot.pause()
        ours, textuals = framed_as_textual_would(conversation)
        assert ours == textuals
        conversation.styles.border = ("round", "red")  # a frame it leaves to Textual
        await pilot.pause()
        assert conversation._framing() is None
        ours, textuals = framed_as_textual_would(conversation)
        assert ours == textuals


async def test_lines_already_framed_are_kept_when_the_view_moves() -> None:
    """While the view follows a streaming answer every frame moves it; the lines it showed
    already are not framed again (Textual frames every row of the pane anew)."""
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        await conversation.load(history(30))
        await pilot.pause()
        framing = conversation._framing()
        assert framing is not None
        framed: list[Strip] = []
        real_frame = type(framing).frame

        def counting(self: Any, line: Strip) -> Strip:
            framed.append(line)
            return real_frame(self, line)

        crop = Region(0, 0, *conversation.region.size)
        conversation.render_lines(crop)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(type(framing), "frame", counting)
            conversation.release_anchor()
            conversation.scroll_to(y=conversation.scroll_y - 1, animate=False, immediate=True)
            conversation.render_lines(crop)
        assert len(framed) == 1  # the one line the view moved onto
