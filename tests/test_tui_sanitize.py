"""`tui.sanitize`: no terminal control survives, text does."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from todo_agent.tui.sanitize import StreamSanitizer, sanitize

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("[/bold] [red]x[/]", "[/bold] [red]x[/]"),
        ("a\x1b[2Jb", "ab"),
        ("\x1b[38;5;196mred\x1b[0m", "red"),
        ("\x1b]0;title\x07after", "after"),
        ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
        ("\x1bPq#0;2;0;0;0\x1b\\sixel", "sixel"),
        ("keep\ttabs\nand lines", "keep\ttabs\nand lines"),
        ("crlf\r\nline", "crlf\nline"),
        ("progress 10%\rprogress 20%", "progress 10%\nprogress 20%"),
        ("nul\x00bell\x07del\x7f", "nulbelldel"),
        ("c1 csi\x9b31mred and nel\x85", "c1 csired and nel"),
        ("bidi \u202eevil\u202c text", "bidi evil text"),
        ("unicode ☐ ◼ ☒ ❯ 你好", "unicode ☐ ◼ ☒ ❯ 你好"),
        ("\x1bc reset", " reset"),
    ],
)
def test_sanitize(raw: str, clean: str) -> None:
    assert sanitize(raw) == clean


def test_visible_mode_shows_what_was_there() -> None:
    shown = sanitize("rm -rf /tmp/x\x1b[2J\x07\u202e", visible=True)
    assert shown == "rm -rf /tmp/x␛[2J␇<U+202E>"
    assert not CONTROL.search(shown)


@given(st.text())
def test_no_control_character_survives(text: str) -> None:
    for visible in (False, True):
        assert not CONTROL.search(sanitize(text, visible=visible))


@given(st.text(alphabet=st.sampled_from(list("ab\n\t[]/\x1b\x07\\;8]PX^_\x9b\x9c\r0m"))), st.data())
def test_streaming_in_any_pieces_equals_sanitizing_the_whole(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    stream = StreamSanitizer()
    streamed = "".join(stream.feed(p) for p in pieces) + stream.flush()
    assert not CONTROL.search(streamed)
    assert streamed == sanitize(text) or _unfinished_at_end(text)


def _unfinished_at_end(text: str) -> bool:
    """An escape sequence still open when the stream ends is dropped whole, unlike `sanitize`."""
    return "\x1b" in text or "\x9b" in text or any(c in text for c in "\x90\x98\x9d\x9e\x9f")


def test_sequence_split_across_deltas_leaves_nothing_behind() -> None:
    stream = StreamSanitizer()
    out = (
        stream.feed("before \x1b")
        + stream.feed("[2J after \x1b]0;ti")
        + stream.feed("tle\x07 end\r")
        + stream.feed("\n")
    )
    assert out + stream.flush() == "before  after  end\n"
