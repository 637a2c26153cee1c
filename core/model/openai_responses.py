"""`OpenAIResponsesModel`: OpenAI's Responses API (`POST /responses`) over real HTTP, streamed.

The same `ChatModel` seam and the same events as chat completions: the history (chat
messages, as the session keeps it) becomes Responses input items on the way out, and the
server's typed stream events become text deltas, `Reasoning` pieces and one
`ModelResponse`. Everything else (the HTTP client, failures as one-line `ModelError`s,
busy-server retries, a prompt refused as too long, the output limit) is the chat
client's (`openai_chat.py`), which this class extends.

Nothing is kept on the server: requests go with `store: false`, and a reasoning model is
asked for its reasoning encrypted (`include: ["reasoning.encrypted_content"]`). The
reasoning items a response returns are kept on its message (`REASONING_ITEMS`) and sent
back with it while it made tool calls, as a chat message's reasoning is, so the model
keeps its thought across a call with no state on the server. A server that refuses
`include`, `store` or `reasoning` is asked again without it, once, and that is remembered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import openai

from .base import (
    REASONING_ITEMS,
    ContextOverflowError,
    Message,
    ModelError,
    ModelResponse,
    ModelUsage,
    Reasoning,
    ToolCall,
    content_text,
    valid_json,
    valid_text,
)
from .openai_chat import OpenAIChatModel, _Assembler, _ChunkStream, _count, _detail_count, _whole_pairs

ENCRYPTED = "reasoning.encrypted_content"


class OpenAIResponsesModel(OpenAIChatModel):
    """A `ChatModel` that speaks the Responses API (`wire_api = "responses"`)."""

    def __init__(self, **settings: Any) -> None:
        settings["wire_api"] = "responses"
        super().__init__(**settings)
        self._token_param = "max_output_tokens"
        self._send_include = True
        self._send_store = True
        self._send_reasoning_param = True
        """`reasoning: {summary, effort}`: models that do not reason refuse it."""

    def learned(self) -> dict[str, Any]:
        facts = super().learned()
        facts.pop("token_param", None)
        facts.update(
            {
                key: False
                for key, sent in (
                    ("include", self._send_include),
                    ("store", self._send_store),
                    ("reasoning_param", self._send_reasoning_param),
                )
                if not sent
            }
        )
        if self._token_param is None:
            facts["output_limit"] = False
        return facts

    def learn(self, facts: dict[str, Any]) -> None:
        self._send_include = facts.get("include") is not False and self._send_include
        self._send_store = facts.get("store") is not False and self._send_store
        self._send_reasoning_param = facts.get("reasoning_param") is not False and self._send_reasoning_param
        self._send_effort = facts.get("effort") is not False and self._send_effort
        self._send_reasoning = facts.get("reasoning_replay") is not False and self._send_reasoning
        if facts.get("output_limit") is False:
            self._token_param = None

    def _assembler(self) -> _Assembler:
        return _ResponsesAssembler()  # type: ignore[return-value]

    def _adapt(self, exc: openai.APIError) -> bool:
        text = f"{exc.message} {exc.body}".lower()
        if self._send_include and ("include" in text or "encrypted_content" in text):
            self._send_include = False
            self._note("the server does not take include (reasoning.encrypted_content): asked without it")
            return True
        if self._effort and self._send_effort and "effort" in text:
            self._send_effort = False
            self._note(f"the server does not take reasoning.effort: {self._model} is asked without it")
            return True
        if self._send_reasoning_param and "reasoning" in text and "reasoning_items" not in text:
            self._send_reasoning_param = False  # a model that does not reason
            return True
        if self._send_store and "store" in text:
            self._send_store = False
            self._note("the server does not take store: false (it may keep the requests it is sent)")
            return True
        if self._send_reasoning and "reasoning" in text:
            self._send_reasoning = False
            self._note("the server does not take reasoning items back: they are no longer sent")
            return True
        if self._token_param is not None and self._token_param in text:
            self._token_param = None
            return True
        return False

    async def _create(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], max_tokens: int | None
    ) -> _ChunkStream:
        instructions, items = request_input(messages, replay=self._send_reasoning)
        body: dict[str, object] = {"model": self._model, "input": valid_json(items), "stream": True}
        if instructions:
            body["instructions"] = valid_json(instructions)
        if tools:
            body["tools"] = valid_json([function_tool(t) for t in tools])
        if self._send_store:
            body["store"] = False
        if self._send_include and self._send_reasoning_param:
            body["include"] = [ENCRYPTED]
        if self._send_reasoning_param:
            reasoning: dict[str, str] = {"summary": "auto"}
            if self._effort and self._send_effort:
                reasoning["effort"] = self._effort
            body["reasoning"] = reasoning
        if max_tokens and self._token_param is not None:
            body[self._token_param] = max_tokens
        return await self._client.post("/responses", body=body, cast_to=object, stream=True, stream_cls=_ChunkStream)


def function_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions tool schema (`{"type": "function", "function": {...}}`) as the
    Responses API names it (the function's fields one level up)."""
    function = schema.get("function", schema)
    tool = {"type": "function", "name": function.get("name", ""), "parameters": function.get("parameters", {})}
    if function.get("description"):
        tool["description"] = function["description"]
    return tool


def request_input(messages: Sequence[Message], *, replay: bool = True) -> tuple[str, list[dict[str, Any]]]:
    """The history as Responses input: the system messages joined as `instructions`, then
    one item per message, tool call and tool result. An assistant message that made calls
    brings its reasoning items back first (`replay`)."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            instructions.append(content_text(message.get("content")))
        elif role == "user":
            items.append({"role": "user", "content": _user_content(message.get("content"))})
        elif role == "assistant":
            items.extend(_assistant_items(message, replay))
        elif role == "tool":
            call_id, output = str(message.get("tool_call_id", "")), content_text(message.get("content"))
            items.append({"type": "function_call_output", "call_id": call_id, "output": output})
    return "\n\n".join(i for i in instructions if i), items


def _user_content(content: Any) -> str | list[dict[str, Any]]:
    if not isinstance(content, list):
        return content_text(content)
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            parts.append({"type": "input_text", "text": str(part.get("text", ""))})
        elif part.get("type") == "image_url" and isinstance(part.get("image_url"), dict):
            parts.append({"type": "input_image", "image_url": str(part["image_url"].get("url", ""))})
    return parts


def _assistant_items(message: Message, replay: bool) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    calls = message.get("tool_calls") or []
    kept = message.get(REASONING_ITEMS)
    if replay and calls and isinstance(kept, list):
        items.extend(item for item in kept if isinstance(item, dict) and item.get("type") == "reasoning")
    text = content_text(message.get("content"))
    if text:
        items.append({"role": "assistant", "content": text})
    for call in calls:
        function = call.get("function") or {}
        items.append(
            {
                "type": "function_call",
                "call_id": str(call.get("id", "")),
                "name": str(function.get("name", "")),
                "arguments": str(function.get("arguments") or "{}"),
            }
        )
    return items


class _ResponsesAssembler:
    """Accumulates one streamed Responses answer from its typed events."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.items: list[dict[str, Any]] = []
        self.calls: dict[int, dict[str, str]] = {}
        """Function calls by output index: call_id, name, arguments (so far)."""
        self.finish_reason: str | None = None
        self.usage: ModelUsage | None = None
        self._held = ""
        self._held_reasoning = ""
        self._summary_parts: set[tuple[int, int]] = set()

    def feed(self, event: object) -> list[str | Reasoning]:
        if not isinstance(event, dict):
            return []
        kind = event.get("type")
        if kind == "response.output_text.delta":
            text, self._held = _whole_pairs(self._held + _str(event.get("delta")))
            if text:
                self.text.append(text)
                return [text]
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._reason(event)
        elif kind in ("response.output_item.added", "response.output_item.done"):
            self._item(event, done=kind.endswith("done"))
        elif kind == "response.function_call_arguments.delta":
            call = self.calls.get(_index(event))
            if call is not None:
                call["arguments"] += _str(event.get("delta"))
        elif kind == "response.function_call_arguments.done":
            call = self.calls.get(_index(event))
            if call is not None and isinstance(event.get("arguments"), str):
                call["arguments"] = event["arguments"]
        elif kind in ("response.completed", "response.incomplete"):
            self._finish(event.get("response"), incomplete=kind == "response.incomplete")
        elif kind in ("response.failed", "error"):
            raise _failure(event)
        return []

    def _reason(self, event: dict[str, Any]) -> list[str | Reasoning]:
        pieces: list[str | Reasoning] = []
        part = (_index(event), _count(event.get("summary_index")))
        if event.get("type") == "response.reasoning_summary_text.delta":
            if self._summary_parts and part not in self._summary_parts:
                pieces.append(Reasoning("\n\n"))  # a new part of the summary: its own paragraph
                self.reasoning.append("\n\n")
            self._summary_parts.add(part)
        thought, self._held_reasoning = _whole_pairs(self._held_reasoning + _str(event.get("delta")))
        if thought:
            self.reasoning.append(thought)
            pieces.append(Reasoning(thought))
        return pieces

    def _item(self, event: dict[str, Any], *, done: bool) -> None:
        item = event.get("item")
        if not isinstance(item, dict):
            return
        if item.get("type") == "function_call":
            call = self.calls.setdefault(_index(event), {"call_id": "", "name": "", "arguments": ""})
            call["call_id"] = _str(item.get("call_id")) or call["call_id"]
            call["name"] = valid_text(_str(item.get("name"))) or call["name"]
            if done and isinstance(item.get("arguments"), str):
                call["arguments"] = item["arguments"]
        elif item.get("type") == "reasoning" and done and item.get("encrypted_content"):
            kept = {k: item[k] for k in ("type", "id", "summary", "encrypted_content") if k in item}
            self.items.append(valid_json(kept))

    def _finish(self, response: object, *, incomplete: bool) -> None:
        response = response if isinstance(response, dict) else {}
        if isinstance(usage := response.get("usage"), dict):
            self.usage = ModelUsage(
                prompt_tokens=_count(usage.get("input_tokens")),
                completion_tokens=_count(usage.get("output_tokens")),
                cached_tokens=_detail_count(usage, "input_tokens_details", "cached_tokens"),
                reasoning_tokens=_detail_count(usage, "output_tokens_details", "reasoning_tokens"),
            )
        if incomplete:
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            self.finish_reason = "length" if reason in ("max_output_tokens", None) else str(reason)
        else:
            self.finish_reason = "tool_calls" if self.calls else "stop"

    def finish(self, new_id: Callable[[], str]) -> ModelResponse:
        if self.finish_reason is None:
            raise ModelError(
                "the model's response was cut off (stream ended early)", retryable=True, reason="response cut off"
            )
        if self._held:
            self.text.append(valid_text(self._held))
        if self._held_reasoning:
            self.reasoning.append(valid_text(self._held_reasoning))
        calls: list[ToolCall] = []
        taken: set[str] = set()
        for _, call in sorted(self.calls.items()):
            call_id = call["call_id"]
            while not call_id or call_id in taken:
                call_id = new_id()
            taken.add(call_id)
            calls.append(ToolCall(id=call_id, name=call["name"], arguments=call["arguments"]))
        return ModelResponse(
            content="".join(self.text),
            tool_calls=tuple(calls),
            finish_reason=self.finish_reason,
            usage=self.usage,
            reasoning="".join(self.reasoning),
            reasoning_items=tuple(self.items),
        )


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _index(event: dict[str, Any]) -> int:
    return _count(event.get("output_index"))


def _failure(event: dict[str, Any]) -> ModelError:
    """A `response.failed` or `error` event as the error it is (too long: an overflow)."""
    response = event.get("response")
    error = response.get("error") if isinstance(response, dict) else event
    error = error if isinstance(error, dict) else {}
    code, message = _str(error.get("code")), valid_text(_str(error.get("message"))) or "no reason given"
    if code == "context_length_exceeded" or "context window" in message or "maximum context length" in message:
        return ContextOverflowError(f"request rejected: {message}")
    busy = code in ("server_error", "rate_limit_exceeded", "server_is_overloaded")
    return ModelError(
        f"the server reported an error mid-stream: {code + ': ' if code else ''}{message}",
        retryable=busy,
        reason="server error",
    )
