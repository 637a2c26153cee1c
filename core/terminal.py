"""Text that is safe to print to a terminal: no escape sequence or control of its own.

Model text, server messages and command output may carry terminal escapes (clear the
screen, set the window title, forge a hyperlink). Whatever todo-agent prints (the TUI
through `tui/sanitize.py`, headless `-p` directly) goes through `sanitize` first:
escape sequences (CSI, OSC, DCS/APC/PM/SOS strings, 7- and 8-bit) are removed whole,
other C0/C1 controls and DEL are dropped, `\\r\\n` and lone `\\r` become `\\n`, and
bidirectional overrides are dropped. `\\n` and `\\t` are kept. A lone surrogate (text
that cannot be written as UTF-8 at all) becomes U+FFFD, so printing it never fails.
"""

from __future__ import annotations

import re

# One complete escape sequence, 7-bit (ESC-introduced) or 8-bit (C1-introduced).
SEQUENCE = re.compile(
    r"""
      (?:\x1b\[|\x9b) [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]           # CSI: colours, cursor, clear
    | (?:\x1b\]|\x9d) .*? (?:\x07|\x1b\\|\x9c)                         # OSC: title, hyperlink
    | (?:\x1b[PX^_]|[\x90\x98\x9e\x9f]) .*? (?:\x1b\\|\x9c)           # DCS, SOS, PM, APC strings
    | \x1b [\x20-\x2f]* [\x30-\x7e]                                    # other escapes (ESC c, ESC 7, ...)
    """,
    re.VERBOSE | re.DOTALL,
)
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
INVISIBLE = re.compile("[\u200b-\u200f\u2028\u2029\u2060-\u2064\ufeff]")
"""Zero-width and line-separator characters: printable, yet a terminal shows nothing."""
BLANK_RUN = 2
"""This many blank lines in a row or more fold into one marker where a command is shown."""
_CONTROL_PICTURES = {0x7F: "␡", 0x1B: "␛"}
_JSON_UNSAFE = {code: f"\\u{code:04x}" for code in (*range(0x7F, 0xA0), *range(0xD800, 0xE000))}
_SURROGATE = re.compile("[\ud800-\udfff]")


def sanitize(text: str, *, visible: bool = False) -> str:
    """Return `text` with no terminal control left in it.

    With `visible=True` nothing is removed silently: escape sequences and controls are
    shown as control pictures (`␛[2J`), for places where the person must see exactly
    what will run (the approval prompt).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.isascii():
        text = _SURROGATE.sub("\ufffd", text)
    if visible:
        return CONTROLS.sub(_picture, text)
    return CONTROLS.sub("", SEQUENCE.sub("", text))


def reveal(text: str, *, diff: bool = False) -> str:
    """`text` with every character a terminal would act on or not show made visible: controls
    and escape sequences as control pictures (`␛]0;…␇`), a carriage return as `␍` (a shell
    does not treat it as a line break), invisible characters as `<U+200B>`. For whatever the
    person approves to run: a command, a hook. A `diff`'s `\r\n` line endings stay breaks."""
    if not diff:
        text = text.replace("\r", "␍")
    return INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", sanitize(text, visible=True))


def reveal_line(text: str) -> str:
    """`reveal(text)` on one line: a line break shows as `␤`, a run of blank lines as `␤×61`."""
    runs = re.compile(f"\n{{{BLANK_RUN + 1},}}")
    return runs.sub(lambda m: f"␤×{len(m.group())}", reveal(text)).replace("\n", "␤")


def json_safe(line: str) -> str:
    """A JSON text (`ensure_ascii=False` leaves DEL and C1 controls raw, and `\\x9b` starts
    a CSI on some terminals; lone surrogates raw, which cannot be written as UTF-8) with
    those escaped as `\\uXXXX`; it decodes to the same value."""
    return line.translate(_JSON_UNSAFE)


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code in _CONTROL_PICTURES:
        return _CONTROL_PICTURES[code]
    if code < 0x20:
        return chr(0x2400 + code)
    return f"<U+{code:04X}>"
