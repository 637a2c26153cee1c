"""`ScriptedModel`: a JSON script of model turns behind the `ChatModel` seam.

It runs the whole loop, the tools and the UI offline: the demo, `--model script:PATH`
and the tests. It fails the test that left steps unused (`assert_complete`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import (
    ContextOverflowError,
    Message,
    ModelError,
    ModelResponse,
    ModelUsage,
    Reasoning,
    StreamItem,
    ToolCall,
    valid_text,
)


class ScriptError(Exception):
    """The script file is unusable, or the conversation ran past its end."""


@dataclass(frozen=True)
class ScriptStep:
    text: str = ""
    reasoning: str = ""
    """Streamed before the text, as a reasoning model's thought (`Reasoning` pieces)."""
    tool_calls: tuple[ToolCall, ...] = ()
    on_rejected: tuple[ScriptStep, ...] = ()
    """Steps played instead of the rest of the script when the person declines one of
    this step's calls (with or without feedback): a script cannot follow directions, so
    it says so and stops, rather than reporting work that never happened."""
    finish_reason: str | None = None
    """None: `tool_calls` or `stop`, as a real server would say."""
    usage: ModelUsage | None = None
    no_usage: bool = False
    """Report no usage at all (like servers that send none), so the loop estimates."""
    error: str | None = None
    """`overflow` (a context-window refusal) or `server` (a non-retryable failure)."""
    window: int | None = None
    """For `error: overflow`: the window the server names."""


REJECTED = "The user rejected"
"""How a declined call's result begins (`core/engine/batch.py`)."""


@dataclass
class ScriptedModel:
    """Replays a JSON script of model turns.

    The file is `{"steps": [...]}` (or a bare list; optional `"prompt"` for the demo
    and `"chunk_delay"` seconds between streamed chunks); each step is
    `{"text": "...", "tool_calls": [{"name": "Read", "arguments": {...}}]}`, with an
    optional `"reasoning": "..."` streamed before the text (a reasoning model's thought).
    `arguments` may be an object or a raw string (to script malformed output).
    A step may carry `"on_rejected": [steps...]`, played (and then the script is over)
    when the person declines one of that step's calls.
    A step may also say what a real server would: `"finish_reason": "length"` (cut at
    the output limit), `"usage": {"prompt_tokens": n, "completion_tokens": m}` or
    `"usage": null` (none sent), or `"error": "overflow"` (with `"window"`; a context
    overflow refusal) / `"error": "server"`, with an optional `"message"`.
    A request that arrives after the last step raises `ScriptError`;
    `assert_complete()` fails if steps were left unused. Every request's messages, tools
    and `max_tokens` are recorded.

    Sub-agents get scripts of their own: `"agents": [{"match": "Write the tests",
    "steps": [...]}, ...]`; `for_agent(text)` hands the first unused one whose `match` is
    in `text` (the sub-agent's description and brief) to the sub-agent, as a model of its
    own. Side by side, each plays its own steps whatever order the requests come in.
    """

    steps: list[ScriptStep]
    label: str = "script"
    requests: list[list[Message]] = field(default_factory=list)
    tools_sent: list[int] = field(default_factory=list)
    """How many tool schemas each request carried (0 for a compaction summary request)."""
    max_tokens_sent: list[int | None] = field(default_factory=list)
    chunk_size: int = 12
    chunk_delay: float = 0.0
    """Seconds between text chunks, so a demo visibly streams; 0 in tests."""
    _next: int = 0
    """The next step of the script."""
    _branch: list[ScriptStep] = field(default_factory=list)
    """`on_rejected` steps still to play."""
    agents: list[tuple[str, list[ScriptStep]]] = field(default_factory=list)
    """Sub-agents' scripts not handed out yet: (match, steps)."""

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
        model = cls(steps, label=label, chunk_delay=float(delay) if isinstance(delay, int | float) else 0.0)
        model.agents = _parse_agents(data.get("agents") if isinstance(data, dict) else None)
        return model

    def for_agent(self, text: str) -> ScriptedModel:
        """The script of the sub-agent described by `text` (its description and brief)."""
        for index, (match, steps) in enumerate(self.agents):
            if match in text:
                del self.agents[index]
                return ScriptedModel(steps, label=f"{self.label} agent {match!r}", chunk_delay=self.chunk_delay)
        raise ScriptError(f"the script has no steps for the sub-agent {' '.join(text.split())[:80]!r}")

    @property
    def used(self) -> int:
        return len(self.requests)

    def assert_complete(self) -> None:
        if self._next != len(self.steps) or self._branch:
            raise AssertionError(f"scripted model used {self.used} of {len(self.steps)} steps")
        if self.agents:
            unused = ", ".join(repr(match) for match, _ in self.agents)
            raise AssertionError(f"scripted model: no sub-agent took the scripts for {unused}")

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

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        step = self._step(messages)
        self.requests.append([dict(m) for m in messages])
        self.tools_sent.append(len(tools))
        self.max_tokens_sent.append(max_tokens)
        if step.error == "overflow":
            raise ContextOverflowError(
                step.text or "request rejected (HTTP 400): the prompt exceeds the context window", window=step.window
            )
        if step.error:
            raise ModelError(step.text or "server error (HTTP 500): scripted failure")
        for start in range(0, len(step.reasoning), self.chunk_size):
            if self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
            yield Reasoning(step.reasoning[start : start + self.chunk_size])
        for start in range(0, len(step.text), self.chunk_size):
            if self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
            yield step.text[start : start + self.chunk_size]
        yield ModelResponse(
            reasoning=step.reasoning,
            content=step.text,
            tool_calls=step.tool_calls,
            finish_reason=step.finish_reason or ("tool_calls" if step.tool_calls else "stop"),
            usage=None if step.no_usage else step.usage or _scripted_usage(messages, tools, step),
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


def _scripted_usage(messages: Sequence[Message], tools: Sequence[dict[str, Any]], step: ScriptStep) -> ModelUsage:
    """A server-like count: the request's JSON at 4 characters a token (as `tests/fake_openai.py` counts)."""
    prompt = (len(json.dumps(list(messages))) + len(json.dumps(list(tools)))) // 4
    completion = (len(step.text) + sum(len(c.arguments) for c in step.tool_calls)) // 4
    return ModelUsage(prompt_tokens=prompt, completion_tokens=max(1, completion))


def _parse_agents(raw: Any) -> list[tuple[str, list[ScriptStep]]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ScriptError('"agents" must be a list of {"match": ..., "steps": [...]}')
    scripts = []
    for n, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("match"), str) or not entry["match"]:
            raise ScriptError(f'agents[{n}] needs a non-empty "match"')
        steps = entry.get("steps")
        if not isinstance(steps, list):
            raise ScriptError(f"agents[{n}] needs a list of steps")
        scripts.append((entry["match"], [_parse_step(i, s) for i, s in enumerate(steps)]))
    return scripts


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
    error = raw.get("error")
    if error not in (None, "overflow", "server"):
        raise ScriptError(f'step {index + 1}: "error" must be "overflow" or "server"')
    usage = raw.get("usage", {})
    rejected = tuple(_parse_step(index, step) for step in branch)
    return ScriptStep(
        text=valid_text(str(raw.get("message") or "") if error else str(raw.get("text") or "")),
        reasoning=valid_text(str(raw.get("reasoning") or "")),
        tool_calls=tuple(calls),
        finish_reason=str(raw["finish_reason"]) if raw.get("finish_reason") else None,
        usage=_parse_usage(index, usage) if usage else None,
        no_usage=usage is None,
        error=error,
        window=int(raw["window"]) if isinstance(raw.get("window"), int) else None,
        on_rejected=rejected,
    )


def _parse_usage(index: int, raw: Any) -> ModelUsage:
    if not isinstance(raw, dict) or not all(
        isinstance(raw.get(k), int) for k in ("prompt_tokens", "completion_tokens")
    ):
        raise ScriptError(f'step {index + 1}: "usage" needs integer prompt_tokens and completion_tokens')
    return ModelUsage(prompt_tokens=raw["prompt_tokens"], completion_tokens=raw["completion_tokens"])
