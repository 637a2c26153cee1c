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


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with lone surrogates (`\\ud83d` escapes in a model's JSON, which decode to no
    character at all) replaced by U+FFFD, so it can be shown, stored and sent as UTF-8."""
    return _LONE_SURROGATE.sub("\ufffd", text)


class ModelError(Exception):
    """The model could not answer. `message` is one line a person can act on.

    `retryable` marks failures where asking again may work (a stream cut off,
    a server error after the client's own retries).
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


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


@dataclass(frozen=True)
class ModelResponse:
    """One complete response. Only a response that really finished is ever built."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    usage: ModelUsage | None = None


StreamItem = str | ModelResponse
"""A model stream yields text deltas (`str`) and then exactly one `ModelResponse`."""


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


@runtime_checkable
class ScriptsAgents(Protocol):
    """A model that scripts its sub-agents too (`ScriptedModel`, and wrappers of one)."""

    def for_agent(self, text: str) -> ChatModel:
        """The model of the sub-agent described by `text` (its description and brief)."""
        ...
