"""Putting the task list back in front of the model: small lifecycle providers.

`task_reminder_provider` runs before every model request and appends at most one
reminder, each carrying the whole current list (the seeds' design: the newest state near
the end of the context), in the panel's compact form (`◼ #2 Add pagination`):

1. The person edited the list in the panel since the last request: deliver that change
   log once, with the list (even when nothing is unfinished any more, and even right
   after a task-tool call: it is news the model cannot have seen).
2. Nothing unfinished: nothing. Right after the model's own task-tool call: nothing.
3. The history holds no task-tool call and no earlier reminder (a resumed session):
   `This is the current task list for this session` and the list. After a compaction
   only what was appended since counts: the summary message says how many messages after
   it were kept verbatim, and task-tool calls or reminders among those were made before
   the compaction, so the very next request after a compaction always carries the list
   (this is how the plan survives compaction, and a resume of a compacted session).
4. The work rules, from what the tools did (`Work`, fed by `work_observer`):
   (a) files changed (Edit, Write, or a command: the change records' scan runs around
   every command for the prompt's checkpoint) while tasks are open and none is in
   progress: name them;
   (b) the task in progress has gone `stale_after` tool calls with no plan change:
   name it, with the count and the files it changed (again after as many more calls).
5. The interval (a fallback, `interval`, 0 turns it off): count the assistant messages
   after the latest one that called a task tool, or after the latest reminder; when the
   count reaches `interval`: `You have not updated the task list in the last N steps`.
   So with interval 6, a task-tool call in response k leaves requests k+1 … k+6 alone
   and puts a reminder before request k+7. With the work rules on, it speaks only while
   no task of the agent's is in progress: a task in progress is rule (b)'s to name, by
   the calls made under it (counting steps there reminded a model that kept its list at
   every task's end twice a task: `benchmarks/plan_cost.py`).

How an earlier reminder is recognised: a `user` message whose content is a string that
starts with `<system-reminder>` + newline immediately followed by one of the fixed
headers in `HEADERS`, and ends with newline + `</system-reminder>`. Text a person types
that merely contains the tag (or quotes a reminder after other text) does not count.
The stop check's message has such a header too: it shows the list, so it counts.

`unfinished_stop_check` runs when the model ends its turn: with a task of its own still in
progress it asks once per user turn to finish it or set it back to pending, naming what
changed under each open task (a task a sub-agent has claimed is that sub-agent's to
finish, and the harness settles it).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from ..model.base import Message
from .model import Task
from .render import render_for_model
from .store import TaskStore

OPEN_TAG = "<system-reminder>"
CLOSE_TAG = "</system-reminder>"
TASK_TOOL_NAMES = frozenset({"TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TodoWrite"})
DEFAULT_INTERVAL = 6

DEFAULT_STALE_AFTER = 15
PLAN_CHANGERS = frozenset({"TaskCreate", "TaskUpdate", "TodoWrite"})

NOT_VISIBLE = "This is the current task list for this session"
STALE = "You have not updated the task list in the last"
USER_EDITED = "The user edited the task list:"
UNFINISHED = "You still have unfinished tasks:"
UNTRACKED = "You changed files while no task is in progress:"
STUCK = "The task in progress has not moved in"
HEADERS = (NOT_VISIBLE, STALE, USER_EDITED, UNFINISHED, UNTRACKED, STUCK)


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


def reminder_text(message: Message) -> str | None:
    """A `<system-reminder>` user message's text without the tags (None for any other message)."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, str):
        return None
    head, tail = OPEN_TAG + "\n", "\n" + CLOSE_TAG
    if not content.startswith(head) or not content.endswith(tail):
        return None
    return content[len(head) : -len(tail)]


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


class Work:
    """What the main agent's tools did since the plan last changed: what the work rules
    read that the history does not hold (what a call changed)."""

    def __init__(self) -> None:
        self.calls = 0
        """Tool calls other than task tools since the last plan change."""
        self.told_at = 0
        """`calls` when the task in progress was last named as stale."""
        self.untracked: dict[str, None] = {}
        """Files changed while no task was in progress, not told yet (in order)."""

    def observe(self, record: Called, in_progress: bool) -> None:
        if record.kind == "task":
            if record.name in PLAN_CHANGERS and not record.is_error:
                self.plan_changed()
            return
        self.calls += 1
        if in_progress or record.is_error:
            return
        # What the change records saw change (Edit, Write, a command: the scan runs for every
        # prompt's checkpoint); an edit's declared files where they saw nothing.
        files = record.changed or (record.writes if record.kind == "edit" else ())
        self.untracked.update(dict.fromkeys(files))

    def plan_changed(self) -> None:
        self.calls = self.told_at = 0
        self.untracked.clear()


class Called(Protocol):
    """What `Work` reads of a tool call that ran (the lifecycle's `ToolRecord`)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def is_error(self) -> bool: ...
    @property
    def writes(self) -> tuple[str, ...]: ...
    @property
    def changed(self) -> list[str]: ...


def work_observer(work: Work, store: TaskStore) -> Callable[[Called], Awaitable[None]]:
    """A `tool_done` observer that feeds `work` (the main agent's calls)."""

    async def observe(record: Called) -> None:
        work.observe(record, in_progress=store.current() is not None)

    return observe


FilesOf = Callable[[str], Sequence[str]]
"""A task id → the files changed under it (the change records), for the reminders' words."""


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f<]")


def _names(paths: Sequence[str], shown: int = 5) -> str:
    """File names as the reminder lists them, a control character (a newline in a name the
    model made up) and `<` written as escapes, so a name cannot end the reminder's line or
    its tags."""
    listed = ", ".join(_CONTROL.sub(lambda c: f"\\x{ord(c.group()):02x}", path) for path in paths[:shown])
    return f"{listed} and {len(paths) - shown} more" if len(paths) > shown else listed


def _work_rule(store: TaskStore, work: Work, stale_after: int, files_of: FilesOf) -> str | None:
    """The reminder the work calls for, if any (and noted as told)."""
    current = store.current()
    if work.untracked and current is None:
        files, work.untracked = list(work.untracked), {}
        ids = " ".join(f"#{t.id}" for t in store.unfinished() if t.claim is None)
        return (
            f"{UNTRACKED} {_names(files)}. Mark the task this work belongs to in_progress (open: {ids}), "
            "or add one for it."
        )
    if current is not None and stale_after > 0 and work.calls - work.told_at >= stale_after:
        work.told_at = work.calls
        files = list(files_of(current.id))
        changed = f", having changed {_names(files)}" if files else ""
        return (
            f'{STUCK} {work.calls} tool calls: #{current.id} "{current.subject}" is still in_progress{changed}. '
            "If it is done, mark it completed and go on; if the work moved on, update the list."
        )
    return None


def task_reminder_provider(
    store: TaskStore,
    interval: int = DEFAULT_INTERVAL,
    work: Work | None = None,
    stale_after: int = DEFAULT_STALE_AFTER,
    files_of: FilesOf = lambda task_id: (),
) -> Callable[[Sequence[Message]], list[Message]]:
    """A `before_request` provider (see `core/lifecycle.py`); `work` turns the work rules on."""

    def provide(history: Sequence[Message]) -> list[Message]:
        changes = store.take_user_changes()
        if changes:
            if work is not None:
                work.plan_changed()
            listing = render_for_model(store.snapshot())
            return [reminder_message(f"{USER_EDITED} {'; '.join(changes)}. Follow the updated list.\n\n{listing}")]
        if not store.unfinished():
            if work is not None:
                work.untracked.clear()  # nothing was open: the work belonged to no task
            return []
        if just_called_task_tool(history):
            return []
        steps = steps_since_task_list(history)
        if steps is None:
            text = f"{NOT_VISIBLE}. Continue from it and keep it up to date with the task tools."
        elif work is not None and (rule := _work_rule(store, work, stale_after, files_of)) is not None:
            text = rule
        elif interval > 0 and steps >= interval and (work is None or stale_after == 0 or store.current() is None):
            text = (
                f"{STALE} {steps} steps. If you have made progress, update it now: mark finished tasks "
                "completed and the one you are working on in_progress. Do not mention this reminder "
                "to the user."
            )
        else:
            return []  # the common case: no reminder, so nothing is rendered
        return [reminder_message(f"{text}\n\n{render_for_model(store.snapshot())}")]

    return provide


def just_called_task_tool(history: Sequence[Message]) -> bool:
    """The latest assistant message called a task tool (its results may follow it); what
    came before the latest compaction was not seen since, so it does not count."""
    for message in reversed(since_compaction(history)):
        if message.get("role") == "assistant":
            return calls_task_tool(message)
    return False


class TurnEnd(Protocol):
    """What the stop check reads of the lifecycle's `TurnState` (the task list knows no engine)."""

    @property
    def continuations(self) -> int: ...


def unfinished_stop_check(store: TaskStore, files_of: FilesOf = lambda task_id: ()) -> Callable[[TurnEnd], str | None]:
    """A `turn_end` check (see `core/lifecycle.py`): names the tasks left in progress, and
    what changed under each open task, so the model can square the list with the work."""

    def check(state: TurnEnd) -> str | None:
        if state.continuations >= 1:
            return None
        active = [t for t in store.in_progress() if t.claim is None]
        if not active:
            return None
        names = ", ".join(f'#{t.id} "{t.subject}"' for t in active)
        done = "; ".join(_done_under(t, files_of) for t in store.unfinished() if t.claim is None)
        return wrap(
            f"{UNFINISHED} {names} still in_progress. Finish the work and mark it completed, "
            "or set it back to pending if it cannot be finished now; then end your turn.\n"
            f"Done under the open tasks: {done}.\n\n"
            f"{render_for_model(store.snapshot())}"
        )

    return check


def _done_under(task: Task, files_of: FilesOf) -> str:
    """`#2 7 calls, changed api.py, test_api.py`, `#3 nothing yet`."""
    files = list(files_of(task.id))
    if not task.tool_calls and not files:
        return f"#{task.id} nothing yet"
    calls = f"{task.tool_calls} call{'' if task.tool_calls == 1 else 's'}"
    return f"#{task.id} {calls}" + (f", changed {_names(files)}" if files else ", no file changed")
