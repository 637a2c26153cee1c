"""The task list: one store per session, kept on disk beside the transcript.

`TaskStore` holds an immutable list of `Task` values. Every mutation is a pure step from
one valid list to the next (the rules live in `rules`), run one at a time under an
`asyncio.Lock`, written to disk atomically off the event loop, and only then made the
current state: an awaited mutation has returned means its state is on disk, and the
file always equals an acknowledged state (or, after a crash, the one being written).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from . import budgets, file_format, history, rules
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
    TodoItem,
    UpdateOutcome,
)
from .persistence import PersistenceError, read_json, update_atomic

R = TypeVar("R")


@dataclass(frozen=True)
class _Change(Generic[R]):
    tasks: tuple[Task, ...]
    next_id: int
    result: R
    log: str = ""
    """For edits made by the person: what the model should be told."""
    rewrite: bool = False
    """Write the file even though the list did not change (the pending edits did)."""
    entry: Entry | None = None
    """For the plan history: a change worth a version (tool counts are not)."""


@dataclass(frozen=True)
class Saved:
    """The list as another process left it on disk (`TaskStore.peek`)."""

    tasks: tuple[Task, ...]
    next_id: int
    changes: tuple[str, ...]
    version: int
    history: tuple[history.Version, ...] = ()


@dataclass(frozen=True)
class Entry:
    """What the plan history says about a change (see `history.Version`)."""

    who: history.Who
    what: str
    task_id: str | None = None
    before: Task | None = None
    index: int | None = None
    undoable: bool = False
    undoes: int | None = None
    extra: dict[str, Any] | None = None


def _person(what: str, tasks: tuple[Task, ...], task_id: str, **extra: Any) -> Entry:
    """An undoable edit by the person of task `task_id` of `tasks` (the list before it)."""
    index = next((i for i, t in enumerate(tasks) if t.id == task_id), None)
    before = tasks[index] if index is not None else None
    return Entry("person", what, task_id, before, index, undoable=True, **extra)


class TaskStore:
    """The task list of one session. Create one per session file (`load`)."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        tasks: Iterable[Task] = (),
        next_id: int = 1,
        warning: str | None = None,
        clock: Callable[[], float] = time.time,
        user_changes: Iterable[str] = (),
        version: int = 0,
        home: str | None = None,
    ) -> None:
        self.path = path
        self.home = home
        """The session whose own list this is (None: a list shared by any number of sessions):
        a subtask tagged with a sub-agent's name alone is that session's (`rules.created_by`)."""
        self.warning = warning
        """Set when the file on disk was unusable at load; show it to the person once."""
        self.clock = clock
        self._tasks = tuple(tasks)
        self._next_id = next_id
        self._lock = asyncio.Lock()
        self._inflight: set[asyncio.Future[Any]] = set()
        self._user_changes: list[str] = list(user_changes)
        self._version = version
        # history_skipped: lines of the plan history that could not be read (`/todos history` says so).
        self._history, self.history_skipped = (
            history.read(history.history_path(path), version) if path is not None else ([], 0)
        )
        self._seen: tuple[int, int, int] | None = None
        """The file's stamp when `peek` last read it."""

    @classmethod
    def load(cls, path: Path | None, *, clock: Callable[[], float] = time.time, home: str | None = None) -> TaskStore:
        """The store for `path` (None: in memory only); `home`: the session whose own list it
        is (None for a shared one). Never raises on a bad file."""
        if path is None:
            return cls(None, clock=clock, home=home)
        loaded, warning = read_json(path, _decode_saved)
        tasks, next_id, changes, version = loaded if loaded is not None else ((), 1, (), 0)
        tasks, cut = rules.fit_limits(tasks)
        if cut:  # saved before the bounds, or edited by hand: cut now, saved so at the next change
            warning = (
                f"The task list held text longer than its limits, cut to them: {', '.join(cut[:5])}"
                f"{f' and {len(cut) - 5} more' if len(cut) > 5 else ''}. The full text stays in the transcript."
            )
        if len(tasks) > rules.MAX_TASKS:
            warning = (warning + " " if warning else "") + (
                f"The task list holds {len(tasks)} tasks, more than the {rules.MAX_TASKS} a list may have: "
                "nothing is dropped, but no task can be added until some are deleted."
            )
        return cls(
            path,
            tasks=tasks,
            next_id=next_id,
            warning=warning,
            clock=clock,
            user_changes=changes,
            version=version,
            home=home,
        )

    # --- reading -----------------------------------------------------------------

    @property
    def next_id(self) -> int:
        return self._next_id

    def snapshot(self) -> tuple[Task, ...]:
        return self._tasks

    def get(self, task_id: str) -> Task | None:
        return next((t for t in self._tasks if t.id == task_id), None)

    def unfinished(self) -> tuple[Task, ...]:
        return tuple(t for t in self._tasks if t.status != "completed")

    def in_progress(self) -> tuple[Task, ...]:
        return tuple(t for t in self._tasks if t.status == "in_progress")

    def current(self, by: AgentRef | None = None) -> Task | None:
        """The task `by`'s work is attributed to (None: the main agent, whose tasks are the
        unclaimed ones): its task in progress, the latest started."""
        return rules.current(self._tasks, by)

    @property
    def version(self) -> int:
        return self._version

    def versions(self) -> tuple[history.Version, ...]:
        """Every logged version of the list, oldest first."""
        return tuple(self._history)

    # --- model-side mutations ------------------------------------------------------

    async def create(
        self,
        subject: str,
        description: str = "",
        active_form: str = "",
        created_by: AgentRef | None = None,
        *,
        verify: str = "",
        budget: Budget | None = None,
    ) -> Task:
        """A new task; `created_by`: the sub-agent that made it (a subtask); `verify`: its
        check; `budget`: how much work it may take."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task]:
            new, task = rules.create(
                tasks,
                next_id,
                subject,
                description=description,
                active_form=active_form,
                now=self.clock(),
                created_by=created_by,
                verify=verify,
                budget=budget,
            )
            who: history.Who = "agent" if created_by else "model"
            by = f" by {created_by.agent}" if created_by else ""
            return _Change(
                new, next_id + 1, task, entry=Entry(who, f'created #{task.id} "{task.subject}"{by}', task.id)
            )

        return await self._mutate(step)

    async def update(
        self,
        task_id: str,
        *,
        status: str | None = None,
        subject: str | None = None,
        description: str | None = None,
        active_form: str | None = None,
        owner: str | None = None,
        add_blocks: Sequence[str] = (),
        add_blocked_by: Sequence[str] = (),
        metadata: Sequence[tuple[str, str | None]] = (),
        by: AgentRef | None = None,
        verify: str | None = None,
        verified: bool = False,
        budget: Budget | None = None,
    ) -> UpdateOutcome:
        """The model's update; `by` is the sub-agent making it (None: the main agent);
        `verified`: the task's check has just passed (`rules.update`)."""
        fields = rules.Fields(
            subject=subject,
            description=description,
            active_form=active_form,
            owner=owner,
            metadata=tuple(metadata),
            verify=verify,
            budget=budget,
        )

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[UpdateOutcome]:
            new, outcome = rules.update(
                tasks,
                task_id,
                status=status,
                changes=fields,
                now=self.clock(),
                add_blocks=add_blocks,
                add_blocked_by=add_blocked_by,
                by=by,
                home=self.home,
                verified=verified,
            )
            what = rules.describe_update(tasks, new, task_id, deleted=outcome.deleted)
            who: history.Who = "model" if by is None else "agent"
            what = f"{what} (by {by.agent})" if what and by is not None else what
            return _Change(new, next_id, outcome, entry=Entry(who, what, task_id) if what else None)

        return await self._mutate(step)

    async def replace_all(self, todos: Sequence[TodoItem], passed: Iterable[str] = ()) -> ReplaceOutcome:
        """Make the list exactly `todos` (TodoWrite). Unchanged content keeps its id.
        `passed`: the items whose checks just passed (`rules.replace_all`)."""
        passed = tuple(passed)

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[ReplaceOutcome]:
            new, next_after, outcome = rules.replace_all(tasks, next_id, todos, self.clock(), passed)
            what = rules.describe_replace(tasks, new)
            return _Change(new, next_after, outcome, entry=Entry("model", what) if what else None)

        return await self._mutate(step)

    async def record_tool_call(self, elapsed: float, by: AgentRef | None = None) -> Task | None:
        """Count one non-task tool call to `by`'s task in progress (None: the main agent's)."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task | None]:
            new, task = rules.record_tool_call(tasks, elapsed, by)
            return _Change(new, next_id, task)

        return await self._mutate(step)

    async def record_request(self, tokens: int, by: AgentRef | None = None) -> Task | None:
        """Count one model request and its tokens to `by`'s task in progress (its budget's spend)."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task | None]:
            new, task = rules.record_request(tasks, tokens, by)
            return _Change(new, next_id, task)

        return await self._mutate(step)

    # --- checks (core/tools/task_checks.py) -----------------------------------------------

    async def check_started(self, task_id: str, running: CheckRunning) -> None:
        """Record the check of `task_id` running (its process group), before it can do anything."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[None]:
            return _Change(rules.check_started(tasks, task_id, running), next_id, None)

        await self._mutate(step)

    async def check_finished(self, task_id: str, run: CheckRun) -> Task | None:
        """Record a run of `task_id`'s check (in the plan history too); the task after it."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task | None]:
            new, task = rules.check_finished(tasks, task_id, run, self.clock())
            if task is None:
                return _Change(tasks, next_id, None)
            how = "passed" if run.passed else "did not finish" if run.exit is None else f"failed (exit {run.exit})"
            what = f"#{task_id}'s check {how} after {run.seconds:.1f} s"
            return _Change(new, next_id, task, entry=Entry("model", what, task_id))

        return await self._mutate(step)

    def release_dead_checks(self, dead: Callable[[CheckRunning], bool], stop: Callable[[CheckRunning], None]) -> int:
        """At load: a check recorded as running by a process that is gone (kill -9 mid-check)
        is stopped (`stop`, its process group) and recorded as not finished: its task is not
        completed. How many there were."""
        stale = [t for t in self._tasks if t.check_running is not None and dead(t.check_running)]
        for task in stale:
            assert task.check_running is not None
            stop(task.check_running)

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[int]:
            new, now = tasks, self.clock()
            for task in stale:
                run = CheckRun(now, None, 0.0, "todo-agent ended while the check ran; it was stopped", task.verify)
                new, _ = rules.check_finished(new, task.id, run, now)
            ids = ", ".join(f"#{t.id}" for t in stale)
            return _Change(new, next_id, len(stale), entry=Entry("model", f"stopped the check left running: {ids}"))

        return self.apply_now(step) if stale else 0

    # --- sub-agents (core/agents/) ---------------------------------------------------

    async def claim(self, task_id: str, taken: Claim) -> Task:
        """Hand `task_id` to a sub-agent, under the list's lock (so two processes on one
        list cannot both get it); StoreError when the rules refuse (`rules.claim`)."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task]:
            new, task = rules.claim(tasks, task_id, taken, self.clock())
            return _Change(new, next_id, task, entry=Entry("agent", f"#{task_id} claimed by {taken.agent}", task_id))

        return await self._mutate(step)

    async def settle(self, task_id: str, by: AgentRef, attempt: Attempt) -> Task | None:
        """End `by`'s claim on `task_id` (`rules.settle`); None when it no longer held it."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task | None]:
            new, task = rules.settle(tasks, task_id, by, attempt, self.clock())
            if task is None:
                return _Change(tasks, next_id, None)
            what = f"#{task_id} released by {by.agent} ({attempt.outcome}): {task.status}"
            return _Change(new, next_id, task, entry=Entry("agent", what, task_id))

        return await self._mutate(step)

    def release_dead(self, dead: Callable[[Claim], bool], attempt: Callable[[Task], Attempt]) -> tuple[Task, ...]:
        """At load: give back the claims of processes that are gone (a kill -9 mid-run)."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[tuple[Task, ...]]:
            new, released = rules.release_dead(tasks, dead, attempt, self.clock())
            if not released:
                return _Change(tasks, next_id, ())
            names = ", ".join(f"#{t.id} ({t.attempts[-1].agent})" for t in released)
            return _Change(
                new, next_id, released, entry=Entry("agent", f"released the claims of a dead process: {names}")
            )

        return self.apply_now(step) if any(t.claim is not None for t in self._tasks) else ()

    def peek(self) -> Saved | None:
        """What is saved now, if the file changed since last looked at (another process
        works a shared list, `--task-list`). Blocking, but a `stat` when nothing changed."""
        if self.path is None:
            return None
        try:
            stat = self.path.stat()
        except OSError:
            return None
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if stamp == self._seen:
            return None
        loaded, _ = read_json(self.path, _decode_saved)
        if loaded is None:
            return None
        self._seen = stamp
        versions, _ = history.read(history.history_path(self.path), loaded[3])
        return Saved(*loaded, tuple(versions))

    def adopt(self, saved: Saved) -> bool:
        """Make `saved` (from `peek`) the current state if it is newer; whether it was.
        On the event loop, like every change (a change of ours meanwhile wins)."""
        if saved.version <= self._version:
            return False
        self._tasks, self._next_id, self._version, self._history = (
            saved.tasks,
            saved.next_id,
            saved.version,
            list(saved.history),
        )
        self._user_changes = [*self._user_changes, *(c for c in saved.changes if c not in self._user_changes)]
        return True

    # --- edits made by the person (the task panel) ---------------------------------

    async def user_add(self, subject: str) -> Task:
        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task]:
            new, task = rules.create(tasks, next_id, subject, description="", active_form="", now=self.clock())
            log = f'added #{task.id} "{task.subject}"'
            return _Change(new, next_id + 1, task, log, entry=_person(log, tasks, task.id))

        return await self._mutate(step)

    async def user_set_status(self, task_id: str, status: str) -> Task:
        if status not in STATUSES:
            raise StoreError(f"invalid status '{status}'; use pending, in_progress or completed")

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task]:
            before = rules.find(tasks, task_id)
            new, outcome = rules.update(
                tasks, task_id, status=status, changes=rules.Fields(), now=self.clock(), person=True
            )
            log = f"marked #{task_id} {status}" if before.status != status else ""
            return _Change(new, next_id, outcome.task, log, entry=_person(log, tasks, task_id) if log else None)

        return await self._mutate(step)

    async def user_delete(self, task_id: str) -> Task:
        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task]:
            new, outcome = rules.update(
                tasks, task_id, status="deleted", changes=rules.Fields(), now=self.clock(), person=True
            )
            log = f'deleted #{task_id} "{outcome.task.subject}"'
            return _Change(new, next_id, outcome.task, log, entry=_person(log, tasks, task_id))

        return await self._mutate(step)

    async def user_move(self, task_id: str, delta: int) -> int:
        """Move a task `delta` places (negative: up), clamped to the list; returns its new index."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[int]:
            new, old_index, index = rules.move(tasks, task_id, delta)
            if index == old_index:
                return _Change(new, next_id, index)
            direction = "up" if index < old_index else "down"
            log = f"moved #{task_id} {direction} to position {index + 1}"
            return _Change(new, next_id, index, log, entry=_person(log, tasks, task_id))

        return await self._mutate(step)

    async def user_rename(self, task_id: str, subject: str) -> Task:
        """The person edited a task's subject in the panel."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task]:
            before = rules.find(tasks, task_id)
            new, outcome = rules.update(
                tasks, task_id, status=None, changes=rules.Fields(subject=subject), now=0.0, person=True
            )
            if outcome.task.subject == before.subject:
                return _Change(new, next_id, outcome.task)
            log = f'renamed #{task_id} "{before.subject}" to "{outcome.task.subject}"'
            return _Change(new, next_id, outcome.task, log, entry=_person(log, tasks, task_id))

        return await self._mutate(step)

    async def user_set_check(self, task_id: str, command: str) -> Task:
        """The person set, changed or (`""`) removed a task's check in the panel (`v`).
        Theirs to set without a question; deny rules still refuse it when it runs."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task]:
            before = rules.find(tasks, task_id)
            task = rules.with_check(before, command.strip(), f"#{task_id}")
            if task.verify == before.verify:
                return _Change(tasks, next_id, task)
            new = tuple(task if t.id == task_id else t for t in tasks)
            log = f"set #{task_id}'s check to `{task.verify}`" if task.verify else f"removed #{task_id}'s check"
            return _Change(new, next_id, task, log, entry=_person(log, tasks, task_id))

        return await self._mutate(step)

    async def user_set_budget(self, task_id: str, budget: Budget | None) -> Task:
        """The person set, raised, lowered or (None) removed a task's budget in the panel (`b`)."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task]:
            before = rules.find(tasks, task_id)
            task = budgets.with_budget(before, budget)
            if task.budget == before.budget:
                return _Change(tasks, next_id, task)
            new = tuple(task if t.id == task_id else t for t in tasks)
            text = budgets.describe(task.budget)
            log = f"set #{task_id}'s budget to {text}" if text else f"removed #{task_id}'s budget"
            return _Change(new, next_id, task, log, entry=_person(log, tasks, task_id))

        return await self._mutate(step)

    async def user_undo(self) -> str:
        """Undo the person's latest list edit not undone yet (itself recorded); returns
        what was undone. StoreError when there is none."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[str]:
            target = history.last_undoable(self._history)
            if target is None:
                raise StoreError("nothing to undo: you have not edited the list (rewinds are not undone by u)")
            new = _undo(tasks, target)
            problems = rules.violations(new, next_id)
            if problems:
                raise StoreError(f"cannot undo {target.what!r}: {problems[0]}")
            log = f'undid "{target.what}"'
            entry = Entry("person", log, target.task_id, undoes=target.version)
            return _Change(new, next_id, target.what, log, entry=entry)

        return await self._mutate(step)

    async def user_rewound(self, task_id: str, text: str, rewind_id: str) -> Task:
        """A rewind put task `task_id`'s files back: the task goes back to pending, the
        model is told `text` once, and the plan history records it."""
        return await self._mutate(self.rewound_step(task_id, text, rewind_id))

    def rewound_step(self, task_id: str, text: str, rewind_id: str) -> Callable[[tuple[Task, ...], int], _Change[Task]]:
        """The change `user_rewound` makes; a second run for the same rewind changes nothing."""

        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[Task]:
            if any(e.extra.get("rewind") == rewind_id for e in self._history):  # recovery re-running it
                return _Change(tasks, next_id, rules.find(tasks, task_id))
            new, outcome = rules.update(
                tasks, task_id, status="pending", changes=rules.Fields(), now=self.clock(), person=True
            )
            entry = Entry("person", text, task_id, extra={"rewind": rewind_id})
            return _Change(new, next_id, outcome.task, text, entry=entry)

        return step

    def listed_step(
        self, tasks: tuple[Task, ...], text: str, rewind_id: str
    ) -> Callable[[tuple[Task, ...], int], _Change[None]]:
        """Make the list `tasks` (a rewind to an earlier prompt, or its redo), recorded in
        the plan history with `text`; a second run for the same `rewind_id` changes nothing.
        The model is told by the rewind's own note, not the person's change log."""

        def step(current: tuple[Task, ...], next_id: int) -> _Change[None]:
            if any(e.extra.get("rewind") == rewind_id for e in self._history):  # recovery re-running it
                return _Change(current, next_id, None)
            after = max([next_id, *(int(t.id) + 1 for t in tasks if t.id.isdigit())])
            problems = rules.violations(tasks, after)
            if problems:
                raise StoreError(f"cannot put the list back: {problems[0]}")
            return _Change(tasks, after, None, entry=Entry("person", text, extra={"rewind": rewind_id}))

        return step

    async def user_listed(self, tasks: tuple[Task, ...], text: str, rewind_id: str) -> None:
        """`listed_step`, on the event loop."""
        await self._mutate(self.listed_step(tasks, text, rewind_id))

    def take_user_changes(self) -> tuple[str, ...]:
        """The person's edits since the last call, oldest first; clears them.

        Delivered means delivered on disk too: the file stops listing them, written
        through the same lock and atomic write as every change (in the background, as
        the caller cannot wait: `drain` waits for it), so a resumed session does not
        announce them again.
        """
        changes, self._user_changes = tuple(self._user_changes), []
        if changes and self.path is not None:
            self._forget_delivered()
        return changes

    def _forget_delivered(self) -> None:
        def step(tasks: tuple[Task, ...], next_id: int) -> _Change[None]:
            return _Change(tasks, next_id, None, rewrite=True)

        try:
            asyncio.get_running_loop()
        except RuntimeError:  # called outside the agent loop: the next write records it
            return
        job = asyncio.ensure_future(self._apply(step))
        self._inflight.add(job)
        job.add_done_callback(self._settled)

    async def drain(self) -> None:
        """Wait for mutations still being written (e.g. from a cancelled tool call)."""
        while self._inflight:
            await asyncio.wait(list(self._inflight))

    # --- the one write path --------------------------------------------------------

    async def _mutate(self, step: Callable[[tuple[Task, ...], int], _Change[R]]) -> R:
        # Shielded: a cancelled caller (the person pressed escape) must not leave memory
        # and disk disagreeing; the write finishes and becomes the current state.
        job = asyncio.ensure_future(self._apply(step))
        self._inflight.add(job)
        job.add_done_callback(self._settled)
        return await asyncio.shield(job)

    def _write(
        self, path: Path, step: Callable[[tuple[Task, ...], int], _Change[R]]
    ) -> tuple[_Change[R], int, history.Version | None]:
        """Apply `step` to the list as saved now (another process may share this session);
        blocking. Returns the change and the list's version after it."""
        applied: list[tuple[_Change[R], int, history.Version | None]] = []

        def compute(on_disk: tuple[tuple[Task, ...], int, int] | None) -> bytes | None:
            tasks, next_id, version = on_disk if on_disk is not None else (self._tasks, self._next_id, self._version)
            change = step(tasks, next_id)
            entry = None
            if change.entry is not None:
                version += 1  # logged first: a line past the file's version is ignored on reading
                entry = self._entry(version, change)
                history.append(history.history_path(path), entry)
            applied.append((change, version, entry))
            if (change.tasks, change.next_id) == (tasks, next_id) and not change.log and not change.rewrite:
                return None
            changes = [*self._user_changes, change.log] if change.log else self._user_changes
            return file_format.encode(change.tasks, change.next_id, changes, version)

        try:
            update_atomic(path, _decode_versioned, compute)
        except PersistenceError as exc:
            raise StoreError(str(exc)) from exc
        return applied[0]

    def _entry(self, version: int, change: _Change[Any]) -> history.Version:
        entry = change.entry
        assert entry is not None
        return history.make(
            version,
            entry.who,
            entry.what,
            change.tasks,
            before=entry.before,
            task_id=entry.task_id,
            index=entry.index,
            undoes=entry.undoes,
            undoable=entry.undoable,
            extra=entry.extra,
            now=self.clock(),
        )

    def _commit(self, change: _Change[R], version: int, entry: history.Version | None = None) -> R:
        if change.entry is not None:
            self._history.append(entry or self._entry(version, change))
            while len(self._history) > 1 and self._history[-2].version >= version:
                self._history.pop(-2)
        self._tasks, self._next_id, self._version = change.tasks, change.next_id, version
        if change.log:
            self._user_changes.append(change.log)
        return change.result

    def apply_now(self, step: Callable[[tuple[Task, ...], int], _Change[R]]) -> R:
        """Apply `step` without the event loop: only while nothing else can mutate (at load,
        e.g. finishing a rewind a crash interrupted)."""
        if self.path is None:
            change, version = step(self._tasks, self._next_id), self._version
            version += 1 if change.entry is not None else 0
        else:
            change, version, entry = self._write(self.path, step)
            return self._commit(change, version, entry)
        return self._commit(change, version)

    def _settled(self, job: asyncio.Future[Any]) -> None:
        self._inflight.discard(job)
        if not job.cancelled():
            job.exception()  # retrieved: a caller that was cancelled will never read it

    async def _apply(self, step: Callable[[tuple[Task, ...], int], _Change[R]]) -> R:
        async with self._lock:
            if self.path is None:
                change = step(self._tasks, self._next_id)
                version = self._version + (1 if change.entry is not None else 0)
            else:
                change, version, entry = await asyncio.to_thread(self._write, self.path, step)
                return self._commit(change, version, entry)
            return self._commit(change, version)


def _undo(tasks: tuple[Task, ...], target: history.Version) -> tuple[Task, ...]:
    """The list with `target` (a person's edit of one task) reversed."""
    if target.before is None:  # an add: the task goes (if it is still there)
        gone = target.task_id is None or all(t.id != target.task_id for t in tasks)
        return tasks if gone or target.task_id is None else rules.remove(tasks, target.task_id)
    try:
        before = file_format.decode_task(target.before)
    except ValueError as exc:
        raise StoreError(f"cannot undo {target.what!r}: its saved state is unreadable") from exc
    return rules.restore(tasks, before, target.index)


def _decode_versioned(document: Any) -> tuple[tuple[Task, ...], int, int]:
    tasks, next_id = file_format.decode(document)
    return rules.fit_limits(tasks)[0], next_id, file_format.decode_version(document)


def _decode_saved(document: Any) -> tuple[tuple[Task, ...], int, tuple[str, ...], int]:
    tasks, next_id = file_format.decode(document)
    return tasks, next_id, file_format.decode_user_changes(document), file_format.decode_version(document)
