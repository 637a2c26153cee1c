"""Images an MCP tool returns, shown to a model that accepts images.

A tool result is text, so a call's images reach the model as a placeholder there
(`results.py`) and, when the `images` setting says the model accepts images, whole in a
user message right after the batch's results: a `before_request` provider appends it (the
results of one response must stay together, so nothing can go between them). Its text is
a `<system-reminder>`, so the app does not draw it as the person's prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..tasks.reminders import CLOSE_TAG, OPEN_TAG

MAX_IMAGES = 5
"""Images one message carries at most (the others keep only their placeholder)."""
MAX_IMAGE_BYTES = 4_000_000
"""A larger image keeps only its placeholder (servers cap an image at about 5–20 MB)."""


@dataclass(frozen=True)
class Image:
    tool: str
    call_id: str
    mime: str
    data: str
    """Base64."""
    size: int


def fits(image: Image) -> bool:
    return image.size <= MAX_IMAGE_BYTES and image.mime.startswith("image/")


Message = dict[str, Any]


def images_provider(pending: list[Image]) -> Callable[[Sequence[Message]], list[Message]]:
    """The `before_request` provider: a user message with the images waiting, once."""

    def provide(history: Sequence[Message]) -> list[Message]:
        if not pending:
            return []
        chosen, pending[:] = pending[:MAX_IMAGES], []
        names = ", ".join(dict.fromkeys(f"{image.tool} ({image.call_id})" for image in chosen))
        parts: list[dict[str, Any]] = [
            {"type": "text", "text": f"{OPEN_TAG}The images that {names} returned, in order.{CLOSE_TAG}"}
        ]
        parts += [
            {"type": "image_url", "image_url": {"url": f"data:{image.mime};base64,{image.data}"}} for image in chosen
        ]
        return [{"role": "user", "content": parts}]

    return provide
