"""Child process for `test_tasks_crash`: mutates a task list forever, acknowledging each state.

Usage: `python _task_crash_child.py PATH START`. The file at PATH holds state number
START; the child applies operations START+1, START+2, … and prints each number on its
own line once that mutation has returned (its state is on disk). `step` is also the
parent's model of what state number n is. Imports as little as possible: the parent
starts this a hundred times.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from todo_agent.core.tasks.store import TaskStore


def clock() -> float:
    return 1.0  # fixed, so the parent can rebuild every state exactly


async def step(store: TaskStore, n: int) -> None:
    """Operation number `n`: exactly one mutation, chosen from `n` and the current list."""
    tasks = store.snapshot()
    kind = n % 8
    if kind in (1, 5, 7) or not tasks:
        await store.create(f"task {n}", active_form=f"doing {n}")
    elif kind == 2:
        blocker = [tasks[0].id] if len(tasks) > 1 else []
        await store.update(tasks[-1].id, status="in_progress", add_blocked_by=blocker)
    elif kind == 3:
        await store.record_tool_call(0.25)
    elif kind == 4:
        await store.update(tasks[-1].id, status="completed")
    elif kind == 6:
        await store.update(tasks[-1].id, subject=f"task {n} renamed")
    elif len(tasks) > 3:
        await store.user_delete(tasks[0].id)
    else:
        await store.user_move(tasks[-1].id, -1)


async def main(path: Path, start: int) -> None:
    store = TaskStore.load(path, clock=clock)
    n = start
    while True:
        n += 1
        await step(store, n)
        sys.stdout.write(f"{n}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
