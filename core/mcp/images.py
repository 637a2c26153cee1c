"""Images an MCP tool returns, checked before they are shown to a model that accepts images.

A tool result is text, so a call's images reach the model as a placeholder there
(`results.py`) and, when the model takes images, whole in a user message right after the
batch's results, as every tool's image does (`core/tools/images.py`: the queue and its
`before_request` provider).

Each image is checked first (`refusal`): one of the four types a model reads, valid base64,
and bytes that are the type it claims; any other stays a one-line note in the result. An
image the model's server refuses all the same (HTTP 400) is taken out of the history by
the loop (`without_images` in `core/model/history.py`), so the session goes on.
"""

from __future__ import annotations

import binascii

from ..model.images import MAX_IMAGE_BYTES, kind_of
from ..tools.images import Image

_KINDS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/jpg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}
"""The types a model reads (OpenAI's, and what vision servers decode), by the MIME type claimed."""


def refusal(image: Image) -> str | None:
    """Why `image` is not sent to the model, in one line, or None when it may be: a server
    that claims `image/png` for bytes that are not one (or sends broken base64) would have
    the model's server refuse every request that carries it."""
    claimed = _KINDS.get(image.mime.lower())
    if claimed is None:
        return f"{image.mime or 'no type'} is not a type the model reads (PNG, JPEG, GIF, WebP)"
    if image.size > MAX_IMAGE_BYTES:
        return f"{image.size:,} bytes, more than the {MAX_IMAGE_BYTES:,} sent at most"
    try:
        data = binascii.a2b_base64(image.data, strict_mode=True)
    except (binascii.Error, ValueError):
        return "its data is not valid base64"
    if (found := kind_of(data)) != claimed:
        return f"it claims {image.mime} but its bytes are {f'a {found}' if found else 'no image of a known type'}"
    return None


def accepted(images: list[Image]) -> tuple[list[Image], list[str]]:
    """The images that may be sent (as JPEG's `image/jpg` alias: `image/jpeg`), and a
    one-line note for each other one, for the call's result."""
    sent, notes = [], []
    for number, image in enumerate(images, start=1):
        if (why := refusal(image)) is None:
            mime = "image/jpeg" if image.mime.lower() == "image/jpg" else image.mime.lower()
            sent.append(Image(image.tool, image.call_id, mime, image.data, image.size))
        else:
            which = f"image {number}" if len(images) > 1 else "the image"
            notes.append(f"[{which} is not shown to the model: {why}]")
    return sent, notes
