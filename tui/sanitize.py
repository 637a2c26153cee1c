"""Make untrusted text (model output, file contents, command output) safe to draw.

Widgets never hand untrusted strings to a markup parser; this module deals with the other
half: raw terminal control sequences. `sanitize` (from `core/terminal.py`, which headless
output uses too) removes escape sequences whole, drops other controls and bidirectional
overrides, and keeps `\\n` and `\\t`; `StreamSanitizer` does the same for text that
arrives in pieces.
"""

from __future__ import annotations

import re

from todo_agent.core.terminal import sanitize

__all__ = ["StreamSanitizer", "sanitize"]

# An escape sequence that has started but not ended (streamed text may cut one in two).
_UNFINISHED = re.compile(
    r"(?:(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*"
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])(?:[^\x07\x9c\x1b]|\x1b(?!\\))*\x1b?"
    r"|\x1b[\x20-\x2f]*)\Z",
    re.DOTALL,
)
_MAX_HELD = 512  # an "escape sequence" longer than this is not one; let it through, sanitized


class StreamSanitizer:
    """`sanitize` for text that arrives in pieces.

    A piece that ends inside an escape sequence keeps that tail back until the next piece
    shows where the sequence ends, so a sequence split across two deltas is still removed
    whole instead of leaving its printable half (`[2J`) behind.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, chunk: str) -> str:
        text = self._held + chunk
        self._held = ""
        if text.endswith("\r"):  # may be the first half of \r\n
            self._held, text = "\r", text[:-1]
        tail = _UNFINISHED.search(text)
        if tail and tail.start() < len(text) and len(text) - tail.start() <= _MAX_HELD:
            self._held = text[tail.start() :] + self._held
            text = text[: tail.start()]
        return sanitize(text)

    def flush(self) -> str:
        """Whatever is still held back, made safe (an unfinished sequence is dropped)."""
        text, self._held = self._held, ""
        return sanitize(text)
