"""One long Markdown block (a file in one code fence, output without a blank line) streams
at the cost of what arrives, and looks, while it streams and after, as Markdown says.

The work is counted (characters parsed, lines rendered), never timed: `benchmarks/`
times it. Slices are made small here so that short texts show what long ones do.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.parser_block import ParserBlock
from rich.style import Style
from textual.strip import Strip
from tui_helpers import SIZE, Host, pieces, screen_text, wait_until

from todo_agent.tui.transcript import AssistantEntry
from todo_agent.tui.widgets import markdown_blocks, markdown_body
from todo_agent.tui.widgets.blocks import AssistantBlock
from todo_agent.tui.widgets.conversation import Conversation
from todo_agent.tui.widgets.markdown_blocks import Piece, split_pieces
from todo_agent.tui.widgets.markdown_stream import GrowingMarkdown
from todo_agent.tui.widgets.painter import Painter


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(markdown_blocks, "SLICE_LINES", 10, raising=False)
    monkeypatch.setattr(markdown_blocks, "SLICE_CHARS", 1_000, raising=False)
    monkeypatch.setattr(markdown_blocks, "CONTEXT_LINES", 20, raising=False)


FUNCTION = (
    'def parse_{n}(text: str) -> list[str]:\n    """Rows of the\n    text ({n})."""\n    return text.split(",")\n\n'
)


def code(functions: int) -> str:
    return "".join(FUNCTION.format(n=n) for n in range(functions))


def prose(lines: int, width: int = 300) -> str:
    words = "the loader reads **every** file twice, once to count and once to `parse()`; "
    return "".join((f"{n}: " + words * (width // len(words) + 1))[:width].rstrip() + "\n" for n in range(lines))


LONG_FENCE = "Here is the file:\n\n```python\n" + code(60) + "```\n\nThat is all.\n"
LONG_PARAGRAPH = "The log:\n\n" + prose(40) + "\nThat is all.\n"


# --- the work per chunk -------------------------------------------------------------------


class Work:
    """Characters handed to the Markdown parser and lines rendered, counted as they happen."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.parsed = self.rendered = 0
        block_parse, parse, parse_inline, rich = (
            ParserBlock.parse,
            MarkdownIt.parse,
            MarkdownIt.parseInline,
            Painter.rich,
        )

        def counted_block_parse(parser: ParserBlock, src: str, *args: Any, **kwargs: Any) -> Any:
            self.parsed += len(src)
            return block_parse(parser, src, *args, **kwargs)

        def counted_parse(markdown: MarkdownIt, src: str, *args: Any, **kwargs: Any) -> Any:
            self.parsed += len(src)
            return parse(markdown, src, *args, **kwargs)

        def counted_inline(markdown: MarkdownIt, src: str, *args: Any, **kwargs: Any) -> Any:
            self.parsed += len(src)
            return parse_inline(markdown, src, *args, **kwargs)

        def counted_rich(painter: Painter, *args: Any, **kwargs: Any) -> list[Strip]:
            lines = rich(painter, *args, **kwargs)
            self.rendered += len(lines)
            return lines

        monkeypatch.setattr(ParserBlock, "parse", counted_block_parse)
        monkeypatch.setattr(MarkdownIt, "parse", counted_parse)
        monkeypatch.setattr(MarkdownIt, "parseInline", counted_inline)
        monkeypatch.setattr(Painter, "rich", counted_rich)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("```python\n" + code(300) + "THE END\n", id="one code fence"),
        pytest.param(prose(300) + "THE END\n", id="lines without a blank line"),
        pytest.param("word " * 8_000 + "THE END\n", id="one line"),
        pytest.param("```\n" + "x=1;" * 8_000 + "THE END\n", id="one line of code"),
    ],
)
@pytest.mark.usefixtures("small_slices")
async def test_one_long_block_costs_per_chunk_what_arrived(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk, drawn in its own frame, costs about what it brought (and a screenful),
    however long the block already is: not the whole block parsed and drawn again."""
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        work = Work(monkeypatch)
        costs: list[tuple[int, int]] = []
        for chunk in pieces(text, 600):  # ~20 lines of code, 2 of prose
            parsed, rendered = work.parsed, work.rendered
            await conversation.write_live(chunk)
            await wait_until(pilot, lambda: conversation.live is not None and not conversation.live.dirty)
            await pilot.pause()  # the screen drawn too
            costs.append((work.parsed - parsed, work.rendered - rendered))
        assert len(text) > 25_000 and len(costs) > 40
        worst_parsed = max(parsed for parsed, _ in costs[10:])
        worst_rendered = max(rendered for _, rendered in costs[10:])
        assert worst_parsed <= 3 * (600 + 1_000), costs  # the chunk and the slice it joins: read, drawn
        assert worst_rendered <= 3 * SIZE[1], costs  # what arrived and a screenful around it
        await conversation.finish_live(text)
        await pilot.pause()
        assert "THE END" in screen_text(app)  # type: ignore[arg-type]


async def test_a_long_answer_keeps_a_bounded_number_of_lines_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines of pieces drawn long ago are let go (the collector walks every kept line)
    and drawn again when they come back into view."""
    monkeypatch.setattr(markdown_body, "KEPT_LINES", 200)
    text = "```python\n" + code(300) + "```\n"
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        for chunk in pieces(text, 2_000):
            await conversation.write_live(chunk)
            await wait_until(pilot, lambda: conversation.live is not None and not conversation.live.dirty)
            await pilot.pause()
        await conversation.finish_live(text)
        await pilot.pause()
        block = conversation.blocks[-1]
        assert isinstance(block, AssistantBlock) and block.height > 1_000
        assert block.body is not None and block.body.kept <= 200 + 40  # one slice may go over
        conversation.release_anchor()
        conversation.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        assert "def parse_0(text: str)" in screen_text(app)  # type: ignore[arg-type]
        assert "def parse_299(text: str)" in conversation.block_text(block)


# --- what it looks like ----------------------------------------------------------------------


async def finished_text(text: str) -> str:
    """`text` drawn as a finished message, alone."""
    app = Host(Conversation())
    async with app.run_test(size=SIZE) as pilot:
        await app.conversation.add(AssistantEntry(text))
        await pilot.pause()  # laid out: the scrollbar, if it takes one, narrows it
        await pilot.pause()
        return app.conversation.block_text(app.conversation.blocks[0])


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(LONG_FENCE, id="a fence"),
        pytest.param("```\n" + code(30) + "\n\n\n```\nafter", id="a fence without language, closed by its last chunk"),
        pytest.param(
            "````md\n```\nnot the end\n```\n" + code(30) + "````\n\n- a\n  - b\n", id="a fence holding a fence"
        ),
        pytest.param(LONG_PARAGRAPH, id="a paragraph"),
        pytest.param(prose(30) + "===\n\nafter\n", id="a paragraph that turns into a heading"),
        pytest.param(prose(30) + "- item\n  - nested\n1. one\n", id="a paragraph that a list ends"),
        pytest.param("# Title\n\n" + prose(12) + "\n```\n" + code(20) + "```\n" + prose(12), id="blocks around"),
        pytest.param("A blob: " + "word " * 900 + "\n\n```\n" + "x=1;" * 900 + "\n```\n", id="long lines"),
    ],
)
@pytest.mark.usefixtures("small_slices")
async def test_a_long_block_streams_looking_like_the_finished_one(text: str) -> None:
    """At the end of each line that arrived, the live message shows what the finished
    message with that text shows; at the end, the finished message takes over its lines."""
    app = Host(Conversation())
    rng = random.Random(len(text))
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.conversation
        streamed = ""
        for chunk in random_chunks(text, rng):
            streamed += chunk
            await conversation.write_live(chunk)
            if not streamed.endswith("\n") and streamed != text:
                continue
            await wait_until(pilot, lambda: conversation.live is not None and not conversation.live.dirty)
            live = conversation.live
            assert live is not None
            assert conversation.block_text(live) == await finished_text(streamed), streamed
        live = conversation.live
        assert live is not None
        shown = conversation.block_text(live)
        await conversation.finish_live(text)
        block = conversation.blocks[-1]
        assert conversation.block_text(block) == shown == await finished_text(text)


def random_chunks(text: str, rng: random.Random) -> Iterator[str]:
    at = 0
    while at < len(text):
        size = rng.choice((1, 3, 17, 80, 400))
        yield text[at : at + size]
        at += size


def cells(lines: list[Strip]) -> list[list[tuple[str, Style | None]]]:
    """What each cell shows: its character and its style (however Rich cut the segments)."""
    return [[(char, segment.style) for segment in strip for char in segment.text] for strip in lines]


async def test_a_fence_cut_in_slices_looks_like_the_whole_fence(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices draw one code box with the colours of the whole: a docstring cut in two is
    still a string on both sides, because each slice is highlighted after the function it
    is in."""
    text = "```python\n" + code(40) + "```\n"
    drawn, counts = [], []
    for lines in (10, 10**9):  # cut every 10 lines, and not at all
        monkeypatch.setattr(markdown_blocks, "SLICE_LINES", lines)
        monkeypatch.setattr(markdown_blocks, "SLICE_CHARS", 10**9)
        counts.append(len(split_pieces(text)))
        app = Host(Conversation())
        async with app.run_test(size=SIZE):
            await app.conversation.add(AssistantEntry(text))
            block = app.conversation.blocks[0]
            drawn.append(cells(block.all_lines(SIZE[0] - 2, app.conversation._painter)))
    assert counts[0] > 10 and counts[1] == 1
    sliced, whole = drawn
    assert len(sliced) == len(whole) > 200
    assert sliced == whole


# --- the pieces, as the text streams --------------------------------------------------------


VOCABULARY = [
    "plain words here\n", "more text *em* and **strong\n", "closing** text\n", "\n", "   \n", "# Heading\n",
    "===\n", "---\n", "- item\n", "  - nested\n", "1. one\n", "2. two\n", "> quote\n", "```\n", "```python\n",
    "~~~\n", "````\n", "    indented code\n", "a | b\n", "<div>\n", "</div>\n", "[ref]: http://x\n", "***\n",
    "x" * 300 + "\n", "\t tab\n", "`code` span\n", "+ plus\n", "a\u2028line\n", "y" * 2_500 + "\n",
    "word " * 500 + "\n", "- " + "item " * 300 + "\n",
]  # fmt: skip


def stream_pieces(text: str, rng: random.Random) -> list[Piece]:
    growing, pieces_so_far = GrowingMarkdown(), []
    for chunk in random_chunks(text, rng):
        growing.append(chunk)
        if rng.random() < 0.7:
            settled = growing.settle(rng.choice((None, 5, 50)))
            del pieces_so_far[len(pieces_so_far) - settled.taken_back :]
            pieces_so_far += settled.pieces
    settled = growing.finish()
    del pieces_so_far[len(pieces_so_far) - settled.taken_back :]
    assert growing.text == text
    return pieces_so_far + settled.pieces


@pytest.mark.usefixtures("small_slices")
def test_streamed_pieces_are_the_finished_answer_s_pieces() -> None:
    """However the text arrives, the pieces handed out while it streams (some taken back)
    are the pieces the finished answer is drawn with."""
    rng = random.Random(7)
    for _ in range(300):
        lines = [
            rng.choice(VOCABULARY) if rng.random() < 0.6 else f"plain line {rng.randint(0, 99)}\n" for _ in range(60)
        ]
        text = "".join(lines) + rng.choice(("", "a last line without a newline", "```", "z " * 1_500))
        assert stream_pieces(text, rng) == split_pieces(text), text


@pytest.mark.usefixtures("small_slices")
def test_long_fences_and_paragraphs_are_cut_and_nothing_else_is() -> None:
    pieces_of = {
        "fence": split_pieces("```py\n" + code(10) + "```\n"),
        "indented fence": split_pieces("  ```\n" + code(10) + "  ```\n"),
        "paragraph": split_pieces(prose(30)),
        "list": split_pieces("".join(f"- item {n}\n" for n in range(60))),
        "short fence": split_pieces("```\n" + code(1) + "```\n"),
    }
    kinds = {name: {piece.kind for piece in found} for name, found in pieces_of.items()}
    assert kinds == {
        "fence": {"code"},
        "indented fence": {"block"},
        "paragraph": {"paragraph"},
        "list": {"block"},
        "short fence": {"block"},
    }
    fence = pieces_of["fence"]
    assert fence[0].opens and not fence[0].closes and fence[-1].closes and not fence[-1].opens
    assert "".join(piece.source for piece in fence) == code(10)  # every line once, no fence line
    assert all(piece.info == "py" for piece in fence)
