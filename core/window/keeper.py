"""Keeping the conversation inside the model's context window.

The turn loop (`core/engine/loop.py`) asks `WindowKeeper` how much of a tool result to keep,
whether a compaction is due before a request (the prompt would pass `compact_threshold`
of the window), to compact now (automatically, on `/compact`, or after the server refused
a request as too long), and what the refusal said about the server's window. A prompt
that cannot be sent even so is taken back out of the history. The summary itself is written by
`core/window/compaction.py`; this module decides when, with which sizes, and keeps the history,
the session file and the token counts in step with the result.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..events import Compacted, Compacting, Event, Notice
from ..lifecycle import CompactInfo, Lifecycle
from ..model.base import ChatModel, ContextOverflowError, Message
from ..model.retry import RetryPolicy
from ..model.scripted import ScriptError
from ..session.transcript import CompactionMark, Session
from . import compaction
from .tokens import ContextBudget, TokenCounter, unbelievable_window

log = logging.getLogger(__name__)

Trigger = Literal["auto", "manual", "overflow"]

MAX_TOOL_OUTPUT = 100_000
"""Characters of one tool result kept in history at most, whatever the window."""
MIN_TOOL_OUTPUT = 2_000


class Conversation(Protocol):
    """The agent, as far as its window is concerned (`core/engine/loop.py`'s `Agent`)."""

    model: ChatModel
    lifecycle: Lifecycle
    history: list[Message]
    session: Session | None
    budget: ContextBudget
    counter: TokenCounter
    context_tokens: int

    def prompt_estimate(self) -> int: ...

    def prefix_tokens(self) -> int: ...

    def request_messages(self, history: Sequence[Message] | None = None) -> list[Message]: ...

    def schemas(self) -> list[dict[str, Any]]: ...


@dataclass
class WindowKeeper:
    conversation: Conversation
    floor: int = 0
    """After a compaction that could not get below the threshold: the size the prompt must
    grow past before the next automatic one (so it does not run on every request)."""
    retry: Callable[[], RetryPolicy] | None = None
    """How a summary request that failed in a way that may pass is waited out (the turn's
    own policy, `request_retries`, as it is at the time); None: not at all."""

    def compaction_due(self) -> bool:
        conv = self.conversation
        return len(conv.history) > 1 and conv.prompt_estimate() > max(conv.budget.trigger, self.floor)

    async def compact(self, trigger: Trigger, focus: str = "") -> AsyncIterator[Event]:
        """Summarise the older history; yields `Compacted`, or an error notice and changes nothing."""
        conv = self.conversation
        if len(conv.history) < 2:
            yield Notice("nothing to compact yet", "info")
            return
        before = conv.prompt_estimate()
        for event in await conv.lifecycle.notify_before_compact(CompactInfo(trigger, focus, before)):
            yield event
        yield Compacting(trigger, before)
        try:
            record = conv.session.transcript if conv.session is not None else None
            result = await compaction.compact(
                conv.model,
                conv.history,
                self.limits(trigger),
                conv.counter.message_tokens,
                focus,
                record=record,
                retry=self.retry() if self.retry else None,
            )
        except (compaction.CompactionError, ScriptError) as exc:
            yield Notice(f"could not compact the conversation: {exc}; it is unchanged", "error")
            return
        except Exception as exc:  # a summary that fails in a way nobody foresaw must not cost the session
            log.exception("compaction failed")
            yield Notice(f"could not compact the conversation ({type(exc).__name__}: {exc}); it is unchanged", "error")
            return
        after = conv.counter.estimate(conv.request_messages(result.history), conv.schemas())
        if after >= before:  # a short history: its summary would take more room, not less
            self.floor = before + self._margin()
            yield Notice("nothing to gain from compacting yet: the summary would not be shorter", "info")
            return
        self._replace_history(result, before, after, trigger)
        conv.context_tokens = after
        self.floor = after + self._margin() if after > conv.budget.trigger else 0
        yield Compacted(before, after, trigger, result.summarised, result.kept)

    def limits(self, trigger: Trigger) -> compaction.Limits:
        """Sizes from the room the window leaves: the verbatim tail may hold 30% of it (a
        quarter of the history at most on `/compact`, which is asked for to free room), or
        half of it if that is what the latest message takes (not on `/compact`), the summary a quarter (200–2,048
        tokens), and each summary request most of the window."""
        conv = self.conversation
        room = conv.budget.room(conv.prefix_tokens())
        keep, latest = room * 3 // 10, room // 2
        if trigger == "manual":
            keep = latest = min(keep, sum(conv.counter.message_tokens(m) for m in conv.history) // 4)
        window = conv.budget.window
        summary_tokens = max(200, min(2048, room // 4))
        slice_tokens = max(500, int((window - summary_tokens - 800) * 0.8))
        return compaction.Limits(
            keep_tokens=keep,
            latest_tokens=latest,
            summary_tokens=summary_tokens,
            slice_chars=int(slice_tokens * conv.counter.chars_per_token),
        )

    def learn_window(self, overflow: ContextOverflowError) -> list[Event]:
        """The server named its window (or the prompt's size) in the refusal: believe it."""
        conv, budget = self.conversation, self.conversation.budget
        if overflow.prompt_tokens:
            conv.counter.calibrate(conv.request_messages(), conv.schemas(), overflow.prompt_tokens)
        if not overflow.window or overflow.window == budget.window:
            return []
        if (problem := unbelievable_window(overflow.window, "the server's refusal")) is not None:
            return [Notice(f"{problem}; keeping {budget.window:,}", "warning")]
        old, budget.window, budget.source = budget.window, overflow.window, "server"
        return [Notice(f"the server's context window is {overflow.window:,} tokens, not {old:,}; using it", "warning")]

    def tool_output_limit(self) -> int:
        """The most characters one tool result (or one `@` attachment) may take."""
        conv = self.conversation
        room = conv.budget.room(conv.prefix_tokens())
        return max(MIN_TOOL_OUTPUT, min(MAX_TOOL_OUTPUT, int(room / 3 * conv.counter.chars_per_token)))

    def cap_tool_output(self, text: str) -> str:
        """A tool result as it enters history: cut in the middle when one result alone would
        take more than a third of the room the window leaves (2,000–100,000 characters), so
        a few results fit between compactions and the latest one is always kept verbatim."""
        limit = self.tool_output_limit()
        if len(text) <= limit:
            return text
        head = limit * 2 // 3
        note = (
            f"\n[… {len(text) - limit:,} characters cut from the middle: this result is too long for the context "
            "window. Read it in smaller pieces (Read with offset and limit, Grep, a narrower command) …]\n"
        )
        return text[:head] + note + text[len(text) - (limit - head) :]

    def take_back(self, prompt: Message) -> str:
        """A prompt the model never answered because it cannot be sent is taken back out of
        the history (with the reminders after it), so retrying does not grow every later
        request. Returns a note for the error message."""
        conv = self.conversation
        index = next((i for i in range(len(conv.history) - 1, -1, -1) if conv.history[i] is prompt), None)
        if index is None:
            return ""
        if conv.session is not None:
            conv.session.rewind(index)
        else:
            del conv.history[index:]
        conv.counter.forget()
        conv.context_tokens = conv.prompt_estimate()
        return " (this message was not kept in the conversation; send it again)"

    def _margin(self) -> int:
        return max(256, self.conversation.budget.window // 20)

    def _replace_history(self, result: compaction.Compaction, before: int, after: int, trigger: Trigger) -> None:
        conv = self.conversation
        conv.counter.forget()
        summary = result.history[0]
        if conv.session is not None:
            mark = CompactionMark(before, after, trigger, result.summarised, str(summary["content"]))
            conv.session.compact(summary, result.kept, mark)
        else:
            conv.history[:] = result.history
