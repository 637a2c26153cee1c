"""Which format a file name asks for, the export as text, and the file written.

`.json` is the transcript's records, `.html` and `.htm` one self-contained page, anything
else Markdown. Writing replaces the file all at once (`atomic_write`), private (0600) like
the session it comes from: it holds everything the model read.

An existing file is replaced only when it is an export itself (its first line says
`todo-agent export`) or empty: `/export notes.md` twice updates the export, but a path that
names the project's README, or a file of any other kind, is left alone with a line saying
so. The person gave the name; a typo must not cost them a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..atomic import atomic_write
from .markdown import to_markdown
from .page import to_html
from .source import MARKER, Exported, to_json

Format = Literal["markdown", "json", "html"]
NAMES: dict[Format, str] = {"markdown": "Markdown", "json": "JSON", "html": "HTML"}
_SNIFF = 512
"""Bytes read of an existing file to see whether it is an earlier export."""


_SIGNS = (f"<!-- {MARKER}", f'"format": "{MARKER}"')
"""How an export begins: Markdown and HTML with a comment, JSON with its format."""


class ExportError(Exception):
    """The export could not be written; the message is one line that says why."""


@dataclass(frozen=True)
class Saved:
    session_id: str
    path: Path
    text: str
    format: Format
    messages: int
    replaced: bool
    """It replaced an earlier export at that path."""

    def line(self) -> str:
        """`exported session … to PATH (HTML, 42 messages; replaced the earlier export)`."""
        counted = f"{NAMES[self.format]}, {self.messages:,} message{'' if self.messages == 1 else 's'}"
        again = "; replaced the earlier export" if self.replaced else ""
        return f"exported session {self.session_id} to {self.path} ({counted}{again})"


def format_of(path: Path) -> Format:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "json"
    return "html" if suffix in (".html", ".htm") else "markdown"


def render(source: Exported, form: Format) -> str:
    if form == "json":
        return to_json(source)
    return to_html(source) if form == "html" else to_markdown(source)


def beside(session_path: Path) -> Path:
    """Where `/export` without a file writes: `<id>.export.md` beside the session."""
    return session_path.with_name(f"{session_path.stem}.export.md")


def save(source: Exported, path: Path, form: Format | None = None) -> Saved:
    """Write `source` to `path` in `form` (by default, as its name says); `ExportError`
    when the path names something that is not an earlier export, or cannot be written."""
    path, form = path.absolute(), form or format_of(path)
    replaced = _replaceable(path)
    text = render(source, form)
    try:
        atomic_write(path, text.encode("utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise ExportError(f"cannot write the export to {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    return Saved(source.session_id, path, text, form, source.messages, replaced)


def _replaceable(path: Path) -> bool:
    """Whether a file is there to replace (an earlier export, or an empty file); ExportError
    for anything else at `path`."""
    try:
        if not path.exists():
            return False
        if path.is_dir():
            raise ExportError(f"{path} is a folder: name a file to export to (e.g. {path / 'session.md'})")
        if not path.is_file():
            raise ExportError(f"{path} is not a regular file: not overwritten")
        with path.open("rb") as existing:
            head = existing.read(_SNIFF)
    except OSError as exc:
        raise ExportError(f"cannot export to {path}: {exc.strerror or exc}") from exc
    if head and not any(sign.encode() in head for sign in _SIGNS):
        raise ExportError(
            f"{path} exists and is not an export of todo-agent: not overwritten (name another file, or remove it first)"
        )
    return bool(head)
