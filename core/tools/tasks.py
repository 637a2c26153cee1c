"""Task tools: the model keeps its plan in the session's `TaskStore`.

v2 (incremental): TaskCreate, TaskUpdate, TaskList, TaskGet. v1 (whole list): TodoWrite.
All are `kind="task"`: they only touch the agent's own list, so they never need
approval. A sub-agent (`ctx.agent`) works the same list under the rules in
`core/tasks/rules.py`: it may update only the task it claimed (status, activeForm,
metadata) and the subtasks it creates, which are tagged with its name and session; a link
it adds may change only tasks of those two kinds, at both ends.

Models often send arguments as JSON text or Python literals (`"[{'content':
…}]"`, `taskId: 3`, `"#3"`, `addBlockedBy: "1,2"`); those are normalised here, and
anything still wrong becomes one clear `ToolError` line.

TaskCreated / TaskCompleted hooks (`ctx.task_gates`) are asked before a change is made:
the change is first worked out on the current list without saving it, and each task it
would create or complete goes to the gates. A refusal fails the whole call with the
hook's reason and the list stays as it was (a TodoWrite is all or nothing). Edits the
person makes in the task panel ask no hooks: the person is the authority on the plan.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BeforeValidator, Field, ValidationInfo, WithJsonSchema

from ..events import TasksUpdated
from ..lifecycle import TaskChange, run_gates
from ..tasks import budgets, rules
from ..tasks.budgets import spend_line
from ..tasks.model import STATUSES, Budget, CheckRun, StoreError, Task, TodoItem
from ..tasks.render import render_for_model
from ..tasks.rules import open_blockers, short_id
from ..tasks.store import TaskStore
from .arguments import Arguments, Label, RequiredLabel, fail, structured
from .base import Tool, declare, parse_as, short
from .context import ToolContext
from .results import ToolError
from .task_checks import check_commands, passed_note, refusal, run_check

R = TypeVar("R")

SYSTEM_PROMPT_LINE_V2 = (
    "Plan work of three or more steps (or several requests at once) with the task tools: "
    "TaskCreate one task per step, TaskUpdate it to in_progress before you start it and to completed "
    "as soon as it is done; skip the list for one-step work."
)
SYSTEM_PROMPT_LINE_V1 = (
    "Plan work of three or more steps (or several requests at once) with TodoWrite: list the steps, "
    "mark one in_progress before you start it and completed as soon as it is done; "
    "skip the list for one-step work."
)
SYSTEM_PROMPT_LINE = SYSTEM_PROMPT_LINE_V2


# --- arguments ----------------------------------------------------------------------


def task_id(value: Any, key: str = "taskId") -> str:
    """`3`, `3.0`, `"3"`, `"#3"` and `" 03 "` all mean task "3"."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str):
        text = value.strip().removeprefix("#").strip()
        if text.isascii() and text.isdigit():
            # Not int(): Python refuses to convert 4,300+ digits, and an id is only a name.
            return text.lstrip("0") or "0"
    raise fail(f"parameter '{key}' must be a task id such as \"3\", got {value!r}")


def _required_id(value: Any, info: ValidationInfo) -> str:
    if value is None:
        raise fail(f"missing required parameter '{info.field_name}'")
    return task_id(value, info.field_name or "taskId")


def _id_list(value: Any, info: ValidationInfo) -> tuple[str, ...]:
    """Task ids given as a list, a JSON/Python list in a string, or text like "1, #2"."""
    if value is None:
        return ()
    value = structured(value)
    if isinstance(value, str):
        value = [part for part in re.split(r"[\s,;]+", value) if part]
    elif not isinstance(value, list | tuple):
        value = [value]
    return tuple(task_id(item, info.field_name or "ids") for item in value)


def _status(value: Any) -> str | None:
    """`In Progress`, `in-progress` and `IN_PROGRESS` all mean `in_progress`. The value
    itself is checked by the task rules, which name the statuses allowed there."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise fail(f"parameter 'status' must be a string, got {value!r}")
    return re.sub(r"[\s-]+", "_", value.strip().lower())


UpdateStatus = Annotated[
    str | None, BeforeValidator(_status), WithJsonSchema({"type": "string", "enum": list(rules.UPDATE_STATUSES)})
]
TodoStatus = Annotated[str | None, BeforeValidator(_status), WithJsonSchema({"type": "string", "enum": list(STATUSES)})]


TaskId = Annotated[str, BeforeValidator(_required_id)]
IdList = Annotated[
    tuple[str, ...], BeforeValidator(_id_list), WithJsonSchema({"type": "array", "items": {"type": "string"}})
]
_ACTIVE_FORM = {"active_form": "activeForm"}
VERIFY_HELP = "Shell command that proves it; only its pass completes it."


def _budget(value: Any) -> Budget | None:
    """`{"requests": 20, "tokens": 200000, "minutes": 30}` (or its JSON text), any of the three."""
    if value is None:
        return None
    value = structured(value)
    if not isinstance(value, dict) or not value or set(value) - {"requests", "tokens", "minutes"}:
        raise fail("parameter 'budget' must be an object of requests, tokens and/or minutes")
    numbers = {}
    for key, raw in value.items():
        item = float(raw) if isinstance(raw, str) and raw.strip().replace(".", "", 1).isdigit() else raw
        if isinstance(item, bool) or not isinstance(item, int | float) or not 0 < item < 1e12:
            raise fail(f"budget.{key} must be a positive number, got {raw!r}")
        numbers[key] = item
    return budgets.from_numbers(numbers)


TaskBudget = Annotated[
    Budget | None,
    BeforeValidator(_budget),
    WithJsonSchema(
        {
            "type": "object",
            "properties": {k: {"type": "number"} for k in ("requests", "tokens", "minutes")},
        }
    ),
]


class TaskCreateArgs(Arguments):
    aliases: ClassVar[Mapping[str, str]] = {"title": "subject", **_ACTIVE_FORM}
    subject: RequiredLabel = Field(description="Imperative, e.g. 'Add pagination'.")
    description: Label = Field(None, description="Details, and how to tell it is done.")
    activeForm: Label = Field(None, description="Shown while in progress, e.g. 'Adding pagination'.")
    verify: Label = Field(None, description=VERIFY_HELP)
    budget: TaskBudget = Field(None, description="Its most; you may lower it later.")


class TaskGetArgs(Arguments):
    aliases: ClassVar[Mapping[str, str]] = {"task_id": "taskId", "id": "taskId"}
    taskId: TaskId


def _metadata(value: Any) -> tuple[tuple[str, str | None], ...]:
    """An object (or its JSON text) of keys to set; a null value removes the key."""
    if value is None:
        return ()
    value = structured(value)
    if not isinstance(value, dict):
        raise fail("parameter 'metadata' must be an object of keys to set (null removes a key)")
    return tuple(
        (str(key), None if item is None else json.dumps(item, ensure_ascii=False)) for key, item in value.items()
    )


Metadata = Annotated[tuple[tuple[str, str | None], ...], BeforeValidator(_metadata), WithJsonSchema({"type": "object"})]


class TaskUpdateArgs(TaskGetArgs):
    aliases: ClassVar[Mapping[str, str]] = {**TaskGetArgs.aliases, **_ACTIVE_FORM}
    status: UpdateStatus = None
    subject: Label = None
    description: Label = None
    activeForm: Label = None
    owner: Label = None
    addBlocks: IdList = Field((), description="Ids that wait for this one.")
    addBlockedBy: IdList = Field((), description="Ids this one waits for.")
    metadata: Metadata = Field((), description="Keys to merge; null removes one.")
    verify: Label = Field(None, description='Its check; "" removes it.')
    budget: TaskBudget = Field(None, description="Lower it.")


class TaskListArgs(Arguments):
    pass


class TodoEntry(Arguments):
    """One item of TodoWrite's list. `activeForm` is optional, in the schema as in the
    check: the panel shows `content` when it is missing, and TaskCreate treats it the
    same way, so refusing a whole list over a display string would only cost a retry."""

    content: str = Field(min_length=1, description="Imperative, e.g. 'Run tests'.")
    status: TodoStatus
    activeForm: str | None = Field(None, description="Shown while in progress.")
    verify: str | None = Field(None, description=VERIFY_HELP)


def _todo_list(value: Any) -> list[dict[str, Any]]:
    """`todos` as the model sent it (a list, or its JSON / Python-literal text), each item
    checked with one clear line for what is missing."""
    if value is None:
        raise fail("missing required parameter 'todos'")
    value = structured(value)
    if isinstance(value, dict) and "todos" in value:  # the whole arguments object, nested once more
        value = structured(value["todos"])
    if not isinstance(value, list):
        raise fail("parameter 'todos' must be a list of {content, status, activeForm} objects")
    items = []
    for n, raw in enumerate(value):
        item = structured(raw)
        if not isinstance(item, dict):
            raise fail(f"todos[{n}] must be an object with content, status and activeForm")
        content, status = item.get("content"), item.get("status")
        if not isinstance(content, str) or not content.strip():
            raise fail(f"todos[{n}] is missing 'content'")
        if not isinstance(status, str):
            raise fail(f"todos[{n}] is missing 'status' (pending, in_progress or completed)")
        active_form = item.get("activeForm", item.get("active_form"))
        verify = item.get("verify")
        if verify is not None and not isinstance(verify, str):
            raise fail(f"todos[{n}].verify must be a shell command (a string)")
        items.append(
            {
                "content": content,
                "status": status,
                "activeForm": active_form if isinstance(active_form, str) else None,
                "verify": verify,
            }
        )
    return items


class TodoWriteArgs(Arguments):
    todos: Annotated[list[TodoEntry], BeforeValidator(_todo_list)] = Field(description="The complete list.")

    def items(self) -> list[TodoItem]:
        return [TodoItem(t.content, t.status or "", t.activeForm or "", t.verify) for t in self.todos]


def _store(ctx: ToolContext) -> TaskStore:
    store = ctx.tasks
    if store is None:
        raise ToolError("no task list is available in this session")
    return store


async def _attempt(action: Awaitable[R]) -> R:
    try:
        return await action
    except StoreError as exc:
        raise ToolError(str(exc)) from exc


def task_changes(before: Sequence[Task], after: Sequence[Task]) -> list[TaskChange]:
    """The tasks `after` has that `before` did not, and the ones it newly completes."""
    old = {t.id: t for t in before}
    changes = []
    for task in after:
        prior = old.get(task.id)
        if prior is None:
            changes.append(TaskChange("TaskCreated", task))
        if task.status == "completed" and (prior is None or prior.status != "completed"):
            changes.append(TaskChange("TaskCompleted", task, prior))
    return changes


Preview = Callable[[tuple[Task, ...], int], tuple[Task, ...]]


async def _ask_hooks(ctx: ToolContext, store: TaskStore, preview: Preview) -> None:
    """Let the task gates refuse what the call would do, before anything is saved."""
    if not ctx.task_gates:
        return
    before = store.snapshot()
    try:
        after = preview(before, store.next_id)
    except StoreError:
        return  # the call itself fails with this error, so nothing would change
    for change in task_changes(before, after):
        verdict = await run_gates(ctx.task_gates, change)
        for event in verdict.events:
            ctx.emit(event)
        if verdict.block:
            raise ToolError(f"{verdict.block}\nThe task list is unchanged.")


OPEN_SHOWN = 12
"""Open tasks a result names by id; more are counted (`14 open: #3 #4 … #20`)."""


def _open(tasks: Sequence[Task]) -> str:
    """What is left, as every task result ends: `3 open: #3 #4 #5`, `all 5 completed`."""
    left = [f"#{t.id}" for t in tasks if t.status != "completed"]
    if not left:
        return f"all {len(tasks)} completed" if tasks else "the list is empty"
    shown = left if len(left) <= OPEN_SHOWN else [*left[: OPEN_SHOWN - 1], "…", left[-1]]
    return f"{len(left)} open: {' '.join(shown)}"


def _blocked_suffix(task: Task, tasks: Sequence[Task]) -> str:
    blockers = open_blockers(task, tasks)
    return " [blocked by " + ", ".join(f"#{b}" for b in blockers) + "]" if blockers else ""


# --- v2 -------------------------------------------------------------------------------


async def _create(args: TaskCreateArgs, ctx: ToolContext) -> str:
    store = _store(ctx)
    subject, description, active_form = args.subject, args.description or "", args.activeForm or ""
    verify, budget = args.verify or "", args.budget

    created_by = ctx.agent  # a sub-agent's subtask is tagged with its name and session

    def preview(tasks: tuple[Task, ...], next_id: int) -> tuple[Task, ...]:
        new, _ = rules.create(
            tasks,
            next_id,
            subject,
            description=description,
            active_form=active_form,
            now=store.clock(),
            created_by=created_by,
            verify=verify,
            budget=budget,
        )
        return new

    await _ask_hooks(ctx, store, preview)
    task = await _attempt(store.create(subject, description, active_form, created_by, verify=verify, budget=budget))
    ctx.emit(TasksUpdated(store.snapshot()))
    return f"#{task.id} created · {_open(store.snapshot())}"


async def _update(args: TaskUpdateArgs, ctx: ToolContext) -> str:
    store = _store(ctx)
    wanted, status = args.taskId, args.status
    fields = rules.Fields(
        subject=args.subject,
        description=args.description,
        active_form=args.activeForm,
        owner=args.owner,
        metadata=args.metadata,
        verify=args.verify,
        budget=args.budget,
    )
    blocks, blocked_by, by = args.addBlocks, args.addBlockedBy, ctx.agent
    if store.get(wanted) is not None:  # no hook is asked about an update its maker may not make
        try:
            links = (*blocks, *blocked_by)
            rules.check_update(
                store.snapshot(), wanted, by, status=status, changes=fields, links=links, home=store.home
            )
        except StoreError as exc:
            raise ToolError(str(exc)) from exc

    checked = await _run_check_first(store, wanted, status, fields, ctx)
    if checked is not None and not checked.passed:
        task = store.get(wanted)
        raise ToolError(refusal(task, checked) if task is not None else "the task was deleted while its check ran")

    def preview(tasks: tuple[Task, ...], next_id: int) -> tuple[Task, ...]:
        # As the main agent would: a sub-agent's "completed" is a completion the hooks judge now.
        now = store.clock()
        new, _ = rules.update(
            tasks,
            wanted,
            status=status,
            changes=fields,
            now=now,
            add_blocks=blocks,
            add_blocked_by=blocked_by,
            person=True,
        )
        return new

    await _ask_hooks(ctx, store, preview)
    outcome = await _attempt(
        store.update(
            wanted,
            status=status,
            subject=fields.subject,
            description=fields.description,
            active_form=fields.active_form,
            owner=fields.owner,
            add_blocks=blocks,
            add_blocked_by=blocked_by,
            metadata=fields.metadata,
            by=by,
            verify=fields.verify,
            verified=checked is not None,
            budget=fields.budget,
        )
    )
    tasks = store.snapshot()
    ctx.emit(TasksUpdated(tasks))
    task = outcome.task
    passed = [passed_note(task, checked)] if checked is not None else []
    if outcome.deleted:
        state = f"#{task.id} deleted · {_open(tasks)}"
    elif task.claim is not None and task.claim.done:
        state = (
            f"#{task.id} marked completed. It is recorded as completed when you end your turn without errors; "
            "end it now with a short summary of what you did."
        )
    else:
        state = f"#{task.id} → {task.status}{_blocked_suffix(task, tasks)} · {_open(tasks)}"
    return "\n".join([state, *passed, *outcome.notes])


async def _run_check_first(
    store: TaskStore, wanted: str, status: str | None, fields: rules.Fields, ctx: ToolContext
) -> CheckRun | None:
    """The run of the task's check when this update completes a task that has one (the
    check as the update leaves it), or completes again one that is completed but not
    verified (ticked by the person, or its check changed since); None when nothing needs checking."""
    task = store.get(wanted)
    if task is None or status != "completed":
        return None
    verify = task.verify if fields.verify is None else fields.verify.strip()
    if not verify or (task.verified and verify == task.verify):  # a completed, unproven task is proven now
        return None
    if task.claim is not None and task.claim.done:
        return None  # it said so already; the settlement decides
    if fields.verify is not None and fields.verify.strip() != task.verify:  # set in this same call
        outcome = await _attempt(store.update(wanted, verify=verify, by=ctx.agent))
        task = outcome.task
        ctx.emit(TasksUpdated(store.snapshot()))
    run = await run_check(task, ctx, store)
    ctx.emit(TasksUpdated(store.snapshot()))
    return run


async def _list(args: TaskListArgs, ctx: ToolContext) -> str:
    tasks = _store(ctx).snapshot()
    if not tasks:
        return "No tasks yet."
    return f"{render_for_model(tasks)}\n{_open(tasks)}"


async def _get(args: TaskGetArgs, ctx: ToolContext) -> str:
    store = _store(ctx)
    wanted = args.taskId
    task = store.get(wanted)
    if task is None:
        known = ", ".join(f"#{t.id}" for t in store.snapshot()) or "none"
        raise ToolError(f"no task #{short_id(wanted)} (existing tasks: {known})")
    status = {t.id: t.status for t in store.snapshot()}
    lines = [f"Task #{task.id}: {task.subject}", f"Status: {task.status}"]
    optional = [
        ("Description", task.description),
        ("Active form", task.activeForm),
        ("Owner", task.owner),
        ("Blocks", ", ".join(f"#{b}" for b in task.blocks)),
        ("Blocked by", ", ".join(f"#{b} ({status.get(b, '?')})" for b in task.blockedBy)),
    ]
    lines += [f"{label}: {value}" for label, value in optional if value]
    if task.tool_calls:
        lines.append(f"Tool calls while in progress: {task.tool_calls} ({task.tool_seconds:.1f} s)")
    if spend := spend_line(task, store.clock()):
        lines.append(spend[0].upper() + spend[1:])
    return "\n".join(lines)


# --- v1 -------------------------------------------------------------------------------


async def _todo_write(args: TodoWriteArgs, ctx: ToolContext) -> str:
    store = _store(ctx)
    if ctx.agent is not None:
        raise ToolError("a sub-agent cannot rewrite the whole list; use TaskUpdate on your task and TaskCreate")
    items = args.items()
    passed, notes = await _todo_checks(store, items, ctx)
    await _ask_hooks(ctx, store, lambda tasks, next_id: _todo_preview(tasks, next_id, items, store.clock()))
    outcome = await _attempt(store.replace_all(items, passed))
    ctx.emit(TasksUpdated(store.snapshot()))
    counts = {s: sum(1 for t in outcome.tasks if t.status == s) for s in ("completed", "in_progress", "pending")}
    detail = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    lines = [f"Saved · {detail}" if counts["in_progress"] + counts["pending"] else f"Saved · {_open(outcome.tasks)}"]
    if outcome.dropped:
        names = ", ".join(f'#{t.id} "{t.subject}"' for t in outcome.dropped)
        lines.append(
            f"Warning: unfinished items were dropped without being completed: {names}. "
            "If they still need doing, add them back; if they are done, list them as completed."
        )
    return "\n".join([*lines, *notes, *outcome.notes])


async def _todo_checks(store: TaskStore, items: Sequence[TodoItem], ctx: ToolContext) -> tuple[list[str], list[str]]:
    """Run the check of each item this TodoWrite completes (matched to its task by content):
    the contents whose checks passed and a note for each; a failing one refuses the call."""
    try:
        preview = _todo_preview(store.snapshot(), store.next_id, items, store.clock())
    except StoreError as exc:
        raise ToolError(str(exc)) from exc
    before = {t.id: t for t in store.snapshot()}
    passed: list[str] = []
    notes: list[str] = []
    for task in preview:
        prior = before.get(task.id)
        if task.status != "completed" or not task.verify or (prior is not None and prior.status == "completed"):
            continue
        if prior is None or prior.verify != task.verify:
            raise ToolError(
                f'"{task.subject}" sets a check and completes it in one call: save the list with it '
                "in_progress first, then complete it (its check runs then)"
            )
        run = await run_check(prior, ctx, store)
        ctx.emit(TasksUpdated(store.snapshot()))
        if not run.passed:
            raise ToolError(f"{refusal(prior, run)}\nThe todo list is unchanged.")
        passed.append(task.subject)
        notes.append(f'"{task.subject}": {passed_note(prior, run)}')
    return passed, notes


def _todo_preview(tasks: tuple[Task, ...], next_id: int, items: Sequence[TodoItem], now: float) -> tuple[Task, ...]:
    """The list a TodoWrite of `items` would make, as if every check it runs passed."""
    return rules.replace_all(tasks, next_id, items, now, [i.content.strip() for i in items])[0]


# --- what a call does to checks: the gate asks about each (core/engine/batch.py) ---------


def _create_commands(args: TaskCreateArgs, ctx: ToolContext) -> list[tuple[str, str]]:
    verify = (args.verify or "").strip()
    return [("set the check of a new task", verify)] if verify else []


def _update_commands(args: TaskUpdateArgs, ctx: ToolContext) -> list[tuple[str, str]]:
    task = ctx.tasks.get(args.taskId) if ctx.tasks is not None else None
    if task is None:
        return []
    if args.status == "deleted":
        unproven = task.verify and not task.verified
        return [(f"delete task #{task.id}, whose check has not passed", task.verify)] if unproven else []
    if args.verify is None:
        return []
    after = replace(task, verify=args.verify.strip())
    return check_commands([task], [after])


def _todo_commands(args: TodoWriteArgs, ctx: ToolContext) -> list[tuple[str, str]]:
    if ctx.tasks is None:
        return []
    try:
        after = _todo_preview(ctx.tasks.snapshot(), ctx.tasks.next_id, args.items(), 0.0)
    except StoreError:
        return []
    return check_commands(ctx.tasks.snapshot(), after)


# --- summaries for the UI (never raise: they only decorate `⏺ Name(...)`) ----------------


def _summarize_update(args: dict[str, Any]) -> str:
    ref = _summarize_get(args) or "?"
    status = args.get("status")
    return f"{ref} → {short(str(status), 20)}" if status else ref


def _summarize_get(args: dict[str, Any]) -> str:
    try:
        return f"#{short_id(parse_as(TaskGetArgs, args).taskId)}"
    except ToolError:
        return ""


def _summarize_todos(args: dict[str, Any]) -> str:
    try:
        items = parse_as(TodoWriteArgs, args).items()
    except ToolError:
        return ""
    active = next((i.content for i in items if i.status == "in_progress"), "")
    return f"{len(items)} items" + (f", {short(active, 40)}" if active else "")


TASK_CREATE = declare(
    "TaskCreate",
    TaskCreateArgs,
    _create,
    kind="task",
    summarize=lambda args: short(str(args.get("subject") or "")),
    commands=_create_commands,
)
TASK_UPDATE = declare(
    "TaskUpdate", TaskUpdateArgs, _update, kind="task", summarize=_summarize_update, commands=_update_commands
)
TASK_LIST = declare("TaskList", TaskListArgs, _list, kind="task")
TASK_GET = declare("TaskGet", TaskGetArgs, _get, kind="task", summarize=_summarize_get)
TODO_WRITE = declare(
    "TodoWrite", TodoWriteArgs, _todo_write, kind="task", summarize=_summarize_todos, commands=_todo_commands
)

TASK_TOOLS_V2: list[Tool] = [TASK_CREATE, TASK_UPDATE, TASK_LIST, TASK_GET]
TASK_TOOLS_V1: list[Tool] = [TODO_WRITE]
