"""The task list as text: for people (`/todos`, the panel, `-p`) and for the model."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from .budgets import spend_line
from .model import Task
from .rules import open_blockers

MARKS: dict[str, str] = {"pending": "☐", "in_progress": "◼", "completed": "☒"}
VERIFIED_MARK = "☑"
"""A task its check completed (a plain ☒ was completed without one)."""


def mark(task: Task) -> str:
    return VERIFIED_MARK if task.verified else MARKS[task.status]


def check_line(task: Task, width: int = 60) -> str:
    """The task's check (on one line, cut to `width`), led by how its last run ended, so a
    narrow panel that cuts the line keeps that: `⚙ pytest -q` (not run yet), `⚙ running ·
    pytest -q`, `✓ pytest -q`, `✗ exit 1 · pytest -q`; empty when it has none."""
    if not task.verify:
        return ""
    command = " ".join(task.verify.split())
    command = command if len(command) <= width else command[: width - 1] + "…"
    last = task.last_check
    if task.check_running is not None:
        return f"⚙ running · {command}"
    if last is None or last.command != task.verify:
        return f"⚙ {command}"
    if last.passed:
        return f"✓ {command}"
    return f"✗ {'did not finish' if last.exit is None else f'exit {last.exit}'} · {command}"


def render_tasks(
    tasks: Sequence[Task],
    files: Mapping[str, Sequence[str]] | None = None,
    now: float | None = None,
    *,
    spend: bool = True,
) -> str:
    """The list for people (`/todos`, the panel, `-p`); `files`, when given, are lines
    listing what each task changed, shown under it; `spend`: each budget's spend (a list
    printed again whenever it reads differently leaves it out: it changes per request)."""
    if not tasks:
        return "No tasks yet"
    now = time.time() if now is None else now
    lines = []
    for task in tasks:
        line = f"{mark(task)} #{task.id} {task.subject}"
        if task.status == "in_progress" and task.activeForm:
            line += f"  ← {task.activeForm}"
        lines.append(line)
        if check := check_line(task):
            lines.append(f"    {check}{_last_run(task)}")
        if spend and (spent := spend_line(task, now)):
            lines.append(f"    {spent}")
        lines.extend(f"    {row}" for row in (files or {}).get(task.id, ()))
    done = sum(1 for t in tasks if t.status == "completed")
    verified = sum(1 for t in tasks if t.verified)
    lines.append(f"({done}/{len(tasks)} completed{f', {verified} verified' if verified else ''})")
    return "\n".join(lines)


def _last_run(task: Task) -> str:
    """When the check as it is now last ran, and for how long: ` (14:02, 0.4 s)`."""
    last = task.last_check
    if last is None or last.command != task.verify or task.check_running is not None:
        return ""
    return f" ({time.strftime('%H:%M', time.localtime(last.at))}, {last.seconds:.1f} s)"


LEGEND = "☐ pending ◼ in_progress ☒ completed ☑ verified"
"""The marks, said once under a list the model reads."""


def render_for_model(tasks: Sequence[Task], now: float | None = None) -> str:
    """The list for the model in the panel's compact form (`◼ #2 Add pagination`), with what
    the panel shows beside it in words: owner, open blockers, check, budget; the marks' legend last."""
    if not tasks:
        return "No tasks."
    now = time.time() if now is None else now
    lines = []
    for task in tasks:
        line = f"{mark(task)} #{task.id} {task.subject}"
        if task.claim is not None:
            line += f" (sub-agent {task.claim.agent} is working on it)"
        elif task.owner:
            line += f" (owner: {task.owner})"
        blockers = open_blockers(task, tasks)
        if blockers:
            line += " [blocked by " + ", ".join(f"#{b}" for b in blockers) + "]"
        if task.attempts:
            last = task.attempts[-1]
            line += f" [{len(task.attempts)} attempt(s); last: {last.outcome} by {last.agent}]"
        if check := check_line(task, width=200):
            line += f" [check: {check}]"
        if spend := spend_line(task, now):
            line += f" [{spend}]"
        lines.append(line)
    lines.append(f"({LEGEND})")
    return "\n".join(lines)
