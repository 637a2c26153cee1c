"""How an approval shows what is about to happen: a coloured diff, a command, or text.

Lines are coloured by their prefix with `Content` spans, so nothing in the previewed text
is ever parsed as markup; control characters are made visible (`␛[2J`), never run.
"""

from __future__ import annotations

from textual.content import Content

from ..sanitize import sanitize

MAX_PREVIEW_LINES = 400


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


def render_preview(preview: str, kind: str) -> Content:
    """The preview of an approval request, safe to draw."""
    text = sanitize(preview, visible=True)
    lines = text.splitlines()
    hidden = len(lines) - MAX_PREVIEW_LINES
    if hidden > 0:
        lines = [*lines[:MAX_PREVIEW_LINES], f"… {hidden} more lines"]
    if kind == "command":
        return Content.assemble(("$ ", "bold $text-accent"), ("\n".join(lines), "bold"))
    if kind == "diff":
        parts: list[str | tuple[str, str]] = []
        for index, line in enumerate(lines):
            if index:
                parts.append("\n")
            parts.append((line, _diff_style(line)))
        return Content.assemble(*parts)
    return Content("\n".join(lines))
