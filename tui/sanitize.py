"""Make untrusted text (model output, file contents, command output) safe to draw.

Widgets never hand untrusted strings to a markup parser; this module deals with the other
half: raw terminal control sequences. Escape sequences (CSI such as colours or clear
screen, OSC such as window titles and hyperlinks, DCS/APC/PM/SOS strings) are removed
whole, other C0/C1 controls and DEL are dropped, `\\r\\n` and lone `\\r` become `\\n`, and
bidirectional overrides (which can make text read differently from what it is) are
dropped too. `\\n` and `\\t` are kept.
"""

from __future__ import annotations

import re

# One complete escape sequence, 7-bit (ESC-introduced) or 8-bit (C1-introduced).
_SEQUENCE = re.compile(
    r"""
      (?:\x1b\[|\x9b) [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]           # CSI: colours, cursor, clear
    | (?:\x1b\]|\x9d) .*? (?:\x07|\x1b\\|\x9c)                         # OSC: title, hyperlink
    | (?:\x1b[PX^_]|[\x90\x98\x9e\x9f]) .*? (?:\x1b\\|\x9c)           # DCS, SOS, PM, APC strings
    | \x1b [\x20-\x2f]* [\x30-\x7e]                                    # other escapes (ESC c, ESC 7, ...)
    """,
    re.VERBOSE | re.DOTALL,
)
# An escape sequence that has started but not ended (streamed text may cut one in two).
_UNFINISHED = re.compile(
    r"(?:(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*"
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])(?:[^\x07\x9c\x1b]|\x1b(?!\\))*\x1b?"
    r"|\x1b[\x20-\x2f]*)\Z",
    re.DOTALL,
)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_MAX_HELD = 512  # an "escape sequence" longer than this is not one; let it through, sanitized
_CONTROL_PICTURES = {0x7F: "␡", 0x1B: "␛"}


def sanitize(text: str, *, visible: bool = False) -> str:
    """Return `text` with no terminal control left in it.

    With `visible=True` nothing is removed silently: escape sequences and controls are
    shown as control pictures (`␛[2J`), for places where the person must see exactly
    what will run (the approval prompt).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if visible:
        return _CONTROLS.sub(_picture, text)
    return _CONTROLS.sub("", _SEQUENCE.sub("", text))


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code in _CONTROL_PICTURES:
        return _CONTROL_PICTURES[code]
    if code < 0x20:
        return chr(0x2400 + code)
    return f"<U+{code:04X}>"


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
