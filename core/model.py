"""The model seam: a `ChatModel` protocol and the types that cross it.

Two implementations fill the seam: `OpenAIChatModel` (chat completions over real HTTP,
in `openai_model.py`, which is the only place that imports `openai`) and
`ScriptedModel` (a JSON script of turns, for offline runs, the demo and tests).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

Message = dict[str, Any]
"""One chat-completions message, exactly as sent to the API."""


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

    def stream(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> AsyncIterator[StreamItem]:
        """Yield text deltas, then one `ModelResponse`; raise `ModelError` on failure."""
        ...


# --- scripted model ----------------------------------------------------------------


class ScriptError(Exception):
    """The script file is unusable, or the conversation ran past its end."""


@dataclass(frozen=True)
class ScriptStep:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    on_rejected: tuple[ScriptStep, ...] = ()
    """Steps played instead of the rest of the script when the person declines one of
    this step's calls (with or without feedback): a script cannot follow directions, so
    it says so and stops, rather than reporting work that never happened."""


REJECTED = "The user rejected"
"""How a declined call's result begins (`core/batch.py`)."""


@dataclass
class ScriptedModel:
    """Replays a JSON script of model turns.

    The file is `{"steps": [...]}` (or a bare list; optional `"prompt"` for the demo
    and `"chunk_delay"` seconds between streamed chunks); each step is
    `{"text": "...", "tool_calls": [{"name": "Read", "arguments": {...}}]}`.
    `arguments` may be an object or a raw string (to script malformed output).
    A step may carry `"on_rejected": [steps...]`, played (and then the script is over)
    when the person declines one of that step's calls.
    A request that arrives after the last step raises `ScriptError`;
    `assert_complete()` fails if steps were left unused.
    """

    steps: list[ScriptStep]
    label: str = "script"
    requests: list[list[Message]] = field(default_factory=list)
    chunk_size: int = 12
    chunk_delay: float = 0.0
    """Seconds between text chunks, so a demo visibly streams; 0 in tests."""
    _next: int = 0
    """The next step of the script."""
    _branch: list[ScriptStep] = field(default_factory=list)
    """`on_rejected` steps still to play."""

    @property
    def name(self) -> str:
        return self.label

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ScriptError(f"cannot read script {path}: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise ScriptError(f"script {path} is not valid JSON (line {exc.lineno}): {exc.msg}") from exc
        return cls.from_data(data, label=f"script:{path.name}")

    @classmethod
    def from_data(cls, data: Any, label: str = "script") -> ScriptedModel:
        raw_steps = data.get("steps") if isinstance(data, dict) else data
        if not isinstance(raw_steps, list):
            raise ScriptError('a script is a list of steps or {"steps": [...]}')
        delay = data.get("chunk_delay", 0.0) if isinstance(data, dict) else 0.0
        steps = [_parse_step(i, s) for i, s in enumerate(raw_steps)]
        return cls(steps, label=label, chunk_delay=float(delay) if isinstance(delay, int | float) else 0.0)

    @property
    def used(self) -> int:
        return len(self.requests)

    def assert_complete(self) -> None:
        if self._next != len(self.steps) or self._branch:
            raise AssertionError(f"scripted model used {self.used} of {len(self.steps)} steps")

    def _step(self, messages: Sequence[Message]) -> ScriptStep:
        previous = self.steps[self._next - 1] if 0 < self._next <= len(self.steps) else None
        if previous is not None and previous.on_rejected and not self._branch and _declined(messages):
            self._branch, self._next = list(previous.on_rejected), len(self.steps)
        if self._branch:
            return self._branch.pop(0)
        if self._next >= len(self.steps):
            raise ScriptError(
                f"the script has no step {len(self.requests) + 1}: this scripted conversation is over after "
                f"{len(self.requests)} steps (start todo-agent with a real model to go on)"
            )
        self._next += 1
        return self.steps[self._next - 1]

    async def stream(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> AsyncIterator[StreamItem]:
        step = self._step(messages)
        self.requests.append([dict(m) for m in messages])
        for start in range(0, len(step.text), self.chunk_size):
            if self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
            yield step.text[start : start + self.chunk_size]
        prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4
        yield ModelResponse(
            content=step.text,
            tool_calls=step.tool_calls,
            finish_reason="tool_calls" if step.tool_calls else "stop",
            usage=ModelUsage(prompt_tokens=prompt, completion_tokens=max(1, len(step.text) // 4)),
        )


def _declined(messages: Sequence[Message]) -> bool:
    """Whether the person declined a call of the latest response that had calls."""
    for message in reversed(messages):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            return False
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str) and content.startswith(REJECTED):
            return True
    return False


def _parse_step(index: int, raw: Any) -> ScriptStep:
    if isinstance(raw, str):
        return ScriptStep(text=valid_text(raw))
    if not isinstance(raw, dict):
        raise ScriptError(f"step {index + 1} must be an object or a string")
    branch = raw.get("on_rejected") or []
    if not isinstance(branch, list):
        raise ScriptError(f"step {index + 1}: on_rejected must be a list of steps")
    calls = []
    for n, call in enumerate(raw.get("tool_calls") or []):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ScriptError(f"step {index + 1}, tool call {n + 1}: needs a name")
        args = call.get("arguments", {})
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        call_id = str(call.get("id") or f"call_{index + 1}_{n + 1}")
        calls.append(ToolCall(id=valid_text(call_id), name=valid_text(call["name"]), arguments=text))
    rejected = tuple(_parse_step(index, step) for step in branch)
    return ScriptStep(text=valid_text(str(raw.get("text") or "")), tool_calls=tuple(calls), on_rejected=rejected)


def create_model(
    spec: str,
    *,
    base_url: str | None,
    api_key: str | None,
    script_dir: Path | None = None,
    first_byte_timeout: float = 60.0,
) -> ChatModel:
    """Build the model named by `spec`: `script:PATH` or a model name for the OpenAI API."""
    if spec.startswith("script:"):
        path = Path(spec.removeprefix("script:")).expanduser()
        if not path.is_absolute() and script_dir is not None:
            path = script_dir / path
        return ScriptedModel.from_file(path)
    from .openai_model import OpenAIChatModel  # imported lazily: `import openai` costs ~1 s

    return OpenAIChatModel(model=spec, base_url=base_url, api_key=api_key, first_byte_timeout=first_byte_timeout)
