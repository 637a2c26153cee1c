"""The model seam: a `ChatModel` protocol and the types that cross it.

Two implementations fill the seam: `OpenAIChatModel` (chat completions over real HTTP,
in `openai_chat.py`, which is the only place that imports `openai`) and
`ScriptedModel` (a JSON script of turns, for offline runs, the demo and tests).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]
"""One chat-completions message, exactly as sent to the API."""


def content_text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _joined(pair: re.Match[str]) -> str:
    high, low = (ord(c) for c in pair.group())
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def valid_text(text: str) -> str:
    """`text` as valid Unicode, so it can be shown, stored and sent as UTF-8: a surrogate
    pair split in two (a server that cuts its stream in UTF-16 units) becomes its
    character again; a lone surrogate (`\\ud83d` in a model's JSON, an odd file name)
    becomes U+FFFD."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", _PAIR.sub(_joined, text))


def valid_json(value: Any) -> Any:
    """`value` (JSON-like data: dicts, lists, strings, numbers) with `valid_text` applied to
    every string, keys included; `value` itself when nothing needed it, so checking a long
    history copies nothing (~5 ms for 2,000 messages, 1.3 MB)."""
    if isinstance(value, str):
        return value if value.isascii() else valid_text(value)
    if isinstance(value, dict):
        for key, item in value.items():
            if valid_json(item) is not item or (isinstance(key, str) and valid_text(key) is not key):
                return {valid_json(k): valid_json(v) for k, v in value.items()}
        return value
    if isinstance(value, list | tuple):
        for item in value:
            if valid_json(item) is not item:
                return type(value)(valid_json(v) for v in value)
        return value
    return value


def high_surrogate_tail(text: str) -> int:
    """Where `text` ends in the first half of a surrogate pair (its second half may be in
    the next piece of a stream), else `len(text)`."""
    return len(text) - 1 if text and "\ud800" <= text[-1] <= "\udbff" else len(text)


class ModelError(Exception):
    """The model could not answer. `message` is one line a person can act on.

    `retryable` marks failures where asking again later may work (a server busy or
    restarting, a connection dropped, a stream cut off); the agent loop waits and retries
    them in view. `reason` says which in a few words, for the status line (`server busy
    (503)`); `retry_after` is how long the server asked to wait (`Retry-After`), if it did;
    `status` the HTTP status of a refusal, when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        reason: str = "",
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.reason = reason or message.split(":", 1)[0]
        self.retry_after = retry_after
        self.status = status


class ContextOverflowError(ModelError):
    """The server refused the request because the prompt does not fit its context window.

    OpenAI and vLLM answer HTTP 400 `context_length_exceeded` ("maximum context length
    is N tokens"), llama.cpp 400 `exceed_context_size_error` with `n_ctx`. `window` and
    `prompt_tokens` are what the server said, when it said it. The loop compacts the
    history and retries once.
    """

    def __init__(self, message: str, *, window: int | None = None, prompt_tokens: int | None = None) -> None:
        super().__init__(message)
        self.window = window
        self.prompt_tokens = prompt_tokens


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model sent it. `arguments` is the raw text, maybe invalid JSON."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelUsage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    """Of the prompt, what the server had cached (`prompt_tokens_details.cached_tokens`)."""
    reasoning_tokens: int = 0
    """Of the completion, what went into reasoning (`completion_tokens_details.reasoning_tokens`)."""


@dataclass(frozen=True)
class Reasoning:
    """A piece of the model's reasoning (its thought before the answer), as it streams."""

    text: str


REASONING_FIELD = "reasoning_content"
"""Where a response's reasoning is kept on its message when the server named no field
(a `<think>` it left in the content): DeepSeek's and llama.cpp's name."""

_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name", "refusal", "audio"})


def stored_reasoning(message: Message) -> tuple[str, str]:
    """The reasoning an assistant message was stored with and the field it is in (the
    field it came in: `reasoning_content`, `reasoning` or a configured one), or ("", "")."""
    if message.get("role") != "assistant":
        return "", ""
    for key, value in message.items():
        if key not in _MESSAGE_KEYS and isinstance(value, str) and value:
            return value, key
    return "", ""


@dataclass(frozen=True)
class ModelResponse:
    """One complete response. Only a response that really finished is ever built."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    usage: ModelUsage | None = None
    reasoning: str = ""
    """The whole reasoning that came before (or beside) the answer; empty for none."""
    reasoning_field: str = ""
    """The field it came in (`reasoning_content`, vLLM's `reasoning`, a configured one);
    empty when it was a `<think>` at the start of the content."""
    reasoning_items: tuple[dict[str, Any], ...] = ()
    """The Responses API's reasoning items (encrypted), replayed with the turn's later requests."""
    notices: tuple[str, ...] = ()
    """What the client changed for this server while answering (a parameter it refused,
    another API): one line each, for the person, and remembered (`LearnsServer`)."""


StreamItem = str | Reasoning | ModelResponse
"""A model stream yields text deltas (`str`) and reasoning pieces (`Reasoning`) as they
arrive, then exactly one `ModelResponse`."""


class ChatModel(Protocol):
    """Anything that can answer a chat-completions request as a stream."""

    @property
    def name(self) -> str: ...

    def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        """Yield text deltas, then one `ModelResponse`; raise `ModelError` on failure.

        `max_tokens` caps the response (None: the server's default). A response cut by
        it ends with `finish_reason == "length"`.
        """
        ...


@dataclass(frozen=True)
class WireOptions:
    """How requests go out: what the settings say of the server and the model."""

    first_byte_timeout: float = 60.0
    reasoning_field: str = ""
    reasoning_effort: str = ""
    wire_api: str = "auto"


REASONING_ITEMS = "reasoning_items"
"""Where an assistant message keeps the Responses API's reasoning items (never sent over chat)."""


@runtime_checkable
class LearnsServer(Protocol):
    """A client that adapts to what its server refuses, and can be told what it learned
    before (from the session file), so `--continue` does not ask the same way again."""

    def learned(self) -> dict[str, Any]:
        """What it knows of the server now: plain JSON."""
        ...

    def learn(self, facts: dict[str, Any]) -> None:
        """Take what an earlier run learned (unknown keys and odd values are ignored)."""
        ...

    def set_effort(self, effort: str) -> None:
        """The reasoning effort of the next requests (empty: the server's default)."""
        ...

    @property
    def effort(self) -> str: ...


@runtime_checkable
class ScriptsAgents(Protocol):
    """A model that scripts its sub-agents too (`ScriptedModel`, and wrappers of one)."""

    def for_agent(self, text: str) -> ChatModel:
        """The model of the sub-agent described by `text` (its description and brief)."""
        ...
