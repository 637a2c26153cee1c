"""The rules of the task list, as pure steps from one valid list to the next.

Every function takes an immutable tuple of tasks and returns the next tuple, or raises
`StoreError` with one clear line and changes nothing. The invariants they keep (and
that `violations` checks, e.g. on a file read from disk): unique ids below `next_id`,
known statuses, `blocks`/`blockedBy` symmetric and pointing at existing tasks, and no
cycles among blockers.

Sub-agents (`core/agents/`) work the same list. A task is handed to one by `claim`: only
a pending task with no owner and no open blocker, set to its owner and `in_progress` in
one step. While the claim lasts the agent may change only that task's status, activeForm
and metadata (marking it completed only records that it says so: `settle` decides) and
the subtasks it created, each tagged with its name and session (`created_by`: another
session on a shared list has its own `general-1`); a link it adds (`addBlocks`,
`addBlockedBy`) changes the task at its other end too, which must be one of those as
well. The main agent may not change a claimed task at all. Work is
attributed per worker: the main agent's task in progress is one without a claim, so
"one task in progress" holds per owner.

The plan must fit in front of the model: it is echoed in tool results and reminders, so
one 1 MB subject would make every later request overflow. Text fields and the list's
length are bounded (`MAX_LABEL`, `MAX_DESCRIPTION`, `MAX_TASKS`), for the model's edits
and the person's alike; a change past a bound is refused, saying which and by how much.
A list saved before the bounds (or edited by hand) is cut to them when read
(`fit_limits`), with a note, never refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import cast

from . import budgets
from .model import (
    STATUSES,
    AgentRef,
    Attempt,
    Budget,
    CheckRun,
    CheckRunning,
    Claim,
    ReplaceOutcome,
    StoreError,
    Task,
    TaskStatus,
    TodoItem,
    UpdateOutcome,
    time_in_progress,
)

Tasks = tuple[Task, ...]
UPDATE_STATUSES: tuple[str, ...] = (*STATUSES, "deleted")


@dataclass(frozen=True)
class Fields:
    """Text fields an update may set; None leaves a field as it is."""

    subject: str | None = None
    description: str | None = None
    active_form: str | None = None
    owner: str | None = None
    metadata: tuple[tuple[str, str | None], ...] = ()
    """Keys to set (value as JSON text) or, with None, to remove."""
    verify: str | None = None
    """The task's check: a command to set, "" to remove it."""
    budget: Budget | None = None
    """A budget to set or lower (the model's; `budgets.lowered`)."""


def find(tasks: Tasks, task_id: str) -> Task:
    for task in tasks:
        if task.id == task_id:
            return task
    known = ", ".join(f"#{t.id}" for t in tasks[:20]) or "none"
    raise StoreError(f"no task #{short_id(task_id)} (existing tasks: {known})")


def check_status(status: str, allowed: Sequence[str] = UPDATE_STATUSES, where: str = "") -> str:
    if status not in allowed:
        choices = ", ".join(allowed[:-1]) + f" or {allowed[-1]}"
        raise StoreError(f"{where}invalid status '{status}'; use {choices}")
    return status


MAX_LABEL = 200
"""Characters of a subject (TodoWrite's `content`), an activeForm or an owner: a title, not a document."""
MAX_DESCRIPTION = 4_000
"""Characters of a description: what to do and how to tell it is done, not the material itself."""
MAX_TASKS = 200
"""Tasks in one list."""
MAX_METADATA_KEYS = 20
"""Keys of one task's metadata (each value bounded like a description)."""
MAX_ATTEMPTS = 10
"""Sub-agents' attempts kept on a task: the latest ones."""
MAX_ATTEMPT_FILES = 50
"""Files listed per attempt."""
MAX_CHECK_RUNS = 5
"""Runs of a task's check kept on it: the latest ones."""
MAX_CHECK_TAIL = 2_000
"""Characters of a check run's output kept with it (its end)."""

_ADVICE = {
    "subject": "keep it a short title and put detail in description",
    "content": "keep it a short title",
    "description": "put long material in a file and name the file here",
}


def _bounded(text: str, name: str, limit: int, where: str = "") -> str:
    """`text` stripped, or StoreError when it is longer than `limit` characters."""
    text = text.strip()
    if len(text) > limit:
        advice = _ADVICE.get(name, "shorten it")
        raise StoreError(f"{where}{name} is {len(text):,} characters; the limit is {limit:,} ({advice})")
    return text


def _subject(text: str, where: str = "", name: str = "subject") -> str:
    subject = _bounded(text, name, MAX_LABEL, where)
    if not subject:
        raise StoreError(f"{where}{name} must not be empty")
    return subject


def _room_for_one_more(tasks: Tasks) -> None:
    if len(tasks) >= MAX_TASKS:
        raise StoreError(
            f"the task list already holds {len(tasks)} tasks, the most it may ({MAX_TASKS}); "
            "delete finished or obsolete tasks first"
        )


def with_status(task: Task, status: TaskStatus, now: float) -> Task:
    """`task` in `status`, keeping the first start time, the completion time and the time
    spent in progress (summed over stints) right."""
    if status == task.status:
        return task
    if status == "in_progress":
        started = task.started_at if task.started_at is not None else now
        return replace(task, status=status, started_at=started, completed_at=None, progress_since=now)
    if task.status == "in_progress":  # a stint ends
        task = replace(task, progress_seconds=time_in_progress(task, now=now), progress_since=None)
    if status == "completed":
        return replace(task, status=status, completed_at=now)
    return replace(task, status=status, completed_at=None, verified_at=None)


def create(
    tasks: Tasks,
    next_id: int,
    subject: str,
    *,
    description: str,
    active_form: str,
    now: float,
    created_by: AgentRef | None = None,
    verify: str = "",
    budget: Budget | None = None,
) -> tuple[Tasks, Task]:
    """A new task; `created_by`: the sub-agent whose subtask it is (None: the main agent's)."""
    _room_for_one_more(tasks)
    budget = budgets.lowered(None, budget) if budget is not None else None
    task = Task(
        id=str(next_id),
        subject=_subject(subject),
        description=_bounded(description, "description", MAX_DESCRIPTION),
        activeForm=_bounded(active_form, "activeForm", MAX_LABEL),
        verify=_bounded(verify, "verify", MAX_DESCRIPTION),
        created_at=now,
        created_by=created_by.agent if created_by is not None else "",
        created_session=created_by.session if created_by is not None else "",
    )
    task = budgets.with_budget(task, budget)
    return (*tasks, task), task


def created_by(task: Task, by: AgentRef, home: str | None) -> bool:
    """Whether sub-agent `by` created `task`: its name and its session. A subtask tagged
    with a name alone (a list written before the session was kept) is taken as the work of
    the list's own session, `home`, the one session that writes a session's list; on a
    shared list (`home` None) the writer cannot be known, so no sub-agent's it is (the main
    agents and the person can still change it)."""
    if not task.created_by or task.created_by != by.agent:
        return False
    return (task.created_session or home) == by.session


def owns(task: Task, by: AgentRef, home: str | None) -> bool:
    """Whether sub-agent `by` may change `task`: the task it claimed, or a subtask it
    created that nobody has claimed."""
    return task.claim.by(by) if task.claim is not None else created_by(task, by, home)


def works_on(task: Task, by: AgentRef | None) -> bool:
    """Whether `task` is in progress as the work of `by` (None: the main agent, whose
    tasks are the unclaimed ones)."""
    if task.status != "in_progress":
        return False
    return task.claim is None if by is None else task.claim is not None and task.claim.by(by)


def check_update(
    tasks: Tasks,
    task_id: str,
    by: AgentRef | None,
    *,
    status: str | None,
    changes: Fields,
    links: Iterable[str] = (),
    home: str | None = None,
) -> None:
    """Refuse an update its maker may not make: a sub-agent touching what is not its own
    (its claimed task, the subtasks it created), the task at the other end of a link it
    adds included (`links`), or the main agent touching a claimed task. `home`: the session
    whose own list this is (None: a shared list; see `created_by`)."""
    task = find(tasks, task_id)
    claim = task.claim
    if by is None:
        if claim is not None:
            raise StoreError(
                f"task #{task_id} is being worked on by {claim.agent}: its result comes back as that Agent call's "
                "result (the person can stop it from the task panel)"
            )
        return
    if claim is not None and claim.by(by):
        fixed = changes.subject is not None or changes.description is not None or changes.owner is not None
        if fixed or changes.verify is not None or changes.budget is not None or status == "deleted":
            raise StoreError(
                f"you may change only the status, activeForm and metadata of your task #{task_id} (its check "
                "and budget are the one who handed it to you's); create a subtask for anything else"
            )
    elif not owns(task, by, home):
        raise StoreError(
            f"task #{task_id} is not yours{_whose(task)}: {_yours(tasks, by)}; you may update only it and the "
            "subtasks you create"
        )
    for other in links:
        linked = find(tasks, other)
        if linked.id != task_id and not owns(linked, by, home):
            raise StoreError(
                f"a link between #{task_id} and #{linked.id} changes #{linked.id} too, which is not yours"
                f"{_whose(linked)}: {_yours(tasks, by)}; link only it and the subtasks you create"
            )


def _whose(task: Task) -> str:
    return f" (it is {task.claim.agent}'s)" if task.claim is not None else ""


def _yours(tasks: Tasks, by: AgentRef) -> str:
    mine = next((t.id for t in tasks if t.claim is not None and t.claim.by(by)), None)
    return f"your task is #{mine}" if mine else "you have no task of your own"


def _own_status(task: Task, status: str | None) -> Task:
    """A sub-agent's status change of its claimed task: completed is recorded as what it
    says (the task stays in progress until the run is settled); pending takes that back."""
    if status is None or task.claim is None or status == "in_progress":
        return task
    return replace(task, claim=replace(task.claim, done=status == "completed"))


def _with_metadata(task: Task, changes: Fields) -> Task:
    if not changes.metadata:
        return task
    merged = dict(task.metadata)
    for key, value in changes.metadata:
        if value is None:
            merged.pop(key, None)
        else:
            merged[_bounded(key, "a metadata key", MAX_LABEL)] = _bounded(
                value, f"metadata {key[:40]!r}", MAX_DESCRIPTION
            )
    if len(merged) > MAX_METADATA_KEYS:
        raise StoreError(
            f"a task holds at most {MAX_METADATA_KEYS} metadata keys; remove some (a null value removes one)"
        )
    return replace(task, metadata=tuple(sorted(merged.items())))


def update(
    tasks: Tasks,
    task_id: str,
    *,
    status: str | None,
    changes: Fields,
    now: float,
    add_blocks: Iterable[str] = (),
    add_blocked_by: Iterable[str] = (),
    by: AgentRef | None = None,
    person: bool = False,
    home: str | None = None,
    verified: bool = False,
) -> tuple[Tasks, UpdateOutcome]:
    """`by`: the sub-agent making the update (None: the main agent); `person`: the person,
    from the panel, who may change anything; `home` as in `check_update`; `verified`: the
    task's check has just passed, so a completion is a verified one. A model's completion
    of a task with a check is refused without it: only the check completes such a task."""
    add_blocks, add_blocked_by = tuple(add_blocks), tuple(add_blocked_by)
    old = find(tasks, task_id)
    if status is not None:
        check_status(status)
    if not person:
        links = (*add_blocks, *add_blocked_by)
        check_update(tasks, task_id, by, status=status, changes=changes, links=links, home=home)
    if status == "deleted":
        return remove(tasks, task_id), UpdateOutcome(old, deleted=True)
    task = replace(
        old,
        subject=old.subject if changes.subject is None else _subject(changes.subject),
        description=old.description
        if changes.description is None
        else _bounded(changes.description, "description", MAX_DESCRIPTION),
        activeForm=old.activeForm
        if changes.active_form is None
        else _bounded(changes.active_form, "activeForm", MAX_LABEL),
        owner=old.owner if changes.owner is None else _bounded(changes.owner, "owner", MAX_LABEL),
    )
    task = _with_metadata(task, changes)
    if changes.verify is not None:
        task = with_check(task, changes.verify)
    if changes.budget is not None:
        task = budgets.with_budget(task, budgets.lowered(task.budget, changes.budget, f"task #{task_id}: "))
    completes = status == "completed" and old.status != "completed"
    if completes and task.verify and not verified and not person:
        raise StoreError(f"task #{task_id} has a check: it is completed only when its check passes")
    if by is not None and old.claim is not None and old.claim.by(by):
        task = _own_status(task, status)
    elif status is not None:
        task = with_status(task, cast(TaskStatus, status), now)
        if status == "completed" and verified:  # completing it again proves a completed one
            task = replace(task, verified_at=now)
    new = tuple(task if t.id == task_id else t for t in tasks)
    for blocked in add_blocks:
        new = link(new, task_id, blocked)
    for blocker in add_blocked_by:
        new = link(new, blocker, task_id)
    task = find(new, task_id)
    return new, UpdateOutcome(task, notes=_start_notes(new, task) if status == "in_progress" else ())


def _start_notes(tasks: Tasks, task: Task) -> tuple[str, ...]:
    notes = []
    worker = AgentRef(task.claim.agent, task.claim.session) if task.claim is not None else None
    others = [t.id for t in tasks if works_on(t, worker) and t.id != task.id]
    if others:
        notes.append(f"Note: {_refs(others)} also in_progress; keep only one in progress.")
    blockers = open_blockers(task, tasks)
    if blockers:
        notes.append(f"Note: #{task.id} is blocked by {_refs(blockers)}, not completed yet.")
    return tuple(notes)


def _refs(ids: Iterable[str]) -> str:
    return ", ".join(f"#{i}" for i in ids)


# --- sub-agents: claim, settle, release ---------------------------------------------


def claim(tasks: Tasks, task_id: str, taken: Claim, now: float) -> tuple[Tasks, Task]:
    """Hand task `task_id` to a sub-agent: owner and in_progress in one step. Refused
    unless the task is pending, has no owner and no open blocker."""
    task = find(tasks, task_id)
    if task.claim is not None:
        raise StoreError(f"task #{task_id} is already being worked on by {task.claim.agent}")
    if task.status != "pending":
        raise StoreError(f"task #{task_id} is {task.status}, not pending: only a pending task can be handed out")
    if task.owner:
        raise StoreError(f"task #{task_id} already has an owner ({task.owner}); clear it first to hand it out")
    blockers = open_blockers(task, tasks)
    if blockers:
        raise StoreError(f"task #{task_id} is blocked by {_refs(blockers)}: those must be completed first")
    started = with_status(replace(task, owner=taken.agent, claim=taken), "in_progress", now)
    return tuple(started if t.id == task_id else t for t in tasks), started


def settle(tasks: Tasks, task_id: str, by: AgentRef, attempt: Attempt, now: float) -> tuple[Tasks, Task | None]:
    """The end of `by`'s claim on `task_id`: completed if the agent marked it so and the
    run ended cleanly (`attempt.outcome == "completed"`), otherwise pending again; the
    owner is cleared and the attempt recorded. Nothing changes when the claim is no longer
    `by`'s (the person deleted or took back the task meanwhile)."""
    task = next((t for t in tasks if t.id == task_id), None)
    if task is None or task.claim is None or not task.claim.by(by):
        return tasks, None
    done = task.claim.done and attempt.outcome == "completed"
    kept = replace(attempt, files=attempt.files[:MAX_ATTEMPT_FILES], summary=_cut(attempt.summary, 500))
    freed = replace(task, owner="", claim=None, attempts=(*task.attempts, kept)[-MAX_ATTEMPTS:])
    if task.status == "in_progress":
        freed = with_status(freed, "completed" if done else "pending", now)
        if done and task.verify and _passed_last(task):
            freed = replace(freed, verified_at=now)
    return tuple(freed if t.id == task_id else t for t in tasks), freed


def _passed_last(task: Task) -> bool:
    """Whether `task`'s check, as it is now, passed when it last ran."""
    last = task.last_check
    return last is not None and last.passed and last.command == task.verify


def release_dead(
    tasks: Tasks, dead: Callable[[Claim], bool], attempt: Callable[[Task], Attempt], now: float
) -> tuple[Tasks, tuple[Task, ...]]:
    """Give back every claim whose process is gone (`dead`), recording `attempt(task)`."""
    released: list[Task] = []
    for task in tasks:
        if task.claim is not None and dead(task.claim):
            ref = AgentRef(task.claim.agent, task.claim.session)
            tasks, freed = settle(tasks, task.id, ref, attempt(task), now)
            if freed is not None:
                released.append(freed)
    return tasks, tuple(released)


def link(tasks: Tasks, blocker: str, blocked: str) -> Tasks:
    """Record that `blocker` must be finished before `blocked`, on both tasks."""
    find(tasks, blocker)
    find(tasks, blocked)
    if blocker == blocked:
        raise StoreError(f"task #{blocker} cannot block itself")
    by_id = {t.id: t for t in tasks}
    if blocked in by_id[blocker].blocks:
        return tasks
    if _reaches(by_id, blocked, blocker):
        raise StoreError(f"blocker cycle: #{blocked} already blocks #{blocker} (directly or through other tasks)")

    def linked(task: Task) -> Task:
        if task.id == blocker:
            return replace(task, blocks=(*task.blocks, blocked))
        if task.id == blocked:
            return replace(task, blockedBy=(*task.blockedBy, blocker))
        return task

    return tuple(linked(t) for t in tasks)


def _reaches(by_id: dict[str, Task], start: str, goal: str) -> bool:
    """Whether `goal` is reachable from `start` along `blocks` edges."""
    stack, seen = [start], set()
    while stack:
        current = stack.pop()
        if current == goal:
            return True
        if current not in seen and current in by_id:
            seen.add(current)
            stack.extend(by_id[current].blocks)
    return False


def remove(tasks: Tasks, task_id: str) -> Tasks:
    """Drop a task and every blocker reference to it. Its id is never handed out again."""
    return tuple(
        replace(
            t,
            blocks=tuple(b for b in t.blocks if b != task_id),
            blockedBy=tuple(b for b in t.blockedBy if b != task_id),
        )
        for t in tasks
        if t.id != task_id
    )


def open_blockers(task: Task, tasks: Sequence[Task]) -> tuple[str, ...]:
    """Ids of the tasks that block `task` and are not completed yet."""
    status = {t.id: t.status for t in tasks}
    return tuple(b for b in task.blockedBy if status.get(b, "completed") != "completed")


def replace_all(
    tasks: Tasks, next_id: int, todos: Sequence[TodoItem], now: float, passed: Iterable[str] = ()
) -> tuple[Tasks, int, ReplaceOutcome]:
    """The whole-list update: the list becomes `todos`, in that order.

    An item whose content equals an existing task's subject keeps that task (its id,
    times and tool counts); other items become new tasks. Among tasks with the same
    subject, one that also has the item's status is preferred, so dropping one of two
    look-alikes keeps the right id.

    An item that completes a task with a check must be among `passed` (the contents whose
    checks just passed): only its check completes it, and then it is verified.
    """
    passed = frozenset(passed)
    if len(todos) > MAX_TASKS:
        raise StoreError(f"todos has {len(todos):,} items; the list may hold at most {MAX_TASKS}")
    unmatched: dict[str, list[Task]] = {}
    for task in tasks:
        unmatched.setdefault(task.subject, []).append(task)
    new: list[Task] = []
    for n, item in enumerate(todos):
        where = f"todos[{n}]: "
        subject = _subject(item.content, where, "content")
        status = cast(TaskStatus, check_status(item.status, STATUSES, where))
        active_form = _bounded(item.active_form, "activeForm", MAX_LABEL, where)
        same = unmatched.get(subject)
        if same:
            pick = next((t for t in same if t.status == status), same[0])
            same.remove(pick)
            if pick.claim is not None and status != pick.status:
                raise StoreError(f'{where}"{subject}" is being worked on by {pick.claim.agent}; leave it in_progress')
            base = replace(pick, activeForm=active_form)
            if item.verify is not None:
                base = with_check(base, item.verify, where)
        else:
            verify = _bounded(item.verify or "", "verify", MAX_DESCRIPTION, where)
            base = Task(id=str(next_id), subject=subject, activeForm=active_form, created_at=now, verify=verify)
            next_id += 1
        completes = status == "completed" and base.status != "completed"
        if completes and base.verify and subject not in passed:
            raise StoreError(f'{where}"{subject}" has a check: it is completed only when its check passes')
        done = with_status(base, status, now)
        new.append(replace(done, verified_at=now) if completes and base.verify else done)
    kept = {t.id for t in new}
    for task in tasks:
        if task.id not in kept and task.claim is not None:
            raise StoreError(
                f'#{task.id} "{task.subject}" is being worked on by {task.claim.agent}; keep it in the list'
            )
    result = tuple(
        replace(t, blocks=tuple(b for b in t.blocks if b in kept), blockedBy=tuple(b for b in t.blockedBy if b in kept))
        for t in new
    )
    dropped = tuple(t for t in tasks if t.id not in kept and t.status != "completed")
    active = [t.id for t in result if t.status == "in_progress"]
    notes = (f"Note: {_refs(active)} are all in_progress; keep only one in progress.",) if len(active) > 1 else ()
    return result, next_id, ReplaceOutcome(result, dropped, notes)


# --- checks (core/tasks/checks.py runs them) ------------------------------------------


def with_check(task: Task, command: str, where: str = "") -> Task:
    """`task` with its check set to `command` ("" removes it). A changed check has not
    verified anything yet: a completed task stays completed but is no longer verified."""
    command = _bounded(command, "verify", MAX_DESCRIPTION, where)
    if command == task.verify:
        return task
    return replace(task, verify=command, verified_at=None)


def check_started(tasks: Tasks, task_id: str, running: CheckRunning) -> Tasks:
    task = find(tasks, task_id)
    return tuple(replace(task, check_running=running) if t.id == task_id else t for t in tasks)


def check_finished(tasks: Tasks, task_id: str, run: CheckRun, now: float) -> tuple[Tasks, Task | None]:
    """Record `run` on task `task_id` (gone meanwhile: nothing changes). A failed run leaves
    the task in progress (it stays the work to do) and takes back a sub-agent's "done"."""
    task = next((t for t in tasks if t.id == task_id), None)
    if task is None:
        return tasks, None
    kept = replace(run, tail=run.tail[-MAX_CHECK_TAIL:], command=run.command[:MAX_DESCRIPTION])
    task = replace(task, check_running=None, checks=(*task.checks, kept)[-MAX_CHECK_RUNS:])
    if not run.passed and task.status != "completed":
        task = with_status(task, "in_progress", now)
        if task.claim is not None:
            task = replace(task, claim=replace(task.claim, done=False))
    return tuple(task if t.id == task_id else t for t in tasks), task


def current(tasks: Sequence[Task], by: AgentRef | None = None) -> Task | None:
    """The task `by`'s work is attributed to (None: the main agent, whose tasks are the
    unclaimed ones): its task in progress, the latest started."""
    active = [t for t in tasks if works_on(t, by)]
    return max(active, key=lambda t: t.started_at or 0.0) if active else None


def _count_to_current(tasks: Tasks, by: AgentRef | None, count: Callable[[Task], Task]) -> tuple[Tasks, Task | None]:
    target = current(tasks, by)
    if target is None:
        return tasks, None
    counted = count(target)
    return tuple(counted if t.id == target.id else t for t in tasks), counted


def record_tool_call(tasks: Tasks, elapsed: float, by: AgentRef | None = None) -> tuple[Tasks, Task | None]:
    """Count a tool call to `by`'s task in progress (`current`)."""
    return _count_to_current(
        tasks, by, lambda t: replace(t, tool_calls=t.tool_calls + 1, tool_seconds=t.tool_seconds + max(0.0, elapsed))
    )


def record_request(tasks: Tasks, tokens: int, by: AgentRef | None = None) -> tuple[Tasks, Task | None]:
    """Count one model request (and its tokens) to `by`'s task in progress (`current`);
    the task after it (None: no task in progress)."""
    return _count_to_current(tasks, by, lambda t: replace(t, requests=t.requests + 1, tokens=t.tokens + max(0, tokens)))


def move(tasks: Tasks, task_id: str, delta: int) -> tuple[Tasks, int, int]:
    """Move a task `delta` places (negative: towards the top), clamped to the list."""
    find(tasks, task_id)
    old = next(i for i, t in enumerate(tasks) if t.id == task_id)
    index = min(max(old + delta, 0), len(tasks) - 1)
    order = list(tasks)
    order.insert(index, order.pop(old))
    return tuple(order), old, index


def fit_limits(tasks: Tasks) -> tuple[Tasks, list[str]]:
    """`tasks` with every text field cut to its bound (an ellipsis at the cut), and one
    line per field cut: for a list saved before the bounds existed, or edited by hand."""
    notes: list[str] = []
    fitted: list[Task] = []
    for task in tasks:
        cut = replace(
            task,
            subject=_cut(task.subject, MAX_LABEL),
            activeForm=_cut(task.activeForm, MAX_LABEL),
            owner=_cut(task.owner, MAX_LABEL),
            description=_cut(task.description, MAX_DESCRIPTION),
        )
        for name in ("subject", "activeForm", "owner", "description"):
            if getattr(cut, name) != getattr(task, name):
                notes.append(f"#{short_id(task.id)} {name} ({len(getattr(task, name)):,} characters)")
        fitted.append(cut)
    return tuple(fitted), notes


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- invariants ---------------------------------------------------


def violations(tasks: Sequence[Task], next_id: int) -> list[str]:
    """Every broken invariant, as one line each; empty for a valid list."""
    problems: list[str] = []
    by_id = {t.id: t for t in tasks}
    if len(by_id) != len(tasks):
        problems.append("duplicate task ids")
    for task in tasks:
        canonical = task.id.isascii() and task.id.isdigit() and not task.id.startswith("0")  # not "01"
        if not (canonical and len(task.id) <= len(str(next_id)) and 0 < int(task.id) < next_id):
            problems.append(f"task id {task.id!r} is not a number below next_id {next_id}")
        if task.status not in STATUSES:
            problems.append(f"#{task.id} has unknown status {task.status!r}")
        for other in task.blocks:
            if other == task.id or other not in by_id or task.id not in by_id[other].blockedBy:
                problems.append(f"#{task.id} blocks #{other}, which is missing or does not list it")
        for other in task.blockedBy:
            if other == task.id or other not in by_id or task.id not in by_id[other].blocks:
                problems.append(f"#{task.id} is blocked by #{other}, which is missing or does not list it")
        if any(_reaches(by_id, other, task.id) for other in task.blocks):
            problems.append(f"#{task.id} is part of a blocker cycle")
    return problems


def short_id(task_id: str) -> str:
    """An id as messages show it: a 5,000-digit one does not fill the screen."""
    return task_id if len(task_id) <= 20 else f"{task_id[:8]}…{task_id[-4:]} ({len(task_id)} digits)"


def restore(tasks: Tasks, before: Task, index: int | None) -> Tasks:
    """Put `before` back (undo): its fields and place, keeping the current tool (and request) counts and
    blockers when the task is still there; re-added without blockers when it is not."""
    current = next((t for t in tasks if t.id == before.id), None)
    if current is not None:
        task = replace(
            before,
            tool_calls=current.tool_calls,
            tool_seconds=current.tool_seconds,
            requests=current.requests,
            tokens=current.tokens,
            blocks=current.blocks,
            blockedBy=current.blockedBy,
        )
        rest = [t for t in tasks if t.id != before.id]
    else:
        task = replace(before, blocks=(), blockedBy=())
        rest = list(tasks)
    at = len(rest) if index is None else min(max(index, 0), len(rest))
    rest.insert(at, task)
    return tuple(rest)


def describe_update(before: Tasks, after: Tasks, task_id: str, *, deleted: bool) -> str:
    """One line for the plan history: what a model's update changed ("" for nothing)."""
    old = find(before, task_id)
    if deleted:
        return f'deleted #{task_id} "{old.subject}"'
    new = find(after, task_id)
    parts: list[str] = []
    if new.status != old.status:
        parts.append(new.status)
    for name, label in (("subject", "subject"), ("description", "description"), ("activeForm", "activeForm")):
        if getattr(new, name) != getattr(old, name):
            parts.append(f'{label} "{getattr(new, name)}"' if name == "subject" else f"{label} edited")
    if new.owner != old.owner:
        parts.append(f"owner {new.owner or '(none)'}")
    if new.budget != old.budget:
        parts.append(f"budget {budgets.describe(new.budget) or '(none)'}")
    if (new.blocks, new.blockedBy) != (old.blocks, old.blockedBy):
        parts.append("blockers")
    return f"#{task_id} " + ", ".join(parts) if parts else ""


def describe_replace(before: Tasks, after: Tasks) -> str:
    """One line for the plan history: what a whole-list (TodoWrite) update changed."""
    old = {t.id: t for t in before}
    parts = []
    for task in after:
        if task.id not in old:
            parts.append(f'added #{task.id} "{task.subject}"')
        elif old[task.id].status != task.status:
            parts.append(f"#{task.id} {task.status}")
    kept = {t.id for t in after}
    parts += [f"dropped #{t.id}" for t in before if t.id not in kept]
    if not parts and [t.id for t in before] != [t.id for t in after]:
        parts.append("reordered")
    return "TodoWrite: " + ", ".join(parts) if parts else ""
