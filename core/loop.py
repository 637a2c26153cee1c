"""The agent turn: an async generator of events.

One turn: append the prompt; then, until the model stops calling tools, run the
`before_request` providers, call the model, and run the response's tool calls as one
batch. History is valid for the API after every step: each assistant tool call gets a
`tool` reply (results, errors, denials, cancellations) before the next request.

Interrupting (`Agent.interrupt()`) cancels whatever the turn awaits (model stream,
approval, tools; a running Bash is killed with its process group); the turn then
repairs history and ends with `TurnEnd("interrupted")`. It does so by cancelling the
task that iterates the turn, so iterate it in a task that awaits nothing else between
events (the TUI pumps it into a queue: `tui/turns.py`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .batch import BatchRunner
from .events import (
    AssistantMessage,
    Error,
    Event,
    Notice,
    ResponseDiscarded,
    TextDelta,
    TurnEnd,
    Usage,
)
from .history import missing_replies
from .lifecycle import Lifecycle, TurnState
from .model import ChatModel, Message, ModelError, ModelResponse, ScriptError, ToolCall
from .permissions import Approver, PermissionPolicy
from .session import Session
from .tools.base import Tool, strict_json

log = logging.getLogger(__name__)


@dataclass
class AgentOptions:
    max_steps: int = 200
    """Model requests per user turn before the agent stops and asks the person."""
    stream_retries: int = 2
    """Extra attempts after a response that failed part-way (cut off, server error)."""
    retry_delay: float = 1.0
    """Seconds before the first retry; doubles each time."""


@dataclass
class Agent:
    model: ChatModel
    tools: Sequence[Tool]
    workspace: Path
    permissions: PermissionPolicy
    system_prompt: str
    session: Session | None = None
    approver: Approver | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    options: AgentOptions = field(default_factory=AgentOptions)
    history: list[Message] = field(default_factory=list)
    busy: bool = False
    context_tokens: int = 0
    """Prompt plus completion tokens of the latest response: how full the context is."""
    _task: asyncio.Task[Any] | None = field(default=None, repr=False)
    _interrupting: bool = field(default=False, repr=False)
    _partial: list[str] = field(default_factory=list, repr=False)
    """The text streamed so far, in pieces: `+=` on an attribute copies the whole text per
    token, which made a 2 MB answer quadratic."""
    _batch: BatchRunner | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.session is not None:
            self.history = self.session.messages

    # --- public ---------------------------------------------------------------------

    async def run_turn(self, prompt: str) -> AsyncGenerator[Event, None]:
        """Run one user turn. Consume with `async with aclosing(agent.run_turn(p))`."""
        if self.busy:
            raise RuntimeError("a turn is already running")
        self.busy, self._interrupting = True, False
        self._task = asyncio.current_task()
        try:
            async for event in self._turn(prompt):
                yield event
        except asyncio.CancelledError:
            if not self._interrupting or self._task is None:
                raise
            self._task.uncancel()
            for event in self._finish_interrupted():
                yield event
        finally:
            self._repair()
            self.busy, self._task, self._batch = False, None, None

    def interrupt(self) -> None:
        """End the running turn as soon as possible; safe to call at any time."""
        if self._task is not None and not self._interrupting:
            self._interrupting = True
            self._task.cancel()

    # --- the turn -------------------------------------------------------------------

    async def _turn(self, prompt: str) -> AsyncIterator[Event]:
        self.append({"role": "user", "content": prompt})
        continuations = 0
        for _ in range(self.options.max_steps):
            for message in self.lifecycle.collect_before_request(self.history):
                self.append(message)
            response: ModelResponse | None = None
            async for item in self._call_model():
                if isinstance(item, ModelResponse):
                    response = item
                else:
                    yield item
            if response is None:
                yield TurnEnd("error")
                return
            calls = self._record_assistant(response)
            yield AssistantMessage(response.content, len(calls))
            if not calls:
                follow_up = self.lifecycle.check_turn_end(TurnState(self.history, continuations))
                if follow_up is None:
                    yield TurnEnd("done", response.content)
                    return
                continuations += 1
                self.append({"role": "user", "content": follow_up})
                continue
            self._batch = BatchRunner(self, calls)
            async for event in self._batch.run():
                yield event
            if self._batch.rejected:
                yield TurnEnd("rejected")
                return
        yield Notice(f"stopped after {self.options.max_steps} model requests in one turn", "warning")
        yield TurnEnd("max_steps")

    async def _call_model(self) -> AsyncIterator[Event | ModelResponse]:
        """One model request, retried when a response fails part-way."""
        schemas = [tool.schema() for tool in self.tools]
        for attempt in range(1, self.options.stream_retries + 2):
            self._partial = []
            messages = [{"role": "system", "content": self.system_prompt}, *self.history]
            try:
                async for item in self.model.stream(messages, schemas):
                    if isinstance(item, str):
                        self._partial.append(item)
                        yield TextDelta(item)
                        continue
                    self._partial = []
                    usage = self._usage(item, messages)
                    self.context_tokens = usage.prompt_tokens + usage.completion_tokens
                    yield usage
                    yield item
                    return
                raise ModelError("the model stream ended without a response", retryable=True)
            except ModelError as exc:
                if not exc.retryable or attempt > self.options.stream_retries:
                    self._partial = []
                    yield Error(exc.message)
                    return
                if self._partial:
                    self._partial = []  # void: an interrupt during the wait must not save it
                    yield ResponseDiscarded(exc.message, attempt)
                yield Notice(f"{exc.message}; retrying ({attempt}/{self.options.stream_retries})", "warning")
                await asyncio.sleep(self.options.retry_delay * 2 ** (attempt - 1))
            except ScriptError as exc:
                yield Error(str(exc))
                return
            except Exception as exc:  # a model client bug or output nobody foresaw: end the turn, keep the session
                log.exception("model stream failed")
                self._partial = []
                yield Error(f"the model's response could not be read ({type(exc).__name__}: {exc})")
                return

    def _record_assistant(self, response: ModelResponse) -> list[ToolCall]:
        """Append the assistant message; tool calls are stored with valid JSON arguments.

        Servers answer HTTP 500 to a history holding invalid JSON arguments, so a call
        whose arguments do not parse is stored as `{}` (the batch answers it with an error).
        """
        calls: list[ToolCall] = []
        # Ids must be unique across the whole history: servers that send none get ids from
        # a per-process counter, so a resumed session would repeat call_1, call_2, …
        seen = {
            str(c.get("id")) for m in self.history if m.get("role") == "assistant" for c in m.get("tool_calls") or []
        }
        for n, call in enumerate(response.tool_calls, start=1):
            call_id = call.id if call.id and call.id not in seen else f"call_{len(self.history)}_{n}"
            seen.add(call_id)
            calls.append(ToolCall(call_id, call.name, call.arguments))
        message: Message = {"role": "assistant", "content": response.content or (None if calls else "")}
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _storable_arguments(c.arguments)},
                }
                for c in calls
            ]
        self.append(message)
        return calls

    # --- helpers --------------------------------------------------------------------

    def append(self, message: Message, status: str | None = None) -> None:
        """Add to history (and the session file). `status` is how a tool call ended."""
        if self.session is not None:
            self.session.append(message, status)
        else:
            self.history.append(message)

    def _repair(self) -> None:
        """Answer every unanswered tool call (cancelled) so the history stays valid."""
        partial, self._partial = "".join(self._partial), []
        if partial:
            self.append({"role": "assistant", "content": partial + "\n\n[interrupted by the user]"})
        for message in missing_replies(self.history):
            self.append(message, "cancelled")

    def _finish_interrupted(self) -> list[Event]:
        events: list[Event] = []
        if self._batch is not None:
            events.extend(self._batch.cancel_remaining())
        self._repair()
        events.append(Notice("interrupted: the rest of this turn was cancelled", "warning"))
        events.append(TurnEnd("interrupted"))
        return events

    @staticmethod
    def _usage(response: ModelResponse, messages: list[Message]) -> Usage:
        if response.usage is not None:
            return Usage(response.usage.prompt_tokens, response.usage.completion_tokens)
        prompt_chars = sum(len(json.dumps(m, ensure_ascii=False)) for m in messages)
        completion_chars = len(response.content) + sum(len(c.arguments) for c in response.tool_calls)
        return Usage(prompt_chars // 4, max(1, completion_chars // 4), estimated=True)


def _storable_arguments(raw: str) -> str:
    try:
        strict_json(raw or "{}")
    except ValueError:  # includes JSONDecodeError; NaN/Infinity are not JSON either
        return "{}"
    return raw or "{}"
