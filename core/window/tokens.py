"""Token accounting without a tokenizer: how full the context window is.

Counts come from the server's `usage` when it sends one. Where it sends none they are
estimated from characters: each message as its JSON text, plus the tool schemas, divided
by a characters-per-token ratio. The ratio starts at 3.5 (English prose runs about 4
characters a token, code and JSON nearer 3; erring low means compacting a little early
rather than overflowing) and is re-measured from every response that reports usage, since
every model's tokenizer differs. No tokenizer is downloaded or bundled. An image counts
a fixed `IMAGE_TOKENS` (`core/model/images.py` says why), never its base64.

The next request is estimated as the last measured prompt plus the last answer plus
estimates of what was appended since, so the status line and the compaction threshold
follow the server's own count wherever it gave one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..model.base import Message, ModelUsage, stored_reasoning
from ..model.images import IMAGE_TOKENS, is_image_part

DEFAULT_CHARS_PER_TOKEN = 3.5
DEFAULT_WINDOW = 32_768
"""Assumed for an OpenAI-compatible server that does not say (a llama.cpp or vLLM server
does: `core/model/server.py`); an overflow error from the server corrects it."""
OPENAI_DEFAULT_WINDOW = 128_000
"""Assumed for api.openai.com (no base URL): the gpt-4o family's window."""
MIN_OUTPUT = 256
"""The smallest `max_tokens` ever sent: less is not room to answer."""
MAX_DEFAULT_OUTPUT = 8192
MIN_WORKING_ROOM = 1024
"""Tokens the window must hold beyond the fixed prefix for the agent to do anything."""

WindowSource = Literal["setting", "server", "default"]

MIN_WINDOW = 512
"""The smallest window believed (the `context_window` setting's floor too): less cannot hold a request."""
MAX_WINDOW = 10_000_000
"""The largest window believed: no model offers more, and a bigger claim would put compaction off for ever."""


def unbelievable_window(window: int, where: str) -> str | None:
    """Why a server's word on its window (`where` it said it) is not taken, or None."""
    if MIN_WINDOW <= window <= MAX_WINDOW:
        return None
    return (
        f"{where} says the context window is {window:,} token{'' if window == 1 else 's'}; not believed "
        f"(a window is {MIN_WINDOW:,} to {MAX_WINDOW:,} tokens); set context_window if that is wrong"
    )


IMAGE_CHARS = round(IMAGE_TOKENS * DEFAULT_CHARS_PER_TOKEN)
"""An image part, in the characters everything is counted in: `IMAGE_TOKENS` at the
starting ratio, whatever its size (its base64 is not what a model counts)."""
_MESSAGE_OVERHEAD = 8
"""Characters' worth of role markers and separators a chat template adds per message."""
CALL_OVERHEAD = 24


def message_chars(message: Message | dict[str, Any]) -> int:
    """The characters a message puts in the prompt: its text, `IMAGE_CHARS` an image, its
    tool calls' names and arguments, as the chat template renders them (not JSON-escaped),
    and the reasoning a tool-calling message is sent back with (DeepSeek requires it; see `openai_chat._as_sent`).
    Cheap: no encoding, so estimating a resumed 2,000-message history takes milliseconds."""
    content = message.get("content")
    if isinstance(content, str):
        chars = len(content)
    elif isinstance(content, list):
        parts = [part for part in content if isinstance(part, dict)]
        chars = sum(IMAGE_CHARS if is_image_part(part) else len(str(part.get("text", ""))) for part in parts)
    else:
        chars = 0
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            chars += CALL_OVERHEAD + len(str(function.get("name") or "")) + len(str(function.get("arguments") or ""))
    if message.get("tool_calls"):
        chars += len(stored_reasoning(message)[0])
    return chars + _MESSAGE_OVERHEAD


def _chars(tools: Sequence[dict[str, Any]]) -> int:
    """Characters the tool schemas put in a prompt."""
    return len(json.dumps(list(tools))) if tools else 0


@dataclass
class ContextBudget:
    """The limits every request must respect: window, compaction threshold, output cap."""

    window: int = DEFAULT_WINDOW
    source: WindowSource = "default"
    """Where `window` came from: a setting or flag, the server, or a default guess."""
    threshold: float = 0.8
    """Compact before a request whose prompt would pass this share of the window."""
    max_output: int | None = None
    """The `max_output_tokens` setting; None derives it from the window."""

    @property
    def output_limit(self) -> int:
        """`max_tokens` per response: the setting, else a quarter of the window (256–8192)."""
        if self.max_output:
            return self.max_output
        return max(MIN_OUTPUT, min(MAX_DEFAULT_OUTPUT, self.window // 4))

    @property
    def trigger(self) -> int:
        return int(self.window * self.threshold)

    def max_tokens_for(self, prompt_tokens: int) -> int:
        """The output limit, shrunk so that prompt plus answer fit the window (vLLM refuses
        a request whose `max_tokens` would not fit), but never below `MIN_OUTPUT`."""
        return max(min(self.output_limit, self.window - prompt_tokens), min(self.output_limit, MIN_OUTPUT))

    def room(self, prefix_tokens: int) -> int:
        """Tokens the history may use before compaction starts."""
        return max(0, self.trigger - prefix_tokens)

    def working_room_needed(self) -> int:
        return max(MIN_WORKING_ROOM, self.window // 4)

    def prefix_problem(self, prefix_tokens: int) -> str | None:
        """Why the fixed prefix (system prompt + tool schemas) leaves no room to work, or None."""
        if prefix_tokens + self.working_room_needed() <= self.window:
            return None
        return (
            f"the model's context window ({self.window:,} tokens) cannot hold todo-agent's fixed prompt "
            f"(system prompt and tool descriptions, about {prefix_tokens:,} tokens) plus room to work "
            f"({self.working_room_needed():,} tokens): start the server with a larger context "
            "(llama-server -c 8192 or more) or set context_window if the server's is larger"
        )


@dataclass
class TokenCounter:
    """Estimates prompt sizes, anchored on the server's last count when there is one."""

    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN
    _anchor: tuple[int, int] | None = None
    """(messages in the last measured request, its prompt + completion tokens)."""
    _anchor_tools = 0
    """Characters of the tool schemas the measured request carried: tools that join later
    (an MCP server that came up) are estimated on top."""

    def tokens(self, chars: int) -> int:
        return math.ceil(chars / self.chars_per_token)

    def message_tokens(self, message: Message) -> int:
        return self.tokens(message_chars(message))

    def estimate(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> int:
        """A pure estimate from characters, ignoring any measurement."""
        return self.tokens(sum(message_chars(m) for m in messages) + _chars(tools))

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> int:
        """What the request `messages` (system message first) should count, by the server's measure."""
        if self._anchor is not None and self._anchor[0] < len(messages):
            sent, measured = self._anchor
            # messages[sent] is the answer the measured request produced (its completion tokens).
            added_tools = max(0, _chars(tools) - self._anchor_tools)
            return measured + sum(self.message_tokens(m) for m in messages[sent + 1 :]) + self.tokens(added_tools)
        return self.estimate(messages, tools)

    def observe(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], usage: ModelUsage | None) -> None:
        """Learn from a response: anchor on its count and re-measure characters per token."""
        if usage is None or usage.prompt_tokens <= 0:
            self._anchor = None
            return
        self.calibrate(messages, tools, usage.prompt_tokens)
        self._anchor = (len(messages), usage.prompt_tokens + usage.completion_tokens)
        self._anchor_tools = _chars(tools)

    def calibrate(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], prompt_tokens: int) -> None:
        """Re-measure characters per token from a count the server gave without an answer
        (llama.cpp's refusal names the prompt's size)."""
        chars = sum(message_chars(m) for m in messages) + _chars(tools)
        if prompt_tokens > 0:
            self.chars_per_token = min(8.0, max(1.0, chars / prompt_tokens))

    def answer_cut(self, chars: int) -> None:
        """The measured answer is kept `chars` characters shorter than the server counted it
        (huge tool-call arguments are kept cut): the next request carries that much less."""
        if self._anchor is not None and chars > 0:
            sent, measured = self._anchor
            self._anchor = (sent, max(0, measured - self.tokens(chars)))

    @property
    def anchored(self) -> bool:
        """The next request's count rests on the server's count of an earlier one."""
        return self._anchor is not None

    def forget(self) -> None:
        """The history was replaced (compaction, rewind): the last count no longer applies."""
        self._anchor = None
