"""Keeping chat history valid for the API, whatever happened to it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .base import REASONING_FIELD, REASONING_ITEMS, Message, ModelResponse, ToolCall
from .images import is_image_part

CANCELLED = "cancelled: the turn was interrupted before this call finished"


def strict_json(text: str) -> Any:
    """`json.loads` without Python's extensions: NaN and Infinity are not JSON, and a
    history or an event line holding them is rejected by strict parsers and servers."""

    def reject(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    try:
        return json.loads(text, parse_constant=reject, parse_int=_bounded_int)
    except RecursionError:
        raise ValueError("it is nested too deeply") from None


_INT_DIGITS = 4000
"""Python refuses to convert longer integer strings (a DoS guard since 3.11)."""


def _bounded_int(text: str) -> int | str:
    """A JSON integer, or its digits as text when it is too long to be any real count or
    id: the tool then says the value is no task / too large, instead of the parser failing."""
    return int(text) if len(text) <= _INT_DIGITS else text


IMAGE_REFUSALS = frozenset({400, 413, 422})
"""The statuses a server answers a request with an image it will not take (a broken one,
too large, or a model that reads none)."""
IMAGE_DROPPED = (
    "[an image was here: the model's server refused a request that carried it (HTTP {status}), so it was dropped]"
)


def without_images(history: Sequence[Message], status: int | None) -> list[Message] | None:
    """`history` with every image part of its messages replaced by a line saying why, when
    the server refused it with `status` (one of `IMAGE_REFUSALS`); None when it holds no
    image or the refusal was of another kind. The other messages are the same objects."""
    if status not in IMAGE_REFUSALS:
        return None
    note = {"type": "text", "text": IMAGE_DROPPED.format(status=status)}
    bare: list[Message] = []
    for message in history:
        content = message.get("content")
        if isinstance(content, list) and any(is_image_part(part) for part in content):
            bare.append({**message, "content": [note if is_image_part(part) else part for part in content]})
        else:
            bare.append(message)
    return bare if any(a is not b for a, b in zip(bare, history, strict=True)) else None


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


def repair_history(history: Sequence[Message]) -> tuple[list[Message], list[str]]:
    """A copy of `history` that the API accepts, and what was changed to get there.

    Every assistant tool call gets a reply right after its message (missing ones are
    answered `cancelled`); `tool` messages that answer no pending call (orphans left by
    a damaged file, duplicates) are dropped; tool-call arguments that are not valid JSON
    (a cut-off call stored by an older version) become `{}`, since servers answer HTTP
    500 to every request that replays them. Used when a session is loaded.
    """
    repaired: list[Message] = []
    notes: list[str] = []
    pending: list[str] = []

    def close_pending() -> None:
        if pending:
            notes.append(f"{len(pending)} tool call(s) had no result; marked cancelled")
            repaired.extend({"role": "tool", "tool_call_id": call_id, "content": CANCELLED} for call_id in pending)
            pending.clear()

    for message in history:
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id in pending:
                pending.remove(call_id)
                repaired.append(message)
            else:
                notes.append(f"dropped a tool result that answers no pending call ({call_id!r})")
            continue
        close_pending()
        fixed = _with_valid_arguments(message) if message.get("role") == "assistant" else message
        if fixed is not message:
            notes.append("invalid tool-call arguments replaced by {}")
        repaired.append(fixed)
        if fixed.get("role") == "assistant":
            pending.extend(str(c.get("id")) for c in fixed.get("tool_calls") or [] if isinstance(c, dict))
    close_pending()
    return repaired, notes


def _with_valid_arguments(message: Message) -> Message:
    """`message` itself, or a copy whose tool calls all carry valid JSON arguments."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or all(_valid_arguments(c) for c in calls):
        return message
    fixed = [
        c if _valid_arguments(c) else {**c, "function": {**(c.get("function") or {}), "arguments": "{}"}} for c in calls
    ]
    return {**message, "tool_calls": fixed}


def _valid_arguments(call: object) -> bool:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return True  # not a shape this can fix; left to the server to judge
    arguments = call["function"].get("arguments")
    if not isinstance(arguments, str):
        return False
    try:
        strict_json(arguments)
    except ValueError:  # JSONDecodeError too; NaN and Infinity are not JSON either
        return False
    return True


def assistant_message(history: Sequence[Message], response: ModelResponse) -> tuple[Message, list[ToolCall]]:
    """The message to append for `response`, and its tool calls as the batch runs them.

    Ids must be unique across the whole history: servers that send none get ids from a
    per-process counter, so a resumed session would repeat call_1, call_2, … A repeated or
    missing id is replaced. Servers answer HTTP 500 to a history holding invalid JSON
    arguments, so a call whose arguments do not parse is stored as `{}` (the batch answers
    it with an error).
    """
    seen = {str(c.get("id")) for m in history if m.get("role") == "assistant" for c in m.get("tool_calls") or []}
    calls: list[ToolCall] = []
    for n, call in enumerate(response.tool_calls, start=1):
        call_id = call.id if call.id and call.id not in seen else f"call_{len(history)}_{n}"
        seen.add(call_id)
        calls.append(ToolCall(call_id, call.name, call.arguments))
    message: Message = {"role": "assistant", "content": response.content or (None if calls else "")}
    if response.reasoning:  # kept whole in the record; what is sent again is the client's call
        message[response.reasoning_field or REASONING_FIELD] = response.reasoning
    if response.reasoning_items:  # the Responses API's encrypted thought, to send back with the calls
        message[REASONING_ITEMS] = list(response.reasoning_items)
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": _storable(c.arguments)},
            }
            for c in calls
        ]
    return message, calls


def _storable(raw: str) -> str:
    try:
        strict_json(raw or "{}")
    except ValueError:  # includes JSONDecodeError; NaN/Infinity are not JSON either
        return "{}"
    return raw or "{}"


def cut_arguments(raw: str, limit: int) -> str:
    """Tool-call arguments (valid JSON) as they are kept in history: whole when they fit
    `limit` characters, else with their long strings cut in the middle, saying so. The tool
    got them whole; what the model sent once (a 1 MB "subject", a huge file it wrote) must
    not ride along in every later request. Still valid JSON, with the same keys."""
    if len(raw) <= limit:
        return raw
    try:
        value = strict_json(raw)
    except ValueError:
        return "{}"
    strings = _long_strings(value)
    if not strings:  # huge only by its structure (thousands of keys or items): nothing to cut well
        return json.dumps({"_note": f"{len(raw):,} characters of arguments, not kept in the history"})
    keep = max(200, limit // (2 * len(strings)))

    def cut(node: Any) -> Any:
        if isinstance(node, str) and len(node) > keep:
            head = keep * 2 // 3
            note = f" [… {len(node) - keep:,} characters not kept in the history …] "
            return node[:head] + note + node[len(node) - (keep - head) :]
        if isinstance(node, dict):
            return {k: cut(v) for k, v in node.items()}
        if isinstance(node, list):
            return [cut(v) for v in node]
        return node

    return json.dumps(cut(value), ensure_ascii=False)


def _long_strings(node: Any, floor: int = 200) -> list[str]:
    if isinstance(node, str):
        return [node] if len(node) > floor else []
    if isinstance(node, dict):
        return [s for v in node.values() for s in _long_strings(v, floor)]
    if isinstance(node, list):
        return [s for v in node for s in _long_strings(v, floor)]
    return []
