"""Lifecycle observers that record what each task did and changed (see `changes`).

Before an Edit, Write or Bash call runs while a task is in progress, or during a
prompt's turn (the prompt's checkpoint, `checkpoint.py`), the files it declares it
writes (or, for Bash and any tool that does not say, a scan of the workspace) are
taken; after it ran, whatever changed is recorded against that task and in the prompt's
checkpoint, and saved. One scan serves both. Tools outside the workspace are not recorded.
Every other call counts to the task in progress too: its tool count and time in the panel.
Each agent has its own observers: a sub-agent's work goes to the task it claimed (or, with
none, to a record of its own, `@<agent>`), the main agent's to its own task in progress.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..events import Event, Notice, TasksUpdated
from .scan import Scan

if TYPE_CHECKING:
    from ..lifecycle import ToolObserver, ToolRecord, ToolStartObserver
    from ..tasks.model import AgentRef
    from ..tasks.store import TaskStore
    from .checkpoint import Checkpoints
    from .log import ChangeLog, Content, HeldCheck

log = logging.getLogger(__name__)

Target = Callable[[], "str | None"]
"""Which record a change goes to now: a task id, or None for none."""


def change_observers(
    changes: ChangeLog,
    store: TaskStore,
    target: Target | None = None,
    *,
    held: HeldCheck | None = None,
    commands: Callable[[int], None] | None = None,
    checkpoints: Checkpoints | None = None,
) -> tuple[ToolStartObserver, ToolObserver]:
    """(`tool_start`, `tool_done`) observers that feed `changes`; `target` says which
    record (default: the main agent's task in progress). `held` says which files another
    agent's task holds: what a command of this agent changed in one is put back when that
    is safe (`ChangeLog.record_scan`), and the call's result says so. `commands` is told +1
    when a scanned call starts and -1 when it ends (others' `Holding.busy`). `checkpoints`:
    the prompts' checkpoints, fed while a prompt's turn runs, task or none."""
    recorder = _Recorder(changes, store, target, held=held, commands=commands, checkpoints=checkpoints)
    return recorder.start, recorder.done


class _Recorder:
    """Takes the files before a call and records what changed after it.

    It looks at paths with `lstat` and reads regular files only (`on_disk.py`): a FIFO or
    a symlink loop where a file was never hangs or ends the turn. Anything that still goes
    wrong becomes a warning with the call's results, never a lost turn."""

    def __init__(
        self,
        changes: ChangeLog,
        store: TaskStore,
        target: Target | None = None,
        *,
        held: HeldCheck | None = None,
        commands: Callable[[int], None] | None = None,
        checkpoints: Checkpoints | None = None,
    ) -> None:
        self.changes = changes
        self.checkpoints = checkpoints
        self.store = store
        self.target = target or self._main_task
        self.held = held
        self.commands = commands or (lambda step: None)
        self.pending: dict[str, tuple[str | None, Scan | list[tuple[str, Content]]]] = {}
        self.failed: dict[str, str] = {}

    def _main_task(self) -> str | None:
        task = self.store.current()
        return task.id if task is not None else None

    async def start(self, record: ToolRecord) -> None:
        key = self.target()
        prompt = self.checkpoints is not None and self.checkpoints.open is not None
        if (key is None and not prompt) or record.kind not in ("edit", "execute"):
            return
        try:
            if record.kind == "edit" and record.writes:  # the files it declares it writes
                taken = await asyncio.to_thread(lambda: [t for raw in record.writes if (t := self.take(raw))])
                if taken:
                    self.pending[record.call_id] = (key, taken)
                return
            # A command, or a tool that does not say what it writes: look at the whole workspace.
            self.commands(1)
            try:
                self.pending[record.call_id] = (key, await asyncio.to_thread(self.changes.scan))
            except BaseException:
                self.commands(-1)
                raise
        except Exception as exc:  # a record is worth a warning, never the turn
            log.exception("could not take the files before %s", record.name)
            self.failed[record.call_id] = f"{type(exc).__name__}: {exc}"

    def take(self, raw: str) -> tuple[str, Content] | None:
        workspace = self.changes.workspace
        relative = self.changes.relative(workspace / os.path.expanduser(raw))  # absolute: replaces the workspace
        return None if relative is None else (relative, self.changes.capture(workspace / relative))

    def finish(self, task_id: str | None, before: Scan | list[tuple[str, Content]]) -> tuple[list[str], list[str]]:
        """Record the call's changes (against `task_id`, and in the open prompt's checkpoint);
        the notes on held files it met (for its result), and the files it changed."""
        changes = self.changes
        notes: list[str] = []
        if isinstance(before, Scan):
            found, notes = changes.scan_changes(before, self.held)
        else:
            found = before
        changed: list[str] = []
        for relative, old in found:
            now = changes.capture(changes.workspace / relative)
            if now != old:
                changed.append(relative)
            if task_id is not None:
                changes.record(task_id, relative, old, now)
            if self.checkpoints is not None:
                self.checkpoints.touch(relative, old, now)
        if task_id is not None:
            changes.save()
        if self.checkpoints is not None and self.checkpoints.open is not None:
            self.checkpoints.save()
        return notes, changed

    async def done(self, record: ToolRecord) -> Event | None:
        item = self.pending.pop(record.call_id, None)
        why = self.failed.pop(record.call_id, None)
        if item is not None and isinstance(item[1], Scan):
            self.commands(-1)
        if item is not None and why is None:
            try:
                notes, changed = await asyncio.to_thread(self.finish, *item)
                record.notes.extend(notes)
                record.changed.extend(changed)
            except Exception as exc:
                log.exception("could not record what %s changed", record.name)
                why = f"{type(exc).__name__}: {exc}"
        if why is not None:
            text = f"could not record what this {record.name} call changed ({why}); it ran all the same"
            return Notice(text, "warning")
        if item is None or item[0] is None:
            return None
        return TasksUpdated(self.store.snapshot())  # the panel's `N files · +A −R`


def attribution_observer(store: TaskStore, by: AgentRef | None = None) -> ToolObserver:
    """A `tool_done` observer counting every non-task tool call to `by`'s task in progress
    (None: the main agent's)."""

    async def observe(record: ToolRecord) -> TasksUpdated | None:
        if record.kind == "task" or await store.record_tool_call(record.elapsed, by) is None:
            return None
        return TasksUpdated(store.snapshot())  # the panel's per-task counts; coalesced per batch

    return observe
