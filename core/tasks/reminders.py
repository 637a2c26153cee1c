"""Putting the task list back in front of the model: small lifecycle providers.

`task_reminder_provider` runs before every model request and decides from the history
alone (no flags, no counters) whether to append a reminder:

1. The person edited the list in the panel since the last request: deliver that change
   log once, with the list (even when nothing is unfinished any more, and even right
   after a task-tool call: it is news the model cannot have seen).
2. Nothing unfinished: nothing.
3. The history holds no task-tool call and no earlier reminder (a resumed session):
   `This is the current task list for this session` and the list. After a compaction
   only what was appended since counts: the summary message says how many messages after
   it were kept verbatim, and task-tool calls or reminders among those were made before
   the compaction, so the very next request after a compaction always carries the list
   (this is how the plan survives compaction, and a resume of a compacted session).
4. Otherwise count the assistant messages after the latest one that called a task tool,
   or after the latest reminder. When that count reaches `interval` (0 turns this rule
   off): `You have not updated the task list in the last N steps` and the list. So with
   interval 6, a task-tool call in response k leaves requests k+1 … k+6 alone and puts a
   reminder before request k+7; in particular never right after a task-tool call.

How an earlier reminder is recognised: a `user` message whose content is a string that
starts with `<system-reminder>` + newline immediately followed by one of the fixed
headers in `HEADERS`, and ends with newline + `</system-reminder>`. Text a person types
that merely contains the tag (or quotes a reminder after other text) does not count.
The stop check's message has such a header too: it shows the list, so it counts.

`unfinished_stop_check` runs when the model ends its turn: with a task of its own still in
progress it asks once per user turn to finish it or set it back to pending (a task a
sub-agent has claimed is that sub-agent's to finish, and the harness settles it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..model.base import Message
from .render import render_for_model
from .store import TaskStore

OPEN_TAG = "<system-reminder>"
CLOSE_TAG = "</system-reminder>"
TASK_TOOL_NAMES = frozenset({"TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TodoWrite"})
DEFAULT_INTERVAL = 6

NOT_VISIBLE = "This is the current task list for this session"
STALE = "You have not updated the task list in the last"
USER_EDITED = "The user edited the task list:"
UNFINISHED = "You still have unfinished tasks:"
HEADERS = (NOT_VISIBLE, STALE, USER_EDITED, UNFINISHED)


COMPACTED = "This conversation was compacted"
"""How a compaction summary message starts (inside the reminder tags); see `core/window/compaction.py`."""
_KEPT = re.compile(r"the (\d+) message\(s\) after this one")


def compaction_kept(message: Message) -> int | None:
    """For a compaction summary message: how many messages after it were kept verbatim."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, str):
        return None
    if not content.startswith(f"{OPEN_TAG}\n{COMPACTED}"):
        return None
    first_line = content.split("\n", 2)[1]
    found = _KEPT.search(first_line)
    return int(found.group(1)) if found else 0


def since_compaction(history: Sequence[Message]) -> Sequence[Message]:
    """The messages appended after the latest compaction (all of them when there was none)."""
    for index in range(len(history) - 1, -1, -1):
        kept = compaction_kept(history[index])
        if kept is not None:
            return history[index + 1 + kept :]
    return history


def wrap(text: str) -> str:
    return f"{OPEN_TAG}\n{text}\n{CLOSE_TAG}"


def reminder_message(text: str) -> Message:
    return {"role": "user", "content": wrap(text)}


def is_task_reminder(message: Message) -> bool:
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, str):
        return False
    head = OPEN_TAG + "\n"
    if not content.startswith(head) or not content.endswith("\n" + CLOSE_TAG):
        return False
    return content[len(head) :].startswith(HEADERS)


def calls_task_tool(message: Message) -> bool:
    if message.get("role") != "assistant":
        return False
    calls: Any = message.get("tool_calls") or []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and function.get("name") in TASK_TOOL_NAMES:
            return True
    return False


def steps_since_task_list(history: Sequence[Message]) -> int | None:
    """Assistant messages after the latest task-tool call or reminder; None when neither is
    there (counting only what came after the latest compaction)."""
    steps = 0
    for message in reversed(since_compaction(history)):
        if calls_task_tool(message) or is_task_reminder(message):
            return steps
        if message.get("role") == "assistant":
            steps += 1
    return None


def task_reminder_provider(
    store: TaskStore, interval: int = DEFAULT_INTERVAL
) -> Callable[[Sequence[Message]], list[Message]]:
    """A `before_request` provider (see `core/lifecycle.py`)."""

    def provide(history: Sequence[Message]) -> list[Message]:
        changes = store.take_user_changes()
        if changes:
            listing = render_for_model(store.snapshot())
            return [reminder_message(f"{USER_EDITED} {'; '.join(changes)}. Follow the updated list.\n\n{listing}")]
        if not store.unfinished():
            return []
        steps = steps_since_task_list(history)
        if steps is None:
            text = f"{NOT_VISIBLE}. Continue from it and keep it up to date with the task tools."
        elif interval > 0 and steps >= interval:
            text = (
                f"{STALE} {steps} steps. If you have made progress, update it now: mark finished tasks "
                "completed and the one you are working on in_progress. Do not mention this reminder "
                "to the user."
            )
        else:
            return []  # the common case: no reminder, so nothing is rendered
        return [reminder_message(f"{text}\n\n{render_for_model(store.snapshot())}")]

    return provide


class TurnEnd(Protocol):
    """What the stop check reads of the lifecycle's `TurnState` (the task list knows no engine)."""

    @property
    def continuations(self) -> int: ...


def unfinished_stop_check(store: TaskStore) -> Callable[[TurnEnd], str | None]:
    """A `turn_end` check (see `core/lifecycle.py`)."""

    def check(state: TurnEnd) -> str | None:
        if state.continuations >= 1:
            return None
        active = [t for t in store.in_progress() if t.claim is None]
        if not active:
            return None
        names = ", ".join(f'#{t.id} "{t.subject}"' for t in active)
        return wrap(
            f"{UNFINISHED} {names} still in_progress. Finish the work and mark it completed, "
            "or set it back to pending if it cannot be finished now; then end your turn.\n\n"
            f"{render_for_model(store.snapshot())}"
        )

    return check
