"""A `<think>…</think>` at the start of an answer's content, told apart from the answer.

A server that does not parse a reasoning model's output itself (llama.cpp without
`--reasoning-format`, a plain vLLM, a proxy) streams the thought inside `content`,
opened by `<think>`. Only a tag that opens the content counts (after whitespace): a
`<think>` later in an answer is the answer's own text, code about tags included. The tags
may arrive cut anywhere across chunks; each piece is handed on as soon as it cannot be
part of a tag, so the thought streams as it comes.
"""

from __future__ import annotations

from typing import Literal

OPEN = "<think>"
CLOSE = "</think>"


class ThinkSplitter:
    """Feeds content deltas in, gives (thought, answer) pieces out."""

    def __init__(self) -> None:
        self._state: Literal["start", "in", "after", "out"] = "start"
        self._held = ""

    def feed(self, text: str) -> tuple[str, str]:
        """(thought, answer) of this delta, as far as they can be told apart yet."""
        if self._state == "out" or not text:
            return "", text
        if self._state == "start":
            self._held += text
            begun = self._held.lstrip()
            if begun.startswith(OPEN):
                self._state, self._held = "in", ""
                return self._inside(begun[len(OPEN) :])
            if not begun or OPEN.startswith(begun):
                return "", ""  # nothing yet, or what may still become the tag
            self._state, text, self._held = "out", self._held, ""
            return "", text
        if self._state == "in":
            return self._inside(text)
        return "", self._after(text)

    def close(self) -> tuple[str, str]:
        """What was held at the end: a thought never closed (cut at the output limit) is all thought."""
        held, self._held = self._held, ""
        if self._state == "in":
            return held, ""
        return "", held if self._state == "start" else ""

    def _inside(self, text: str) -> tuple[str, str]:
        text = self._held + text
        end = text.find(CLOSE)
        if end >= 0:
            self._state, self._held = "after", ""
            return text[:end], self._after(text[end + len(CLOSE) :])
        keep = next((n for n in range(min(len(CLOSE) - 1, len(text)), 0, -1) if CLOSE.startswith(text[-n:])), 0)
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep], ""

    def _after(self, text: str) -> str:
        """The answer after the thought, without the blank lines that separate them."""
        text = text.lstrip()
        if text:
            self._state = "out"
        return text
