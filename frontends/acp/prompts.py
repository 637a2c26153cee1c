"""A `session/prompt`'s content blocks as the text of a todo-agent prompt.

Text as it is; a resource link to a file in the workspace as an `@` mention (attached as
the app attaches one: read from disk, bounded, deny rules applied); an embedded text
resource (the editor's buffer, saved or not) as its text in a fence, named by its path.
Anything else is named and left out, so the person knows what the model did not get.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from todo_agent.core.export.markdown import fence

EMBEDDED_LIMIT = 200_000
"""Characters of one embedded resource a prompt takes."""


def _path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        return None
    path = Path(unquote(parsed.path))
    return path if path.is_absolute() else None


def _mention(uri: str, name: str, workspace: Path) -> str:
    path = _path(uri)
    if path is not None:
        try:
            relative = path.relative_to(workspace)
        except ValueError:
            relative = None
        if relative is not None and not any(c.isspace() for c in str(relative)):
            return f"@{relative.as_posix()}"
    return f"{name or uri} ({uri})"


def prompt_text(blocks: list[Any], workspace: Path) -> str:
    words: list[str] = []
    attached: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            words.append(block.text)
        elif kind == "resource_link":
            words.append(_mention(block.uri, block.name, workspace))
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            where = _path(resource.uri)
            shown = str(where.relative_to(workspace)) if where and where.is_relative_to(workspace) else resource.uri
            if isinstance(text, str):
                cut = text[:EMBEDDED_LIMIT]
                note = f" (its first {EMBEDDED_LIMIT:,} characters)" if len(text) > EMBEDDED_LIMIT else ""
                attached.append(f"{shown}, as open in the editor{note}:\n{fence(cut)}")
            else:
                words.append(f"({shown}: binary, not attached)")
        else:
            words.append(f"({kind or 'a block'} not attached: todo-agent takes text and files)")
    text = " ".join(w for w in words if w)
    return "\n\n".join([text, *attached]) if attached else text
