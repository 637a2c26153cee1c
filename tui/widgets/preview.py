"""How an approval shows what is about to happen: a coloured diff, a command, or text.

Lines are coloured by their prefix with `Content` spans, so nothing in the previewed text
is ever parsed as markup; control characters are made visible (`␛[2J`), never run.

A command is shown whole, every line of it: a `touch x` eighty blank lines below
`pytest -q` must not hide below the fold. Runs of blank lines collapse into one dim
marker line, a carriage return shows as `␍` (a shell does not treat it as a line
break, so drawing one would misstate the command), and invisible format characters
(zero-width spaces, line separators) show as `<U+200B>`.
"""

from __future__ import annotations

from textual.content import Content

from todo_agent.core.terminal import BLANK_RUN, reveal

MAX_DIFF_LINES = 400
"""A diff longer than this is cut with a note (a command is never cut)."""


def has_hidden_characters(preview: str, kind: str) -> bool:
    """Whether `preview` holds characters a terminal would not show as they are
    (escapes, other controls, bidi overrides, zero-width characters); a diff's line
    endings (`\r\n`) do not count."""
    plain = preview.replace("\r\n", "\n") if kind == "diff" else preview
    return visible_text(preview, kind) != plain


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("@@"):
        return "$text-accent"
    if line.startswith("+"):
        return "$text-success on $success 15%"
    if line.startswith("-"):
        return "$text-error on $error 15%"
    return ""


def visible_text(preview: str, kind: str) -> str:
    """`preview` with every control and invisible character shown as a symbol."""
    return reveal(preview, diff=kind == "diff")


def collapse_blank_runs(lines: list[str]) -> list[tuple[str, bool]]:
    """`(line, is_marker)` pairs: runs of `BLANK_RUN`+ blank lines become one marker."""
    out: list[tuple[str, bool]] = []
    run = 0
    for line in [*lines, "end"]:
        if not line.strip():
            run += 1
            continue
        if run >= BLANK_RUN:
            out.append((f"⋯ {run} blank lines", True))
        else:
            out.extend(("", False) for _ in range(run))
        run = 0
        out.append((line, False))
    return out[:-1]


def render_preview(preview: str, kind: str, *, limit: int = MAX_DIFF_LINES) -> Content:
    """The preview of an approval request (or a task's diff), safe to draw; a diff is
    cut after `limit` lines with a note."""
    lines = visible_text(preview, kind).split("\n")
    if kind == "diff":
        hidden = len(lines) - limit
        if hidden > 0:
            lines = [*lines[:limit], f"… {hidden} more lines"]
        parts: list[str | tuple[str, str]] = []
        for index, line in enumerate(lines):
            if index:
                parts.append("\n")
            parts.append((line, _diff_style(line)))
        return Content.assemble(*parts)
    rows = collapse_blank_runs(lines)
    pieces: list[str | tuple[str, str]] = []
    for index, (line, marker) in enumerate(rows):
        if kind == "command":
            pieces.append(("$ " if index == 0 else "  ", "bold $text-accent"))
        if marker:
            pieces.append((line, "dim italic"))
        else:
            pieces.append((line, "bold") if kind == "command" else line)
        if index < len(rows) - 1:
            pieces.append("\n")
    return Content.assemble(*pieces)
