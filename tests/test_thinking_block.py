"""The thinking block: a reasoning model's thought streams open in the conversation (dim,
plain text), folds to `∴ Thought for N s` when the answer or a call starts, and unfolds
on a click or `ctrl+o`; read back from a session and in a sub-agent's transcript the
same, folded."""

from __future__ import annotations

from pathlib import Path

from tui_helpers import INJECTIONS, LITERALS, SIZE, main_screen, make_app, screen_text, send, turn_done, wait_until

from todo_agent.core.events import AgentEvent, AgentStarted, ReasoningDelta, TextDelta, ToolStarted
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.tui.agent_views import AgentViews
from todo_agent.tui.transcript import AssistantEntry, ThoughtEntry, entries_from_history, thought_label
from todo_agent.tui.widgets.blocks import ThoughtBlock

THOUGHT = "The user wants a greeting.\nA short one will do; nothing to read first.\n"


def thought_blocks(app: object) -> list[ThoughtBlock]:
    return [b for b in main_screen(app).conversation.blocks if isinstance(b, ThoughtBlock)]  # type: ignore[arg-type]


async def test_the_thought_streams_open_then_folds_when_the_answer_starts(workspace: Path) -> None:
    model = ScriptedModel.from_data(
        {"steps": [{"reasoning": THOUGHT * 3, "text": "Hello there."}], "chunk_size": 8, "chunk_delay": 0.03}
    )
    app = make_app(workspace, model)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "say hello")
        # While it streams: open, its text on screen under `∴ Thinking…`, the answer not yet.
        await wait_until(pilot, lambda: "nothing to read first" in screen_text(app))
        screen = screen_text(app)
        assert "∴ Thinking…" in screen and "Hello there." not in screen
        await turn_done(pilot)
        screen = screen_text(app)
        assert "∴ Thought for" in screen and "Hello there." in screen
        assert "nothing to read first" not in screen  # folded to its one line
        (block,) = thought_blocks(app)
        assert block.entry.text == THOUGHT * 3 and not block.expanded
        # The answer is not a folding block: ctrl+o opens the thought, and closes it again.
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: "nothing to read first" in screen_text(app))
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: "nothing to read first" not in screen_text(app))
        # A click on its line opens it too.
        conversation = main_screen(app).conversation
        row = next(y for y in range(SIZE[1]) if "∴ Thought for" in screen_text(app).splitlines()[y])
        await pilot.click(conversation, offset=(6, row - conversation.region.y))
        await wait_until(pilot, lambda: block.expanded and "nothing to read first" in screen_text(app))


async def test_markup_and_escapes_in_the_thought_stay_text(workspace: Path) -> None:
    hostile = " ".join(INJECTIONS)
    app = make_app(workspace, [{"reasoning": hostile, "text": "Done."}])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await turn_done(pilot)
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: thought_blocks(app)[0].expanded)
        await pilot.pause()
        screen = screen_text(app)
        for literal in LITERALS:
            assert literal in screen
        assert "\x1b" not in screen and "\x9b" not in screen


async def test_a_call_folds_the_thought_and_a_thought_per_response_is_kept(workspace: Path) -> None:
    read = {"name": "Read", "arguments": {"file_path": "notes.txt"}}
    (workspace / "notes.txt").write_text("hi\n")
    steps = [
        {"reasoning": "I should read notes.txt first.", "text": "", "tool_calls": [read]},
        {"reasoning": "It says hi.", "text": "The notes say hi."},
    ]
    app = make_app(workspace, steps)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "what do the notes say?")
        await turn_done(pilot)
        blocks = thought_blocks(app)
        assert [b.entry.text for b in blocks] == ["I should read notes.txt first.", "It says hi."]
        assert all(not b.entry.streaming and b.entry.seconds is not None for b in blocks)
        assert "I should read" not in screen_text(app)


async def test_after_continue_the_thought_is_there_folded(workspace: Path) -> None:
    app = make_app(workspace, [{"reasoning": "Counting the words: three of them here.", "text": "Done."}])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await turn_done(pilot)
    app.runtime.session.close()  # type: ignore[union-attr]
    again = make_app(workspace, [], continue_latest=True)
    async with again.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "Done." in screen_text(again))
        assert "∴ Thought  7 words" in screen_text(again)  # its timing is not kept, its text is
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: "Counting the words" in screen_text(again))


def test_a_session_read_back_gives_the_thought_before_its_answer() -> None:
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "Done.", "reasoning": "vLLM names the field so."},
        {"role": "assistant", "content": "Again.", "thoughts": "a configured field"},
        {"role": "assistant", "content": "No thought."},
    ]
    entries = entries_from_history(history)
    kinds = [(type(e).__name__, e.text) for e in entries if isinstance(e, ThoughtEntry | AssistantEntry)]
    assert kinds == [
        ("ThoughtEntry", "vLLM names the field so."),
        ("AssistantEntry", "Done."),
        ("ThoughtEntry", "a configured field"),
        ("AssistantEntry", "Again."),
        ("AssistantEntry", "No thought."),
    ]
    assert thought_label(ThoughtEntry("one", seconds=12.4)) == ("∴ Thought for 12 s", "")
    assert thought_label(ThoughtEntry("one")) == ("∴ Thought", "1 word")


async def test_a_sub_agents_transcript_keeps_its_thought_folded() -> None:
    class Plan:
        async def show_tasks(self, tasks: object) -> None:
            pass

    views = AgentViews()
    started = AgentStarted("explore-1", "Explore", "look around", call_id="c1", task_id=None, transcript="")
    await views.record(started, Plan())
    for inner in (
        ReasoningDelta("Where to look? "),
        ReasoningDelta("The tests first."),
        ToolStarted("t1", "Glob", {"pattern": "tests/**"}, "tests/**"),
        TextDelta("Found them."),
    ):
        await views.record(AgentEvent("explore-1", "c1", inner), Plan())
    entries = views.transcripts["explore-1"].entries
    thoughts = [e for e in entries if isinstance(e, ThoughtEntry)]
    assert [(t.text, t.streaming) for t in thoughts] == [("Where to look? The tests first.", False)]
    assert thoughts[0].seconds is not None


async def test_effort_is_set_with_a_command_and_shown_in_the_status_line(workspace: Path) -> None:
    app = make_app(workspace, [], reasoning_effort="high")
    async with app.run_test(size=SIZE) as pilot:
        status = main_screen(app).status
        await wait_until(pilot, lambda: "(high)" in status._model_name)
        await send(pilot, "/effort low")
        await wait_until(pilot, lambda: "reasoning effort: low" in screen_text(app))
        assert "(low)" in status._model_name and app.runtime is not None
        assert app.runtime.reasoning_effort == "low"
        await send(pilot, "/effort default")
        await wait_until(pilot, lambda: "reasoning effort: the server's default" in screen_text(app))
        assert "(" not in status._model_name
        await send(pilot, "/effort extreme")
        await wait_until(pilot, lambda: "/effort takes one of" in screen_text(app))
