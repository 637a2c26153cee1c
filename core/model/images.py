"""Images in a message: the four types a model reads, known by their bytes, and the part
that carries one.

PNG, JPEG, GIF and WebP, told apart by their first bytes (never by a file's name), their
width and height read from their headers with the stdlib (nothing is decoded: a header
that is not valid for its type is reason enough to send nothing). An image goes to the
model as a content part in OpenAI's chat format,
`{"type": "image_url", "image_url": {"url": "data:image/png;base64,…"}}`.

In the window an image part counts `IMAGE_TOKENS`, whatever its size (`core/window/tokens.py`).
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass
from typing import Any, Literal

MAX_IMAGE_BYTES = 4_000_000
"""A larger image is not sent (servers cap an image at about 5–20 MB): an MCP tool's, an
`@` file's, a Read's."""
MAX_IMAGES = 5
"""Images one message carries at most."""
IMAGE_TOKENS = 765
"""What one image is taken to cost of the window. OpenAI documents 85 tokens for an image
at low detail and 85 + 170 a 512-pixel tile at high detail, 765 for a 1024×1024 image;
the part is sent at the default detail (`auto`: high for a screenshot, 1,105 tokens at
1280×720), other servers count 256 to 1,200 or so. 765 errs neither as far low as 85
would, nor as far high as the base64 would (a 210 KB PNG is 280,000 characters)."""

TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WebP": "image/webp"}
"""The types a model reads (OpenAI's, and what vision servers decode), by name."""
SUFFIXES = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".gif": "GIF", ".webp": "WebP"}
"""The names that say a file is an image (its bytes decide which type it is)."""

_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
"""Start-of-frame markers (baseline, progressive, lossless…): the segment with the size."""


def kind_of(data: bytes) -> str | None:
    """`PNG`, `JPEG`, `GIF` or `WebP` by the first bytes of `data`; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "GIF"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WebP"
    return None


class NotAnImage(ValueError):
    """The bytes are no image of a type a model reads; the message says why, in a few words."""


@dataclass(frozen=True)
class Header:
    kind: str
    """`PNG`, `JPEG`, `GIF`, `WebP`."""
    width: int
    height: int

    @property
    def mime(self) -> str:
        return TYPES[self.kind]


def read_header(data: bytes) -> Header:
    """The type and size of the image `data` starts with; `NotAnImage` when its first
    bytes are no known type, or its header is not a valid one of the type they say."""
    kind = kind_of(data)
    if kind is None:
        raise NotAnImage("its bytes are no PNG, JPEG, GIF or WebP image")
    width, height = {"PNG": _png, "JPEG": _jpeg, "GIF": _gif, "WebP": _webp}[kind](data)
    if width <= 0 or height <= 0:
        raise NotAnImage(f"its {kind} header says it is {width}×{height}")
    return Header(kind, width, height)


def _u16(data: bytes, at: int, order: Literal["little", "big"] = "little") -> int:
    return int.from_bytes(data[at : at + 2], order)


def _png(data: bytes) -> tuple[int, int]:
    # The signature, then the IHDR chunk: length 13, type, width, height, …, its CRC.
    if len(data) < 33 or data[8:16] != b"\x00\x00\x00\x0dIHDR":
        raise NotAnImage("its PNG header is missing or cut short")
    if zlib.crc32(data[12:29]) != int.from_bytes(data[29:33], "big"):
        raise NotAnImage("its PNG header is damaged (its checksum does not match)")
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _jpeg(data: bytes) -> tuple[int, int]:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            raise NotAnImage("its JPEG segments are damaged")
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
        elif marker == 0x01 or 0xD0 <= marker <= 0xD7:  # markers that carry no length
            at += 2
        elif marker in (0xD9, 0xDA):  # the end, or the scan, before any frame header
            break
        elif marker in _JPEG_FRAMES:
            if at + 9 > len(data):
                break
            return _u16(data, at + 7, "big"), _u16(data, at + 5, "big")
        else:
            length = _u16(data, at + 2, "big")
            if length < 2:
                raise NotAnImage("its JPEG segments are damaged")
            at += 2 + length
    raise NotAnImage("its JPEG frame header is missing or cut short")


def _gif(data: bytes) -> tuple[int, int]:
    if len(data) < 13:
        raise NotAnImage("its GIF header is cut short")
    return _u16(data, 6), _u16(data, 8)


def _webp(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if len(data) < 30:
        raise NotAnImage("its WebP header is cut short")
    if chunk == b"VP8 ":  # lossy: a frame tag, the start code, 14-bit sizes
        if data[23:26] != b"\x9d\x01\x2a":
            raise NotAnImage("its WebP (VP8) header is damaged")
        return _u16(data, 26) & 0x3FFF, _u16(data, 28) & 0x3FFF
    if chunk == b"VP8L":  # lossless: a signature byte, then 14 bits each of width-1, height-1
        if data[20] != 0x2F:
            raise NotAnImage("its WebP (VP8L) header is damaged")
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended: flags, then 24 bits each of width-1, height-1
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    raise NotAnImage("its WebP header has no image chunk")


def size_text(size: int) -> str:
    """`210 KB`, `3.2 MB`, `512 bytes` (decimal, as the 4 MB limit is)."""
    if size < 1000:
        return f"{size} byte{'' if size == 1 else 's'}"
    if size < 1_000_000:
        return f"{round(size / 1000)} KB"
    return f"{size / 1_000_000:.1f} MB"


def describe(header: Header, size: int) -> str:
    """`image/png 1280×720, 210 KB`: an image in one line, for the model."""
    return f"{header.mime} {header.width}×{header.height}, {size_text(size)}"


def image_part(mime: str, data: str) -> dict[str, Any]:
    """The content part that carries an image (`data` in base64)."""
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def encoded(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def is_image_part(part: object) -> bool:
    """An image in a content list: chat completions' `image_url`, the Responses API's `input_image`."""
    return isinstance(part, dict) and part.get("type") in ("image_url", "input_image")
