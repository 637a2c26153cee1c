"""Keeping chat history valid for the API, whatever happened to it."""

from __future__ import annotations

from collections.abc import Sequence

from .model import Message

CANCELLED = "cancelled: the turn was interrupted before this call finished"


def unanswered_tool_calls(history: Sequence[Message]) -> list[str]:
    """Ids of tool calls in the last assistant message that have no `tool` reply yet."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.get("role") == "assistant":
            if not message.get("tool_calls"):
                return []
            answered = {m.get("tool_call_id") for m in history[index + 1 :] if m.get("role") == "tool"}
            return [c["id"] for c in message["tool_calls"] if c.get("id") not in answered]
        if message.get("role") == "user":
            return []
    return []


def missing_replies(history: Sequence[Message], text: str = CANCELLED) -> list[Message]:
    """`tool` replies that make the history valid again (for cancellations and crashes)."""
    return [{"role": "tool", "tool_call_id": call_id, "content": text} for call_id in unanswered_tool_calls(history)]
