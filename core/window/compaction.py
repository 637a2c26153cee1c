"""Compaction: the older part of a long history replaced by a model-written summary.

`compact()` splits the history into an older part and a recent tail, asks the model
(a separate request: no tools, its own short system prompt) for a structured summary of
the older part, and returns the new history: one summary message, then the tail verbatim.

- The split never falls between an assistant message's tool calls and their `tool`
  replies, so the new history is as valid for the API as the old one.
- The older part is sent as a plain-text transcript (long tool results and arguments
  cut), in slices that fit the window; each slice's request carries the summary so far.
  A slice the server still refuses as too long is halved and tried again.
- What the person typed is never left to the summariser: their messages are appended
  to the summary verbatim, first and latest kept. They are taken from the record of the
  whole conversation (the session's transcript, which an earlier compaction did not
  shorten), never read back out of an earlier summary: that is model text, and a server
  could write a "person's words" header into it.
- The summary is the server's text: where it is embedded, the tags that frame it
  (`</summary>`, `</system-reminder>`) and the quotes' header are escaped, so it cannot
  end its own section and speak as the person or as todo-agent.
- An image is never sent to the summariser (nor its base64): the summariser reads the
  text parts of a message, and they name each image in one line (an `@` image's
  `<attachment-image path=… type=… summary=…/>`, Read's `image/png 1280×720, 210 KB: …`,
  an MCP result's `[image: …]`), which is all of it the new history keeps.
- The task list is not in the summary: the reminder rule puts the current list back on
  the next request (`core/tasks/reminders.py`, `since_compaction`).
- Any failure raises `CompactionError` and leaves the history untouched.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..model.base import ChatModel, ContextOverflowError, Message, ModelError, ModelResponse, content_text
from ..model.retry import RetryPolicy
from ..tasks.reminders import CLOSE_TAG, COMPACTED, OPEN_TAG, compaction_kept, wrap

log = logging.getLogger(__name__)

SUMMARY_SYSTEM = """You write handover notes for a coding agent whose conversation grew too long. \
The notes replace the earlier conversation, so the agent must be able to carry on from them alone.

Write these sections, briefly and exactly:
## Goal
What the person wants, in their own words where it matters.
## Decisions
Choices made and why; constraints the person set.
## Files
Files read, created or changed, and what changed in each.
## Done
What has been completed and checked.
## Remaining
What is left, and the very next step.

Keep paths, names, commands, numbers and error messages exact. Never invent anything. \
Do not call tools. The task list is kept separately: do not copy it."""

QUOTES_HEADER = "The person's own words, in order:"
_MAX_QUOTE = 500
_MAX_QUOTES = 12
_MAX_RESULT = 1500
_MAX_ARGUMENTS = 400
_MAX_TEXT = 4000
_MIN_SLICE = 800
"""Characters: a slice the server refuses even at this size means compaction cannot work."""


class CompactionError(Exception):
    """Compaction failed; the history is unchanged. The message says why."""


@dataclass(frozen=True)
class Compaction:
    history: list[Message]
    """The new history: the summary message, then the kept tail."""
    summarised: int
    """Messages folded into the summary."""
    kept: int
    """Messages kept verbatim after the summary."""
    requests: int
    """Summary requests it took."""


@dataclass(frozen=True)
class Limits:
    keep_tokens: int
    """The recent tail kept verbatim may hold up to this many tokens…"""
    latest_tokens: int
    """…except that the latest message (with the tool replies after it) is kept whenever it
    fits this many: the model has usually not even answered it yet."""
    summary_tokens: int
    """`max_tokens` of each summary request."""
    slice_chars: int
    """Characters of transcript per summary request."""


Counter = Callable[[Message], int]


async def compact(
    model: ChatModel,
    history: Sequence[Message],
    limits: Limits,
    count: Counter,
    focus: str = "",
    *,
    record: Sequence[object] | None = None,
    retry: RetryPolicy | None = None,
) -> Compaction:
    """Summarise the older part of `history`; raise `CompactionError` (history untouched).

    `record`: every message of the conversation in order, from before any compaction (the
    session's transcript; other items in it are skipped): where the person's words come
    from. Without it, only the person's messages still in `history` are quoted.
    `retry`: how a summary request that failed in a way that may pass (a 503, a dropped
    connection) is waited out, as the turn's own requests are; without it, not at all."""
    start = split_point(history, limits.keep_tokens, count, latest_tokens=limits.latest_tokens)
    older, tail = list(history[:start]), list(history[start:])
    if not older:
        raise CompactionError("nothing to compact yet")
    blocks = [block for message in older if (block := render(message))]
    summary, requests = await summarise(model, blocks, limits, focus, retry)
    said = person_words(older if record is None else record, tail[0] if tail else None)
    message = summary_message(summary, person_quotes(said), len(tail))
    return Compaction([message, *tail], summarised=len(older), kept=len(tail), requests=requests)


def split_point(history: Sequence[Message], keep_tokens: int, count: Counter, *, latest_tokens: int = 0) -> int:
    """Where the kept tail starts: the longest tail within `keep_tokens` that starts at a
    message other than a `tool` reply; the latest such message and its replies are kept
    anyway when they fit `latest_tokens`. At least one message is always summarised; when
    nothing fits, everything is (the tail is empty)."""
    best, total = len(history), 0
    for index in range(len(history) - 1, 0, -1):
        total += count(history[index])
        if total > (keep_tokens if best < len(history) else max(keep_tokens, latest_tokens)):
            break
        if history[index].get("role") != "tool":
            best = index
    return best


# --- the transcript the summariser reads -----------------------------------------------


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]}\n[… {len(text) - limit:,} characters cut …]\n{text[-(limit - head) :]}"


def _summary_body(content: str) -> str:
    body = content.removeprefix(OPEN_TAG).removesuffix(CLOSE_TAG).strip()
    return body.split("\n", 1)[1].strip() if "\n" in body else ""


def render(message: Message) -> str:
    """One message as transcript text for the summariser; "" for what it need not see."""
    role, text = message.get("role"), content_text(message.get("content"))
    if role == "user":
        if compaction_kept(message) is not None:
            return "Summary of what came before:\n" + _summary_body(text)
        if text.startswith(OPEN_TAG):
            return ""  # task-list reminders and nudges: the list is kept separately
        return "The person: " + _cut(text, _MAX_TEXT)
    if role == "assistant":
        lines = [f"Agent: {_cut(text, _MAX_TEXT)}"] if text.strip() else []
        for call in message.get("tool_calls") or []:
            function = (call.get("function") or {}) if isinstance(call, dict) else {}
            arguments = _cut(str(function.get("arguments") or ""), _MAX_ARGUMENTS)
            lines.append(f"Agent called {function.get('name', '?')}({arguments})")
        return "\n".join(lines)
    if role == "tool":
        return "Result: " + _cut(text, _MAX_RESULT)
    return ""


def person_words(record: Sequence[object], first_kept: Message | None) -> list[str]:
    """What the person typed, in order, up to `first_kept` (the first message the
    compaction keeps, found by identity): their own messages only, never a summary (model
    text) or a reminder."""
    said: list[str] = []
    for item in record:
        if item is first_kept:
            break
        if not isinstance(item, dict) or item.get("role") != "user" or compaction_kept(item) is not None:
            continue
        text = content_text(item.get("content"))
        if text.strip() and not text.startswith(OPEN_TAG):
            said.append(text)
    return said


def person_quotes(said: Sequence[str]) -> list[str]:
    """The person's messages, verbatim (each cut at 500 characters, on one line): the first
    one, which usually states the goal, and the latest ones, at most 12 in all."""
    quotes = [_cut(" ".join(text.split()), _MAX_QUOTE) for text in said]
    if len(quotes) > _MAX_QUOTES:
        quotes = [quotes[0], "…", *quotes[-(_MAX_QUOTES - 2) :]]
    return quotes


_FRAMING = re.compile(r"<(\s*/?\s*(?:summary|system-reminder)\b)", re.IGNORECASE)


def _escaped(summary: str) -> str:
    """The summary as it may be embedded: it cannot close its own section or the reminder
    around it, nor start a list of the person's words."""
    text = _FRAMING.sub(r"&lt;\1", summary.strip())
    return re.sub(re.escape(QUOTES_HEADER), "The person's own words (as these notes recall them):", text)


def summary_message(summary: str, quotes: Sequence[str], kept: int) -> Message:
    text = (
        f"{COMPACTED}: the earlier part is summarised here; the {kept} message(s) after this one are "
        f"kept as they were.\n\n<summary>\n{_escaped(summary)}\n</summary>"
    )
    if quotes:
        text += f"\n\n{QUOTES_HEADER}\n" + "\n".join(f"- {q}" for q in quotes)
    return {"role": "user", "content": wrap(text)}


# --- the summary requests ----------------------------------------------------------------


async def summarise(
    model: ChatModel, blocks: Sequence[str], limits: Limits, focus: str, retry: RetryPolicy | None = None
) -> tuple[str, int]:
    """Summarise `blocks` slice by slice; each request carries the summary so far."""
    summary, requests, size = "", 0, limits.slice_chars
    pending = list(blocks)
    waited, failures = 0.0, 0
    while pending:
        chunk, rest = take_slice(pending, size)
        requests += 1
        try:
            summary = await _ask(model, summary_request(chunk, summary, focus), limits.summary_tokens)
        except ContextOverflowError as exc:
            if size <= _MIN_SLICE:
                raise CompactionError(
                    f"even a small part of the conversation is too long to summarise ({exc})"
                ) from exc
            size = min(size, sum(len(block) + 2 for block in chunk)) // 2  # really smaller than what was refused
            continue
        except ModelError as exc:
            failures += 1
            wait = retry.next_wait(failures, waited, exc.retry_after) if retry and exc.retryable else None
            if wait is None or wait.seconds is None:
                why = f" ({wait.why})" if wait is not None and wait.why else ""
                raise CompactionError(f"the summary request failed: {exc.message}{why}") from exc
            log.info("summary request failed (%s); asking again in %.1f s", exc.message, wait.seconds)
            await asyncio.sleep(wait.seconds)  # the status line says "compacting"; esc cancels it
            waited += wait.seconds
            continue
        pending = rest
    return summary, requests


def take_slice(blocks: list[str], size: int) -> tuple[list[str], list[str]]:
    """The first blocks that fit `size` characters, and the rest; a block too big alone is split."""
    taken: list[str] = []
    total = 0
    for index, block in enumerate(blocks):
        if total + len(block) > size:
            if taken:
                return taken, blocks[index:]
            return [block[:size]], [block[size:], *blocks[index + 1 :]]
        taken.append(block)
        total += len(block) + 2
    return taken, []


def summary_request(chunk: Sequence[str], summary: str, focus: str) -> list[Message]:
    parts = []
    if focus.strip():
        parts.append(f"The person asks the notes to focus on: {focus.strip()}")
    if summary:
        parts.append(f"Your notes so far (update them with the conversation below):\n{summary}")
    parts.append("The conversation to summarise:\n\n" + "\n\n".join(chunk))
    return [{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


async def _ask(model: ChatModel, messages: list[Message], max_tokens: int) -> str:
    response: ModelResponse | None = None
    async for item in model.stream(messages, [], max_tokens=max_tokens):
        if isinstance(item, ModelResponse):
            response = item
    text = response.content.strip() if response is not None else ""
    if not text:
        raise CompactionError("the model returned an empty summary")
    if response is not None and response.finish_reason == "length":
        text += "\n[the notes were cut at the output limit]"
    return text
