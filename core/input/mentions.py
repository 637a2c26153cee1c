"""`@path` in a prompt: the file's content (a folder: its listing) goes with the message.

`@cli.py`, `@src/`, `@cli.py:10-40` (lines 10 to 40), `@"name with spaces.md"`. A mention
is a word that starts with `@` (an e-mail address is not: the `@` follows a letter). A path
that does not exist stays plain text; trailing punctuation (`@cli.py,`) is not part of it.
What is attached is what a Read would give the model: numbered lines, within Read's caps
(2,000 lines, and the share of the window a tool result may take). Instead of content,
a clear note goes to the model and the person for a binary file, a file over those caps
(attach a range), a path outside the workspace, and one a deny rule on reading covers.

An image file (`.png`, `.jpg`, `.jpeg`, `.gif`, `.webp`, or bytes that are one) goes as an
image, for a model that takes images (`images = true`): its bytes decide its type, and
one that is not an image of a type a model reads, over `MAX_IMAGE_BYTES`, past
`MAX_IMAGES` in one prompt, or for a model without images, is a note instead.

The attachments travel in one user message right after the prompt (`attachment_content`),
each in an `<attachment>` element whose content lines never start with `<` (numbered
lines, indented listings), so `parse_attachment_message` takes it apart again to draw a
resumed conversation. With an image the message is a content list: its text, cut after
each `<attachment-image …/>` line to put that image's part there (the text parts joined
are the same text). An attached file counts as read for Edit's stale-file check. An
attachment is the `Attached` event the person is shown (`core/events.py`).
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..events import Attached as Attachment
from ..model.images import MAX_IMAGES
from ..tools.files import DEFAULT_LIMIT, read_window
from ..tools.fs import plural
from ..tools.images import ImageFile, named_as_image, read_image
from ..tools.ledger import FileLedger
from ..tools.results import ToolError
from ..tools.walk import SKIP_DIRS

MAX_LISTING = 500
"""Entries of a folder listed at most."""
OPEN = "<attachments>"
CLOSE = "</attachments>"
_INTRO = "The person attached these with @ in the message above (as the Read tool would show them):"
NO_IMAGES = "not attached: the model does not take images (images = true in the settings turns them on)"

_MENTION = re.compile(r'(?<![\w@/\\`])@(?:"(?P<quoted>[^"\n]+)"|(?P<bare>[^\s"`]+))')
_RANGE = re.compile(r"(?P<path>.+?):(?P<first>\d+)(?:-(?P<last>\d+))?")
_TRAILING = ".,;:!?)]}'"
_ELEMENT = re.compile(
    r'^<attachment path="(?P<path>[^"]*)" summary="(?P<summary>[^"]*)">\n(?P<body>.*?)^</attachment>$'
    r'|^<attachment-note path="(?P<npath>[^"]*)">(?P<note>[^\n]*)</attachment-note>$'
    r'|^<attachment-image path="(?P<ipath>[^"]*)" type="(?P<mime>[^"]*)" summary="(?P<isummary>[^"]*)"/>$',
    re.MULTILINE | re.DOTALL,
)


@dataclass(frozen=True)
class Mention:
    token: str
    """As typed, after the `@`: `cli.py:10-40`."""
    path: str
    lines: tuple[int, int | None] | None = None
    """A line range: first, and last (None: to the end)."""


def _candidates(token: str) -> Iterator[tuple[str, tuple[int, int | None] | None]]:
    """Readings of a typed token, most literal first: with a line range, then with
    trailing punctuation taken off (`cli.py,` → `cli.py`)."""
    stripped = token
    while stripped:
        ranged = _RANGE.fullmatch(stripped)
        if ranged:
            last = ranged["last"]
            yield ranged["path"], (int(ranged["first"]), int(last) if last else None)
        yield stripped, None
        if stripped[-1] not in _TRAILING:
            return
        stripped = stripped[:-1]


def find_mentions(text: str, exists: Callable[[str], bool]) -> list[Mention]:
    """The `@` mentions in `text` whose path `exists`, in order, each path once."""
    found: dict[tuple[str, tuple[int, int | None] | None], Mention] = {}
    for match in _MENTION.finditer(text):
        token = match["quoted"] or match["bare"]
        for path, lines in _candidates(token) if match["bare"] else [(token, None)]:
            if exists(path):
                found.setdefault((path, lines), Mention(token, path, lines))
                break
    return list(found.values())


def _listing(directory: Path, hidden: Callable[[str], bool]) -> tuple[str, int]:
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError as exc:
        raise ToolError(f"cannot list it: {exc.strerror or exc}") from exc
    shown: list[str] = []
    for entry in entries:
        if hidden(entry.path):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        suffix = "/" if is_dir else ""
        note = "  (not listed: dependencies or caches)" if is_dir and entry.name in SKIP_DIRS else ""
        shown.append(f"  {entry.name}{suffix}{note}")
    count = len(shown)
    if count > MAX_LISTING:
        shown = [*shown[:MAX_LISTING], f"  … and {count - MAX_LISTING} more"]
    return "\n".join(shown) or "  (empty)", count


@dataclass(frozen=True)
class Taken:
    """What one mention gave: the attachment the person is shown, and an image file when it
    goes to the model as an image."""

    attachment: Attachment
    image: ImageFile | None = None


@dataclass(frozen=True)
class Attacher:
    """Turns mentions into attachments for one workspace (blocking: file reads; run in a thread)."""

    workspace: Path
    read_denied: Callable[[str], bool] = lambda path: False
    reads: FileLedger | None = None
    """The agent's record of what it read: an attached file counts as read (Edit's stale check)."""
    char_limit: int = 100_000
    """The most characters one file's attachment may take (a tool result's share of the window)."""
    images: bool = False
    """The model takes images (`images = true`): an image file goes as one."""

    def exists(self, path: str) -> bool:
        try:
            return os.path.lexists(self._full(path))
        except ValueError:  # a NUL byte
            return False

    def _full(self, path: str) -> Path:
        candidate = Path(os.path.expanduser(path))
        return candidate if candidate.is_absolute() else self.workspace / candidate

    def attach_all(self, text: str) -> list[Attachment]:
        return [taken.attachment for taken in self.take_all(text)]

    def take_all(self, text: str) -> list[Taken]:
        taken: list[Taken] = []
        for mention in find_mentions(text, self.exists):
            room = MAX_IMAGES - sum(item.image is not None for item in taken)
            taken.append(self.take(mention, room > 0))
        return taken

    def attach(self, mention: Mention) -> Attachment:
        return self.take(mention).attachment

    def take(self, mention: Mention, image_room: bool = True) -> Taken:
        """`image_room`: another image may go with this prompt (at most `MAX_IMAGES`)."""
        full = self._full(mention.path)
        real = Path(os.path.realpath(full))
        try:
            relative = real.relative_to(os.path.realpath(self.workspace)).as_posix()
        except ValueError:
            return Taken(Attachment(mention.path, note="not attached: it is outside the workspace"))
        is_dir = real.is_dir()
        shown = (relative if relative != "." else "") + ("/" if is_dir else "") or "./"
        if self.read_denied(str(real)):
            return Taken(Attachment(shown, note="not attached: a deny rule on reading covers it"))
        try:
            if is_dir:
                listing, count = _listing(real, self.read_denied)
                return Taken(Attachment(shown, f"{count} entr{'y' if count == 1 else 'ies'}", listing))
            if (image := read_image(real, shown, named=named_as_image(full))) is not None:
                return self._image(image, real, shown, image_room)
            return Taken(self._file(real, shown, mention.lines))
        except ToolError as exc:
            return Taken(Attachment(shown, note=f"not attached: {exc}"))

    def _image(self, image: ImageFile, path: Path, shown: str, room: bool) -> Taken:
        if not self.images:
            return Taken(Attachment(shown, note=NO_IMAGES))
        if too_big := image.too_big():
            return Taken(Attachment(shown, note=f"not attached: {too_big}"))
        if not room:
            return Taken(Attachment(shown, note=f"not attached: at most {MAX_IMAGES} images go with one prompt"))
        if self.reads is not None:
            self.reads.saw_digest(path, image.digest())
        return Taken(Attachment(shown, image.label(), mime=image.mime), image)

    def _file(self, path: Path, shown: str, lines: tuple[int, int | None] | None) -> Attachment:
        first, last = lines if lines is not None else (1, None)
        first = max(first, 1)
        if last is not None and last < first:
            return Attachment(shown, note=f"not attached: the range {first}-{last} ends before it starts")
        wanted = DEFAULT_LIMIT if last is None else last - first + 1
        numbered, total = read_window(path, shown, first, min(wanted, DEFAULT_LIMIT), self.reads)
        if total == 0:
            return Attachment(shown, "empty", "(empty file)")
        if first > total:
            return Attachment(shown, note=f"not attached: line {first} is past its end ({plural(total, 'line')})")
        if lines is None and total > DEFAULT_LIMIT:
            return Attachment(
                shown,
                note=f"not attached: {plural(total, 'line')} is more than the {DEFAULT_LIMIT:,} a Read shows; "
                f"attach a range (@{shown}:1-{DEFAULT_LIMIT // 4}) or ask for the part you need",
            )
        if wanted > DEFAULT_LIMIT:
            return Attachment(
                shown, note=f"not attached: a range of more than {DEFAULT_LIMIT:,} lines; attach a smaller one"
            )
        content = "\n".join(numbered)
        if len(content) > self.char_limit:
            return Attachment(
                shown,
                note=f"not attached: {len(content):,} characters is more than one attachment may take "
                f"({self.char_limit:,} here); attach a range of lines",
            )
        shown_last = first + len(numbered) - 1
        summary = plural(total, "line") if lines is None else f"lines {first}-{shown_last} of {total}"
        return Attachment(shown, summary, content)


def attachment_message(attachments: list[Attachment]) -> str:
    """The user message that carries `attachments` (and the notes) to the model; "" for none."""
    if not attachments:
        return ""
    parts = [OPEN, _INTRO]
    for item in attachments:
        path = html.escape(item.path)
        if item.note:
            parts.append(f'<attachment-note path="{path}">{html.escape(item.note)}</attachment-note>')
        elif item.mime:
            parts.append(_image_element(item))
        else:
            summary = html.escape(item.summary)
            parts.append(f'<attachment path="{path}" summary="{summary}">\n{item.content}\n</attachment>')
    parts.append(CLOSE)
    return "\n".join(parts)


def _image_element(item: Attachment) -> str:
    path, mime, summary = (html.escape(value) for value in (item.path, item.mime, item.summary))
    return f'<attachment-image path="{path}" type="{mime}" summary="{summary}"/>'


def attachment_content(taken: Sequence[Taken]) -> str | list[dict[str, Any]]:
    """The content of the user message that carries `taken`: `attachment_message`'s text,
    or with images a content list, each image's part right after its line."""
    text = attachment_message([item.attachment for item in taken])
    parts: list[dict[str, Any]] = []
    rest = text
    for item in taken:
        if item.image is None:
            continue
        line = _image_element(item.attachment) + "\n"
        before, _, rest = rest.partition(line)
        parts += [{"type": "text", "text": before + line}, item.image.part()]
    return [*parts, {"type": "text", "text": rest}] if parts else text


def parse_attachment_message(text: str) -> list[Attachment] | None:
    """The attachments of a message `attachment_message` made; None for any other message."""
    if not text.startswith(OPEN + "\n") or not text.rstrip().endswith(CLOSE):
        return None
    found: list[Attachment] = []
    for match in _ELEMENT.finditer(text):
        if match["note"] is not None:
            found.append(Attachment(html.unescape(match["npath"]), note=html.unescape(match["note"])))
        elif match["mime"] is not None:
            path, summary, mime = (html.unescape(match[key]) for key in ("ipath", "isummary", "mime"))
            found.append(Attachment(path, summary, mime=mime))
        else:
            body = match["body"].removesuffix("\n")
            found.append(Attachment(html.unescape(match["path"]), html.unescape(match["summary"]), body))
    return found
