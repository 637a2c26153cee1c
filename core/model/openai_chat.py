"""`OpenAIChatModel`: the chat-completions API over real HTTP, streamed.

The only module that imports `openai` (and it is itself imported lazily). It turns the
streamed chunks (read as plain JSON) into text deltas plus one `ModelResponse`, tolerating
what OpenAI-compatible servers really send, and turns every SDK failure into a one-line
`ModelError`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import openai

from ..redact import mask_url, redact
from .base import (
    REASONING_ITEMS,
    ContextOverflowError,
    Message,
    ModelError,
    ModelResponse,
    ModelUsage,
    Reasoning,
    StreamItem,
    ToolCall,
    high_surrogate_tail,
    valid_json,
    valid_text,
)
from .thinking import ThinkSplitter
from .transient import BUSY, RETRY_STATUSES, brief, retry_after

_CONNECT_TIMEOUT = 10.0
_MAX_DETAIL = 200

_ChunkStream = openai.AsyncStream[object]
"""The server's chunks as parsed JSON, untouched: `_Assembler` checks them field by field."""


class OpenAIChatModel:
    """A `ChatModel` for OpenAI and OpenAI-compatible servers (vLLM, llama.cpp, Ollama, …).

    The SDK's own retries are off (`max_retries=0`, and never set per request): they
    waited seconds without a word, and under the agent loop's own they would multiply
    (each of its attempts three requests). Failures worth another try (connection errors,
    timeouts, a stream cut off, HTTP 408, 409, 429, 500, 502, 503, 504, 529 and
    Cloudflare's 520–524) are raised as `retryable`, with the server's `Retry-After`, and
    the agent loop waits them out in view ("server busy (503) — retrying in 8 s (3 of
    6)"). One case is retried here, at once and silently: a request on a kept-alive
    connection the server had already closed (llama.cpp closes them after each stream),
    which is not a failure of the server at all.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None,
        api_key: str | None,
        max_retries: int = 0,
        timeout: float = 600,
        first_byte_timeout: float = 60,
        reasoning_field: str = "",
        reasoning_effort: str = "",
        wire_api: str = "auto",
    ) -> None:
        """`timeout` bounds each read of the stream; `first_byte_timeout` bounds the wait
        for the server to start answering a request (the SDK's own retries included).
        `wire_api` "auto" switches the model to the Responses API when the server says it
        is served only there (`_switch_to_responses`); "chat" never does."""
        self._model = model
        self._settings = {
            "model": model,
            "base_url": base_url,
            "api_key": api_key,
            "max_retries": max_retries,
            "timeout": timeout,
            "first_byte_timeout": first_byte_timeout,
            "reasoning_field": reasoning_field,
            "reasoning_effort": reasoning_effort,
        }
        """What a Responses client for the same model is built from, when it comes to that."""
        self._wire_api = wire_api
        self._responses: OpenAIChatModel | None = None
        """The Responses API client this model switched to (`auto`), if it did."""
        self._effort = reasoning_effort
        self._send_effort = True
        """Whether the effort goes with requests (until the server refuses the parameter)."""
        self._notices: list[str] = []
        """What was changed for this server since the last response: its notices."""
        self._first_byte_timeout = first_byte_timeout
        self._raw_base_url = base_url
        try:
            self._client = self._make_client(base_url, api_key, max_retries, timeout)
        except Exception as exc:  # the SDK raises its HTTP library's own errors for a bad URL
            shown = mask_url(base_url or "")
            raise ModelError(redact(f"cannot use base URL {shown!r}: {exc}", base_url)) from exc
        self._send_stream_options = True
        self._token_param: str | None = "max_tokens"
        """How the output limit is sent: `max_tokens` (OpenAI-compatible servers),
        `max_completion_tokens` (OpenAI's newer models refuse the former), or not at all."""
        self._generated_ids = 0
        self._reasoning_fields = tuple(dict.fromkeys(f for f in (reasoning_field, *REASONING_FIELDS) if f))
        """Where a delta's reasoning may be: the configured field first, then the known ones."""
        self._send_reasoning = True
        """Whether a tool-calling message's reasoning goes back to the server (until it refuses the field)."""

    @staticmethod
    def _make_client(base_url: str | None, api_key: str | None, max_retries: int, timeout: float) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",  # local servers take any key; the SDK insists on one
            max_retries=max_retries,
            timeout=openai.Timeout(timeout, connect=min(timeout, _CONNECT_TIMEOUT)),
        )

    @property
    def name(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        """The server's URL as messages show it: credentials in it masked."""
        return mask_url(str(self._client.base_url).rstrip("/"))

    async def aclose(self) -> None:
        """Release the HTTP connection pool."""
        await self._client.close()
        if self._responses is not None:
            await self._responses.aclose()

    # --- what it learned of the server (`LearnsServer`) ------------------------------

    @property
    def effort(self) -> str:
        return self._effort

    def set_effort(self, effort: str) -> None:
        self._effort, self._send_effort = effort, True  # a new level is worth asking again
        if self._responses is not None:
            self._responses.set_effort(effort)

    def learned(self) -> dict[str, Any]:
        facts: dict[str, Any] = {}
        if not self._send_reasoning:
            facts["reasoning_replay"] = False
        if not self._send_effort:
            facts["effort"] = False
        if not self._send_stream_options:
            facts["stream_options"] = False
        if self._token_param != "max_tokens":
            facts["token_param"] = self._token_param
        if self._responses is not None:
            facts["wire_api"] = "responses"
            facts["responses"] = self._responses.learned()
        return facts

    def learn(self, facts: dict[str, Any]) -> None:
        self._send_reasoning = facts.get("reasoning_replay") is not False and self._send_reasoning
        self._send_effort = facts.get("effort") is not False and self._send_effort
        self._send_stream_options = facts.get("stream_options") is not False and self._send_stream_options
        if facts.get("token_param") in ("max_completion_tokens", None) and "token_param" in facts:
            self._token_param = facts["token_param"]
        if facts.get("wire_api") == "responses" and self._wire_api == "auto" and self._responses is None:
            self._responses = self._responses_client()
        if self._responses is not None and isinstance(facts.get("responses"), dict):
            self._responses.learn(facts["responses"])

    def _note(self, text: str) -> None:
        self._notices.append(text)

    def _responses_client(self) -> OpenAIChatModel:
        from .openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel(**self._settings)

    # --- streaming --------------------------------------------------------------------

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        """Yield text deltas as they arrive, then one `ModelResponse`; raise `ModelError`
        (whose message never shows a credential from the base URL), a `ContextOverflowError`
        when the server refuses the prompt as too long. A model the server serves only over
        the Responses API is asked there from then on (`wire_api = "auto"`)."""
        if self._responses is None:
            try:
                async for item in self._redacted(self._stream(messages, tools, max_tokens)):
                    yield self._with_notices(item)
                return
            except _OnlyResponses:
                self._responses = self._responses_client()
                self._note(
                    f"{self._model} is served only over the Responses API at {self.base_url}: todo-agent asks it "
                    "there from now on (remembered in this session; wire_api in the settings)"
                )
        async for item in self._responses.stream(messages, tools, max_tokens=max_tokens):
            yield self._with_notices(item)

    def _with_notices(self, item: StreamItem) -> StreamItem:
        if not isinstance(item, ModelResponse) or not self._notices:
            return item
        notices, self._notices = tuple(self._notices), []
        return replace(item, notices=(*notices, *item.notices))

    async def _redacted(self, items: AsyncIterator[StreamItem]) -> AsyncIterator[StreamItem]:
        try:
            async for item in items:
                yield item
        except ContextOverflowError as exc:
            raw = self._raw_base_url or str(self._client.base_url)
            message = redact(exc.message, raw)
            raise ContextOverflowError(message, window=exc.window, prompt_tokens=exc.prompt_tokens) from exc
        except ModelError as exc:
            raw = self._raw_base_url or str(self._client.base_url)
            message = redact(exc.message, raw)
            raise ModelError(
                message, retryable=exc.retryable, reason=exc.reason, retry_after=exc.retry_after, status=exc.status
            ) from exc

    async def _stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], max_tokens: int | None
    ) -> AsyncIterator[StreamItem]:
        stream = await self._open(messages, tools, max_tokens)
        assembler = self._assembler()
        async with stream:  # closes the HTTP response on cancellation, errors and early exit
            try:
                async for chunk in stream:
                    for piece in assembler.feed(chunk):
                        yield piece
            except json.JSONDecodeError as exc:
                raise ModelError(
                    f"the server sent a malformed stream event ({exc.msg})", retryable=True, reason="malformed stream"
                ) from exc
            except UnicodeDecodeError as exc:
                # Not retried: a server's encoding does not change from one request to the next.
                raise ModelError("the server sent bytes that are not UTF-8 in its stream") from exc
            except openai.APIConnectionError as exc:
                if assembler.finish_reason is None:
                    reason = _connection_reason(exc)
                    raise ModelError(
                        f"the model's response was cut off (connection lost: {reason})",
                        retryable=True,
                        reason="connection lost",
                    ) from exc
                # The answer was complete; only the trailing usage chunk or [DONE] was lost.
            except openai.APIError as exc:
                if (overflow := _overflow(exc)) is not None:
                    raise overflow from exc
                raise ModelError(
                    f"the server reported an error mid-stream: {_detail(exc)}", retryable=True, reason="server error"
                ) from exc
        yield assembler.finish(self._next_id)

    def _assembler(self) -> _Assembler:
        return _Assembler(self._reasoning_fields)

    def _next_id(self) -> str:
        self._generated_ids += 1
        return f"call_{self._generated_ids}"

    async def _open(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], max_tokens: int | None
    ) -> _ChunkStream:
        try:
            async with asyncio.timeout(self._first_byte_timeout):
                return await self._open_with_fallback(messages, tools, max_tokens)
        except TimeoutError:
            raise ModelError(
                f"{self.base_url} sent nothing for {self._first_byte_timeout:g} s after the request (it may be "
                "overloaded, or still loading the model); raise first_byte_timeout in the settings to wait longer"
            ) from None

    async def _open_with_fallback(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], max_tokens: int | None
    ) -> _ChunkStream:
        try:
            for _ in range(2):
                try:
                    return await self._create_once_more_if_dropped(messages, tools, max_tokens)
                except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                    if not self._adapt(exc):
                        raise
            return await self._create_once_more_if_dropped(messages, tools, max_tokens)
        except openai.APIError as exc:
            raise self._error(exc) from exc

    async def _create_once_more_if_dropped(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], max_tokens: int | None
    ) -> _ChunkStream:
        try:
            return await self._create(messages, tools, max_tokens)
        except openai.APIConnectionError as exc:
            if isinstance(exc, openai.APITimeoutError) or _could_not_connect(exc):
                raise
            return await self._create(messages, tools, max_tokens)  # the server had closed a pooled connection

    def _adapt(self, exc: openai.APIError) -> bool:
        """Drop or rename a parameter the server refused; True when the request may be retried."""
        text = f"{exc.message} {exc.body}".lower()
        if self._effort and self._send_effort and "reasoning_effort" in text:
            self._send_effort = False
            self._note(f"the server does not take reasoning_effort: {self._model} is asked without it")
            return True
        if self._send_reasoning and any(field.lower() in text for field in self._reasoning_fields):
            self._send_reasoning = False  # a server that will not take the reasoning back
            self._note("the server does not take a message's reasoning back: it is no longer sent (still kept)")
            return True
        if self._send_stream_options and ("stream_options" in text or "include_usage" in text):
            # Some servers reject stream_options (400, or 422 from strict schemas); asked
            # without it they answer normally, only without usage.
            self._send_stream_options = False
            return True
        if self._token_param == "max_tokens" and "max_completion_tokens" in text and "max_tokens" in text:
            self._token_param = "max_completion_tokens"  # OpenAI's reasoning models
            return True
        if self._token_param is not None and self._token_param in text and _overflow(exc) is None:
            self._token_param = None  # a server that will not take an output limit at all
            return True
        return False

    async def _create(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], max_tokens: int | None
    ) -> _ChunkStream:
        # The request goes out as the plain JSON it already is, through the client's
        # `post`, and each streamed chunk comes back as the dict `json.loads` made of it:
        # `chat.completions.create` would walk the history message by message in its
        # request transform (~0.35 ms each on the event loop: 0.7 s of frozen UI per
        # request in a 2,000-message session) and build a typed model object of every
        # chunk (a quarter of todo-agent's CPU while an answer streams). The SDK still
        # does the rest: headers and auth, status errors, the SSE framing, error events
        # in the stream, connection errors as `APIConnectionError`.
        # The one place every request passes: whatever a server, a tool, a hook or a file
        # name put in the history, a lone surrogate is sent as U+FFFD (the SDK's encoder
        # cannot write it as UTF-8 at all). The agent stores the same in the session.
        sent = _as_sent(messages, self._reasoning_fields, self._send_reasoning)
        body: dict[str, object] = {"model": self._model, "messages": valid_json(sent), "stream": True}
        if tools:
            body["tools"] = valid_json(list(tools))
        if self._send_stream_options:
            body["stream_options"] = {"include_usage": True}
        if max_tokens and self._token_param is not None:
            body[self._token_param] = max_tokens
        if self._effort and self._send_effort:
            body["reasoning_effort"] = self._effort
        return await self._client.post(
            "/chat/completions",
            body=body,
            cast_to=object,
            stream=True,
            stream_cls=_ChunkStream,
        )

    def _error(self, exc: openai.APIError) -> ModelError:
        """One line a person can act on, for any failure before the stream starts;
        `retryable` when asking again later may work (the loop retries it in view).
        A refusal of the prompt as too long is a `ContextOverflowError`."""
        if (overflow := _overflow(exc)) is not None:
            return overflow
        if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
            cause = _connection_reason(exc)
            said = "timed out" if isinstance(exc, openai.APITimeoutError) else "cannot reach the server"
            return ModelError(f"cannot reach {self.base_url}: {cause}", retryable=True, reason=said)
        if isinstance(exc, openai.APIStatusError):
            return self._explained(exc) or ModelError(
                self._status_message(exc),
                retryable=_worth_retrying(exc),
                reason=brief(exc.status_code),
                retry_after=retry_after(exc.response.headers),
                status=exc.status_code,
            )
        return ModelError(f"model API error: {_detail(exc)}")

    def _explained(self, exc: openai.APIStatusError) -> ModelError | None:
        """Failures that say what to change: asking again the same way cannot work."""
        status, detail = exc.status_code, _detail(exc)
        if status in (400, 404) and self._wire_api == "auto" and _only_responses(detail):
            raise _OnlyResponses(detail)
        if _is_web_page(exc):
            return ModelError(
                f"{self.base_url} answered with a web page (HTTP {status}), not the OpenAI API: the base URL "
                "should be the server's OpenAI-compatible endpoint, usually ending in /v1"
            )
        if "requires --jinja" in detail:  # llama.cpp started without --jinja (or with --no-jinja)
            return ModelError(
                f"the server cannot use tools: start llama-server with --jinja (not --no-jinja) "
                f"(HTTP {status}: {detail})"
            )
        return None

    def _status_message(self, exc: openai.APIStatusError) -> str:
        status, detail = exc.status_code, _detail(exc)
        if status == 401:
            return f"authentication failed (HTTP 401): check OPENAI_API_KEY ({detail})"
        if status == 404:
            return f"model '{self._model}' not found at {self.base_url} (HTTP 404: {detail})"
        if status == 429:
            if exc.code == "insufficient_quota":  # OpenAI's "no credit left": waiting will not help
                return f"quota exceeded (HTTP 429): {detail}"
            return f"rate limited (HTTP 429): {detail}"
        if status in BUSY:
            return f"server busy (HTTP {status}): {detail}"
        if status >= 500:
            return f"server error (HTTP {status}): {detail}"
        what = {400: "request rejected", 403: "permission denied"}.get(status, f"HTTP error from {self.base_url}")
        return f"{what} (HTTP {status}): {detail}"


class _OnlyResponses(Exception):
    """The server serves this model only over the Responses API (OpenAI's codex models)."""


def _only_responses(detail: str) -> bool:
    """`This model is only supported in v1/responses and not in v1/chat/completions`."""
    text = detail.lower()
    return "v1/responses" in text and ("only supported" in text or "not supported" in text or "not in" in text)


@dataclass
class _PartialCall:
    id: str | None
    name: str = ""
    arguments: str = ""


REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Where servers put a delta's reasoning: DeepSeek, llama.cpp, SGLang (`reasoning_content`);
vLLM since it renamed the field, Ollama, OpenRouter (`reasoning`)."""


def _as_sent(messages: Sequence[Message], fields: Sequence[str], replay: bool) -> list[Message]:
    """The history as a request sends it: an assistant message's reasoning goes back only
    with its tool calls (DeepSeek refuses a tool-calling message without it, and Kimi and
    gpt-oss keep their thought across a call so), and only while the server takes it; a
    plain answer's reasoning is never sent again."""
    sent: list[Message] = []
    for message in messages:
        kept = replay and message.get("tool_calls")
        if message.get("role") == "assistant" and not kept and any(f in message for f in fields):
            sent.append({k: v for k, v in message.items() if k not in fields and k != REASONING_ITEMS})
        elif REASONING_ITEMS in message:  # the Responses API's own: a chat server knows nothing of them
            sent.append({k: v for k, v in message.items() if k != REASONING_ITEMS})
        else:
            sent.append(message)
    return sent


class _Assembler:
    """Accumulates one streamed answer: reasoning, text, tool calls, finish reason, usage."""

    def __init__(self, reasoning_fields: Sequence[str] = REASONING_FIELDS) -> None:
        self.reasoning_fields = reasoning_fields
        self.reasoning: list[str] = []
        self.reasoning_field = ""
        self._thinking = ThinkSplitter()
        self._held_reasoning = ""
        self.text: list[str] = []
        self.calls: list[_PartialCall] = []
        self.by_index: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: ModelUsage | None = None
        self._held = ""
        """The first half of a surrogate pair that ended a delta: the next one may complete it."""

    def feed(self, chunk: object) -> list[str | Reasoning]:
        """Take one chunk (parsed JSON, any shape a server sends); return its reasoning and
        text deltas. A field of the wrong type counts as absent, as the SDK's unvalidated
        models did."""
        if not isinstance(chunk, dict):
            return []
        if isinstance(usage := chunk.get("usage"), dict):
            self.usage = _usage(usage)
        deltas: list[str | Reasoning] = []
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue  # only the first choice is ever asked for
            if isinstance(delta := choice.get("delta"), dict):
                self._reason(delta, deltas)
                thought, text = self._thinking.feed(self._valid(_as_text(delta.get("content"))))
                if thought:
                    self.reasoning.append(thought)
                    deltas.append(Reasoning(thought))
                if text:
                    deltas.append(text)
                    self.text.append(text)
                pieces = delta.get("tool_calls")
                for piece in pieces if isinstance(pieces, list) else ():
                    if isinstance(piece, dict):
                        self._add(piece)
            if (finish := choice.get("finish_reason")) and isinstance(finish, str):
                self.finish_reason = finish
        return deltas

    def _reason(self, delta: dict[str, Any], deltas: list[str | Reasoning]) -> None:
        """The delta's reasoning, from the first of the known fields that holds some."""
        for field in self.reasoning_fields:
            raw = _as_text(delta.get(field))
            if raw:
                self.reasoning_field = self.reasoning_field or field
                thought, self._held_reasoning = _whole_pairs(self._held_reasoning + raw)
                if thought:
                    self.reasoning.append(thought)
                    deltas.append(Reasoning(thought))
                return

    def _valid(self, text: str) -> str:
        text, self._held = _whole_pairs(self._held + text)
        return text

    def _add(self, piece: dict[str, Any]) -> None:
        index, piece_id = piece.get("index"), piece.get("id")
        index = index if isinstance(index, int) else None  # some servers omit it on single calls
        piece_id = piece_id if isinstance(piece_id, str) and piece_id else None
        call = self.by_index.get(index) if index is not None else (self.calls[-1] if self.calls else None)
        if call is None or (piece_id and call.id and piece_id != call.id):
            # A new id at a known index is a new call: some servers put every parallel call at 0.
            call = _PartialCall(id=piece_id)
            self.calls.append(call)
            if index is not None:
                self.by_index[index] = call
        elif piece_id and not call.id:
            call.id = piece_id
        function = piece.get("function")
        if not isinstance(function, dict):
            return
        # Names may come in pieces; a server that repeats the whole name must not double it.
        name = valid_text(_as_text(function.get("name")))
        if name and name != call.name:
            call.name += name
        if arguments := function.get("arguments"):
            # Some servers send the arguments as an object rather than JSON text.
            call.arguments += arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)

    def finish(self, new_id: Callable[[], str]) -> ModelResponse:
        """The complete response; `new_id()` names calls that came without an id."""
        if self.finish_reason is None:
            raise ModelError(
                "the model's response was cut off (stream ended early)", retryable=True, reason="response cut off"
            )
        if self._held_reasoning:  # a thought's last half pair: its second half never came
            self.reasoning.append(valid_text(self._held_reasoning))
        if self._held:  # the pair's second half never came
            self._thinking_rest(valid_text(self._held))
        self._thinking_rest("")
        taken = {c.id for c in self.calls if c.id}
        calls: list[ToolCall] = []
        for call in self.calls:
            call_id = call.id
            while not call_id or (call.id is None and call_id in taken):
                call_id = new_id()
            taken.add(call_id)
            calls.append(ToolCall(id=call_id, name=call.name, arguments=call.arguments))
        return ModelResponse(
            content="".join(self.text),
            tool_calls=tuple(calls),
            finish_reason=self.finish_reason,
            usage=self.usage,
            reasoning="".join(self.reasoning),
            reasoning_field=self.reasoning_field,
        )

    def _thinking_rest(self, text: str) -> None:
        """`text` at the end of the stream, and what the `<think>` reader still held."""
        thought, rest = self._thinking.feed(text)
        more_thought, more_rest = self._thinking.close()
        self.reasoning += [t for t in (thought, more_thought) if t]
        self.text += [t for t in (rest, more_rest) if t]


def _whole_pairs(text: str) -> tuple[str, str]:
    """(`text` as valid Unicode, its last character held back): the first half of a
    surrogate pair that ends a delta waits for its second half in the next one."""
    cut = high_surrogate_tail(text)
    return valid_text(text[:cut]), text[cut:]


def _as_text(value: object) -> str:
    """Delta text as some servers send it: a string, null, or a list of content parts.
    Not yet valid Unicode: a surrogate pair may be split across two deltas."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in value)
    return ""


def _usage(usage: dict[str, Any]) -> ModelUsage:
    # Compatible servers sometimes send nulls (or worse) here.
    return ModelUsage(
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        cached_tokens=_detail_count(usage, "prompt_tokens_details", "cached_tokens"),
        reasoning_tokens=_detail_count(usage, "completion_tokens_details", "reasoning_tokens"),
    )


def _detail_count(usage: dict[str, Any], details: str, key: str) -> int:
    """`usage[details][key]`, as a count (0 when a server sends no such part, or junk)."""
    part = usage.get(details)
    return _count(part.get(key)) if isinstance(part, dict) else 0


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 2**53:
        return 0  # also NaN, which fails both comparisons
    return int(value)


def _worth_retrying(exc: openai.APIStatusError) -> bool:
    """A server that says so (`x-should-retry`), or one of `RETRY_STATUSES`; not OpenAI's
    429 "insufficient_quota" (no credit: waiting will not help)."""
    should = exc.response.headers.get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    if exc.code == "insufficient_quota":
        return False
    return exc.status_code in RETRY_STATUSES


def _is_web_page(exc: openai.APIStatusError) -> bool:
    """An HTML answer: the URL points at a web server, not at an OpenAI-compatible API."""
    kind = exc.response.headers.get("content-type", "")
    text = exc.body if isinstance(exc.body, str) else exc.message
    return "html" in kind or text.lstrip().lower().startswith(("<!doctype", "<html"))


def _could_not_connect(exc: openai.APIConnectionError) -> bool:
    """Whether the connection itself failed (refused, no such host, unreachable), as
    opposed to one the server closed under a request."""
    seen = {id(exc)}
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if "Connect" in type(cause).__name__ or isinstance(cause, socket.gaierror | ConnectionRefusedError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_OVERFLOW_WORDS = (
    "maximum context length",  # OpenAI, vLLM
    "context length exceeded",
    "exceeds the available context size",  # llama.cpp
    "exceed_context_size",
    "context window",
    "prompt is too long",  # Anthropic-style proxies
    "input is too long",
    "too many tokens",
)
_WINDOW_PATTERNS = (
    re.compile(r"maximum context length is (\d+)"),
    re.compile(r"context (?:size|length|window) (?:is |of )?(\d+)"),
)


def _overflow(exc: openai.APIError) -> ContextOverflowError | None:
    """The server's "your prompt is too long for my context window", in any dialect; else None.

    OpenAI: 400 `code: context_length_exceeded`, "This model's maximum context length is
    128000 tokens…"; vLLM: 400, the same words; llama.cpp: 400 `type:
    exceed_context_size_error` with `n_ctx` and `n_prompt_tokens`; others: similar words.
    """
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APIConnectionError) or (status is not None and status not in (400, 413, 422)):
        return None
    body = exc.body if isinstance(exc.body, dict) else {}
    codes = {str(body.get("code") or ""), str(body.get("type") or ""), str(exc.code or ""), str(exc.type or "")}
    text = f"{exc.message} {body.get('message') or ''}".lower()
    if not (codes & _OVERFLOW_CODES or any(word in text for word in _OVERFLOW_WORDS)):
        return None
    window = body.get("n_ctx") if isinstance(body.get("n_ctx"), int) else None
    if window is None:
        found = next((m for p in _WINDOW_PATTERNS if (m := p.search(text))), None)
        window = int(found.group(1)) if found else None
    prompt = body.get("n_prompt_tokens") if isinstance(body.get("n_prompt_tokens"), int) else None
    size = f" ({prompt:,} tokens)" if prompt else ""
    where = f" of {window:,} tokens" if window else ""
    said = f"HTTP {status}: {_detail(exc)}" if status else _detail(exc)
    return ContextOverflowError(
        f"the prompt{size} exceeds the model's context window{where} ({said})",
        window=window,
        prompt_tokens=prompt,
    )


def _detail(exc: openai.APIError) -> str:
    """The server's own message, on one short line."""
    body = exc.body
    message: object = None
    if isinstance(body, dict):
        message = body.get("message") or body.get("error")
    elif isinstance(body, str):
        message = body
    if not isinstance(message, str) or not message.strip():
        message = exc.message.split(" - ", 1)[-1] if exc.message.startswith("Error code:") else exc.message
    return _one_line(str(message)) or "no details"


def _connection_reason(exc: openai.APIConnectionError) -> str:
    """The root cause in plain words: "Connection refused", "Name or service not known", …"""
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    root: BaseException = exc
    seen = {id(exc)}
    while (inner := root.__cause__ or root.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        root = inner
    if isinstance(root, socket.gaierror) and root.strerror:
        reason = root.strerror
    elif isinstance(root, OSError) and root.errno and root.errno > 0:
        reason = os.strerror(root.errno)
    else:
        reason = str(root) or exc.message
    return _one_line(reason).rstrip(".") or "connection error"


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MAX_DETAIL else line[: _MAX_DETAIL - 1] + "…"
