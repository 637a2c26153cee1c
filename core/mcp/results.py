"""An MCP call's result as the model reads it.

Text content as it is; structured content as JSON text (when no text part carries it);
images and audio as a placeholder naming their type and size; resource links as their
URI. `is_error` results reach the model as errors. A result longer than Bash's cap (its
first and last 15,000 characters) is cut in the middle with a note, and the whole text is
kept in a file beside the session, which the note names so the model can Read it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..atomic import atomic_write
from .remote import CallResult, Part


def results_dir(session_path: Path, session_id: str) -> Path:
    """Where the whole text of a session's cut results is kept."""
    return session_path.with_name(f"{session_id}.mcp-results")


HEAD_CHARS = 15_000
TAIL_CHARS = 15_000
"""As Bash keeps (`core/tools/bash.py`: 15,000 bytes each end)."""


def _size(count: int) -> str:
    return f"{count:,} bytes"


def _placeholder(part: Part) -> str:
    if part.kind in ("image", "audio"):
        return f"[{part.kind}: {part.mime or 'unknown type'}, {_size(part.size)}]"
    label = f" {part.text}" if part.text else ""
    size = f", {_size(part.size)}" if part.size else ""
    return f"[resource{label}: {part.uri}{(' (' + part.mime + size + ')') if part.mime else ''}]"


def render(result: CallResult) -> str:
    """The whole result as text (before any cut)."""
    pieces = [part.text if part.kind == "text" else _placeholder(part) for part in result.parts]
    # The spec has a server send its structured content as text too (for older clients);
    # only when it did not is the structured content the result's text.
    if result.structured is not None and not any(p.kind == "text" for p in result.parts):
        pieces.append(json.dumps(result.structured, ensure_ascii=False, indent=2))
    text = "\n".join(pieces)
    return text if text.strip() else "(no output)"


def cap(text: str, keep_at: Path | None) -> str:
    """`text`, cut in the middle past the cap; the whole of it saved at `keep_at` first."""
    if len(text) <= HEAD_CHARS + TAIL_CHARS:
        return text
    omitted = len(text) - HEAD_CHARS - TAIL_CHARS
    where = ""
    if keep_at is not None:
        try:
            keep_at.parent.mkdir(parents=True, exist_ok=True)
            os.chmod(keep_at.parent, 0o700)
            atomic_write(keep_at, text.encode("utf-8", "replace"))
            where = f"; the whole result ({len(text):,} characters) is in {keep_at}: Read it with offset and limit"
        except OSError as exc:
            where = f"; it could not be kept ({exc.strerror or exc})"
    note = f"\n[… {omitted:,} characters omitted{where} …]\n"
    return text[:HEAD_CHARS] + note + text[-TAIL_CHARS:]
