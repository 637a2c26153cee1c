"""A task's check: the shell command that proves it (`Task.verify`), run when it is completed.

The task tools run it before a completion is saved: exit 0 completes the task, verified;
anything else refuses the completion as a tool error with the exit status and the last
lines of output, and the task stays in progress. It runs like a Bash call (the workspace
as cwd, the same environment and output cap, its own process group, killed at its limit
or by an interrupt), and deny rules are asked again as it starts: a rule added after the
check was set still wins. The store's lock is not held while it runs; its process group
is recorded on the task first, so a todo-agent killed meanwhile leaves a trace that the
next open acts on (`stop_left_running`). Every run is kept on the task and in the plan
history.

Setting, changing or removing a check asks the permission gate as that command would as
a Bash call (`check_commands`, judged by the batch: `core/engine/batch.py`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Sequence

from ..pipes import process_alive, signal_group, start_ticks
from ..tasks.model import CheckRun, CheckRunning, Task
from ..tasks.store import TaskStore
from .bash import capped_output, child_env, run_shell
from .context import ToolContext
from .results import ToolError

TAIL_LINES = 30
"""Lines of a failing check's output the model is shown (its end, where the failure is)."""


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


async def run_check(task: Task, ctx: ToolContext, store: TaskStore) -> CheckRun:
    """Run `task`'s check now and record the run on it; the run. Interrupted, the run is
    recorded as not finished (its process group is killed) and the interrupt goes on."""
    command = task.verify
    if reason := ctx.command_denied(command):
        raise ToolError(f"the check of task #{task.id} cannot run: {reason}; the task stays as it was")
    output = capped_output()
    at, began = store.clock(), time.monotonic()

    async def started(pgid: int) -> None:
        await store.check_started(task.id, CheckRunning(pgid, os.getpid(), start_ticks(pgid) or ""))

    try:
        ran = await run_shell(
            command,
            ctx.workspace,
            ctx.check_timeout,
            child_env(ctx.hidden_env),
            output,
            started=started,
            sandbox=ctx.sandbox,
        )
    except asyncio.CancelledError:
        run = CheckRun(at, None, time.monotonic() - began, tail(output.text() + "\n(interrupted)"), command)
        await store.check_finished(task.id, run)
        raise
    run = CheckRun(at, ran.code, time.monotonic() - began, tail(ran.output, 200), command)
    await store.check_finished(task.id, run)
    return run


def refusal(task: Task, run: CheckRun) -> str:
    """The tool error of a completion its check refused."""
    how = "did not finish within its limit" if run.exit is None else f"failed with exit code {run.exit}"
    return (
        f"Task #{task.id} was not completed: its check `{task.verify}` {how} ({run.seconds:.1f} s); "
        f"it stays in_progress. Fix what the check shows, then mark it completed again.\n"
        f"Last lines of its output:\n{tail(run.tail) or '(no output)'}"
    )


def passed_note(task: Task, run: CheckRun) -> str:
    return f"Its check `{task.verify}` passed ({run.seconds:.1f} s): verified."


def check_commands(before: Sequence[Task], after: Sequence[Task]) -> list[tuple[str, str]]:
    """What a change of the list does to checks, as (what, command) to put to the gate:
    each check set or changed (the new command), removed (the old one), and the check of
    each task it drops (`after` lacks it). A task that keeps its check asks nothing."""
    old = {t.id: t for t in before}
    new = {t.id: t for t in after}
    asks: list[tuple[str, str]] = []
    for task in after:
        prior = old.get(task.id)
        was = prior.verify if prior is not None else ""
        if task.verify and task.verify != was:
            asks.append((f"set the check of task #{task.id}", task.verify))
        elif was and not task.verify:
            asks.append((f"remove the check of task #{task.id}", was))
    for task in before:
        if task.verify and task.id not in new:
            asks.append((f"delete task #{task.id}, which has a check", task.verify))
    return asks


def stop_left_running(store: TaskStore) -> int:
    """At open: stop each check a todo-agent that is gone left running (kill -9 while a
    check ran), record it as not finished, and leave its task not completed."""

    def dead(running: CheckRunning) -> bool:
        return running.owner != os.getpid() and not process_alive(running.owner)

    return store.release_dead_checks(dead, _kill_group)


def _kill_group(running: CheckRunning) -> None:
    """Kill the check's process group if it is still the check's: while any process of a
    group lives, its id is never handed to a new process, so only a live leader that
    started at another moment than the check's shell is someone else's."""
    now = start_ticks(running.pgid)
    if now is not None and running.ticks and now != running.ticks:
        return
    signal_group(running.pgid, signal.SIGKILL)
