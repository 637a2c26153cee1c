"""After a compaction, a note of the sub-agents: the summary must not make the main agent
start a second one for work one has done or is doing.

A `before_request` provider: once the history has been compacted, and no note came after
the latest compaction, it appends one (a `<system-reminder>`) listing every sub-agent of
the session, running or finished, with its task, status and its own summary. The plan
itself comes back through the task reminder (`core/tasks/reminders.py`); this adds who
worked on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..model.base import Message, content_text
from ..tasks.reminders import OPEN_TAG, reminder_message, since_compaction
from .records import Record, describe_records

HEADER = "Sub-agents of this session"


def team_note_provider(records: Callable[[], Sequence[Record]]) -> Callable[[Sequence[Message]], list[Message]]:
    def provide(history: Sequence[Message]) -> list[Message]:
        recent = since_compaction(history)
        if len(recent) == len(history):  # never compacted: the Agent calls are in view
            return []
        if any(_is_note(message) for message in recent):
            return []
        known = list(records())
        if not known:
            return []
        text = (
            f"{HEADER} (the summary above may leave them out; do not start another for work one has done or "
            "is doing):\n" + "\n".join(describe_records(known))
        )
        return [reminder_message(text)]

    return provide


def _is_note(message: Message) -> bool:
    text = content_text(message.get("content"))
    return message.get("role") == "user" and text.startswith(f"{OPEN_TAG}\n{HEADER}")
