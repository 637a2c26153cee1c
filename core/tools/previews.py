"""The unified diff an approval prompt shows for Write and Edit, bounded in size.

difflib is quadratic at worst: past a size limit (either side) the preview is a one-line
summary instead of a diff.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from .fs import line_count, plural, printable

_PREVIEW_MAX_LINES = 2000
PREVIEW_INPUT_MAX_CHARS = 2_000_000
_PREVIEW_INPUT_MAX_LINES = 20_000


def _split_keep_newlines(text: str) -> list[str]:
    # Not str.splitlines(): that also splits on \f, \x1c, \u2028 and friends.
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _too_big_to_diff(text: str) -> bool:
    return len(text) > PREVIEW_INPUT_MAX_CHARS or text.count("\n") > _PREVIEW_INPUT_MAX_LINES


def too_big_note(before_lines: int, after: str) -> str:
    sizes = f"{plural(before_lines, 'line')} → {plural(line_count(after), 'line')}"
    return f"(file too large to preview: {sizes})"


def unified_diff(before: str, after: str, shown: str) -> str:
    if before == after:
        return "(no changes)"
    if _too_big_to_diff(before) or _too_big_to_diff(after):
        return too_big_note(line_count(before), after)
    # Inside the workspace git-style a/ b/ prefixes; outside, the absolute path itself.
    old_label, new_label = (shown, shown) if Path(shown).is_absolute() else (f"a/{shown}", f"b/{shown}")
    out: list[str] = []
    diff = difflib.unified_diff(
        _split_keep_newlines(before), _split_keep_newlines(after), fromfile=old_label, tofile=new_label, n=3
    )
    for count, raw in enumerate(diff):
        if count == _PREVIEW_MAX_LINES:
            out.append("… (diff cut here)\n")
            break
        line = raw.replace("\r\n", "\n")
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return printable("".join(out).rstrip("\n"))


def count_lines(path: Path) -> int:
    lines, last = 0, b"\n"
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")
