"""Which task holds a file: the rule that stops one agent overwriting another's work.

While a task is in progress, the files it changed are its own: another agent's Edit or
Write of one is refused (`core/tools/ledger.py` asks `holder`). A file is held when the
task's change record lists it (Edit, Write, and what Bash commands changed), or when the
agent working the task wrote it this very moment (recorded here at once, before the
change record catches up after the call). A sub-agent without a task holds what it wrote
while it runs. The main agent's task in progress holds its files against sub-agents too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ..changes.log import ChangeLog, HeldCheck, Holding
from ..tasks.model import AgentRef, Task
from ..tasks.store import TaskStore
from ..tools.ledger import Holder


class Holds:
    """The files each agent's work holds, for one session's plan."""

    def __init__(self, store: TaskStore, changes: ChangeLog) -> None:
        self.store = store
        self.changes = changes
        self._written: dict[Path, tuple[AgentRef | None, str]] = {}
        """Resolved path → who wrote it last and the record it went to (a task id, or `@agent`)."""
        self._running: set[AgentRef] = set()
        """Sub-agents without a task that are running (their writes hold while they run)."""
        self._commands: dict[AgentRef | None, int] = {}
        """How many scanned calls (commands) each agent is running now."""
        self._lock = threading.Lock()  # asked from the file tools' worker threads

    def running(self, agent: AgentRef, running: bool) -> None:
        with self._lock:
            if running:
                self._running.add(agent)
            else:
                self._running.discard(agent)
                self._written = {p: w for p, w in self._written.items() if w[0] != agent}

    def wrote_by(self, who: AgentRef | None, record: Callable[[], str | None]) -> Callable[[Path], None]:
        """What a ledger calls after `who` wrote a file: it is held from now on."""

        def wrote(path: Path) -> None:
            key = record()
            if key is not None:
                with self._lock:
                    self._written[path] = (who, key)

        return wrote

    def commands_of(self, who: AgentRef | None) -> Callable[[int], None]:
        """What `who`'s change recorder tells when one of its commands starts (+1) and ends (-1)."""

        def step(by: int) -> None:
            with self._lock:
                self._commands[who] = max(0, self._commands.get(who, 0) + by)

        return step

    def holding_for(self, me: AgentRef | None) -> HeldCheck:
        """The check `me`'s change recorder runs on each file a command of `me`'s changed:
        the task of another agent that holds it, as that task last left the file."""
        holder = self.holder_for(me)

        def held(relative: str) -> Holding | None:
            name = holder(self.changes.workspace / relative)
            if name is None:
                return None
            tasks = {t.id: t for t in self.store.snapshot()}
            version, owner = None, None
            with self._lock:
                running = {f"@{agent.agent}": agent for agent in self._running}
            for key, files in self.changes.records.items():
                change = next((f for f in files if f.path == relative), None)
                task = tasks.get(key)
                if task is not None and task.status == "in_progress":
                    who = _worker(task)
                elif key in running:  # a sub-agent at work without a task: its own record
                    who = running[key]
                else:
                    continue
                if change is None or who == me:
                    continue
                if version is None or change.last > version[0]:
                    version, owner = (change.last, change.after), who
            with self._lock:
                busy = self._commands.get(owner, 0) > 0 if version is not None else False
            return Holding(name, version[1] if version is not None else None, busy)

        return held

    def holder_for(self, me: AgentRef | None) -> Holder:
        """The check `me`'s ledger runs before a write: the task (or sub-agent) holding it."""

        def holder(path: Path) -> str | None:
            with self._lock:
                written = self._written.get(path)
                running = set(self._running)
            tasks = self.store.snapshot()
            if written is not None and written[0] != me:
                who, key = written
                if key.startswith("@") and who in running:
                    return f"{key[1:]}, a sub-agent still at work"
                task = next((t for t in tasks if t.id == key), None)
                if task is not None and _works(task, who):
                    return _name(task)
            relative = self.changes.relative(path)
            if relative is None:
                return None
            for task in tasks:
                if task.status != "in_progress" or _worker(task) == me:
                    continue
                if any(change.path == relative for change in self.changes.files_of(task.id)):
                    return _name(task)
            return None

        return holder


def _worker(task: Task) -> AgentRef | None:
    return None if task.claim is None else AgentRef(task.claim.agent, task.claim.session)


def _works(task: Task, who: AgentRef | None) -> bool:
    return task.status == "in_progress" and _worker(task) == who


def _name(task: Task) -> str:
    who = task.claim.agent if task.claim is not None else "the main agent"
    subject = task.subject if len(task.subject) <= 50 else task.subject[:49] + "…"
    return f'{who} (task #{task.id} "{subject}")'
