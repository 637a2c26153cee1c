"""Images a tool returns (Read on an image file, an MCP tool's), shown to a model that
takes images (`images = true`), and reading an image file.

A tool result is text, so a call's image waits in its agent's queue (`ToolContext.images`;
None when the model takes none, and the result says what the file is instead) and goes
whole in a user message right after the batch's results: a `before_request` provider
appends it (`images_provider`; the results of one response must stay together, so nothing
can go between them). Its text is a `<system-reminder>`, so the app does not draw it as
the person's prompt. An image the model's server refuses all the same (HTTP 400) is taken
out of the history by the loop (`without_images` in `core/model/history.py`).

`read_image` is how Read and `@` attachments read one: a regular file only (never a FIFO
or a device), at most `MAX_IMAGE_BYTES` and one byte read, in the callers' worker thread.
Its bytes decide its type (`core/model/images.py`): a `.png` that is a JPEG goes as
`image/jpeg`, one whose header is not valid goes not at all.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.images import (
    MAX_IMAGE_BYTES,
    MAX_IMAGES,
    SUFFIXES,
    Header,
    NotAnImage,
    describe,
    encoded,
    image_part,
    kind_of,
    read_header,
    size_text,
)
from ..tasks.reminders import CLOSE_TAG, OPEN_TAG
from .fs import open_regular
from .ledger import FileLedger
from .results import ToolError

Message = dict[str, Any]
_SNIFF = 16
"""Bytes that tell an image from any other file (`kind_of`)."""


@dataclass(frozen=True)
class Image:
    """An image a tool call returned, waiting for the next request."""

    tool: str
    call_id: str
    mime: str
    data: str
    """Base64."""
    size: int


def images_provider(pending: list[Image]) -> Callable[[Sequence[Message]], list[Message]]:
    """The `before_request` provider: a user message with the images waiting, once (at
    most `MAX_IMAGES`; the others keep only their result's line)."""

    def provide(history: Sequence[Message]) -> list[Message]:
        if not pending:
            return []
        chosen, pending[:] = pending[:MAX_IMAGES], []
        names = ", ".join(dict.fromkeys(f"{image.tool} ({image.call_id})" for image in chosen))
        parts: list[dict[str, Any]] = [
            {"type": "text", "text": f"{OPEN_TAG}The images that {names} returned, in order.{CLOSE_TAG}"}
        ]
        parts += [image_part(image.mime, image.data) for image in chosen]
        return [{"role": "user", "content": parts}]

    return provide


@dataclass(frozen=True)
class ImageFile:
    """An image file as read: its header, its size, and its bytes when it may be sent."""

    header: Header
    size: int
    data: bytes
    """The whole file; empty when it is larger than `MAX_IMAGE_BYTES` (then it is not sent)."""

    @property
    def mime(self) -> str:
        return self.header.mime

    def description(self) -> str:
        """`image/png 1280×720, 210 KB`."""
        return describe(self.header, self.size)

    def label(self) -> str:
        """`1280×720 · 210 KB`: the line the person sees beside its name."""
        return f"{self.header.width}×{self.header.height} · {size_text(self.size)}"

    def too_big(self) -> str:
        """Why it is not sent for its size, or ""."""
        if self.size <= MAX_IMAGE_BYTES:
            return ""
        return f"{self.size:,} bytes, more than the {MAX_IMAGE_BYTES:,} an image may be"

    def digest(self) -> str:
        """What the file ledger keeps of a file read (`ledger.py`)."""
        return hashlib.sha256(self.data).hexdigest()

    def part(self) -> dict[str, Any]:
        return image_part(self.mime, encoded(self.data))

    def pending(self, tool: str, call_id: str) -> Image:
        return Image(tool, call_id, self.mime, encoded(self.data), self.size)


def read_image(path: Path, shown: str, *, named: bool, ledger: FileLedger | None = None) -> ImageFile | None:
    """The image in the file at `path`, or None when its bytes are no image and it is not
    `named` as one (`.png`, `.jpg`: the person asked for an image); `ToolError` for what it
    cannot be (missing, not a regular file, unreadable, an image's name on other bytes, a
    header that is not valid). `ledger` learns what was read (an image counts as read)."""
    opened = open_regular(path, shown)
    if opened is None:
        raise ToolError(f"File does not exist: {shown}")
    try:
        with opened as f:
            data = f.read(_SNIFF)
            if kind_of(data) is None:  # any other file: only its first bytes are read
                if named:
                    raise ToolError(f"{shown} is not an image: its bytes are no PNG, JPEG, GIF or WebP image")
                return None
            size = os.fstat(f.fileno()).st_size
            data += f.read(MAX_IMAGE_BYTES + 1 - len(data))
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from exc
    try:
        header = read_header(data)
    except NotAnImage as exc:
        raise ToolError(f"{shown} is not a valid image: {exc}") from None
    if len(data) > MAX_IMAGE_BYTES:
        return ImageFile(header, max(size, len(data)), b"")
    image = ImageFile(header, len(data), data)
    if ledger is not None:
        ledger.saw_digest(path, image.digest())
    return image


def named_as_image(path: Path | str) -> bool:
    """Whether the file's name says it is an image (`.png`, `.jpg`, `.jpeg`, `.gif`, `.webp`)."""
    return os.path.splitext(str(path))[1].lower() in SUFFIXES
