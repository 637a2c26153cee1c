"""The task list as text: for people (`/todos`, the panel, `-p`) and for the model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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


def render_tasks(tasks: Sequence[Task], files: Mapping[str, Sequence[str]] | None = None) -> str:
    """The list for people (`/todos`, the panel, `-p`); `files`, when given, are lines
    listing what each task changed, shown under it."""
    if not tasks:
        return "No tasks yet"
    lines = []
    for task in tasks:
        line = f"{mark(task)} #{task.id} {task.subject}"
        if task.status == "in_progress" and task.activeForm:
            line += f"  ← {task.activeForm}"
        lines.append(line)
        if check := check_line(task):
            lines.append(f"    {check}")
        lines.extend(f"    {row}" for row in (files or {}).get(task.id, ()))
    done = sum(1 for t in tasks if t.status == "completed")
    verified = sum(1 for t in tasks if t.verified)
    lines.append(f"({done}/{len(tasks)} completed{f', {verified} verified' if verified else ''})")
    return "\n".join(lines)


def render_for_model(tasks: Sequence[Task]) -> str:
    """The compact list for the model: id, status, subject, owner, open blockers."""
    if not tasks:
        return "No tasks."
    lines = []
    for task in tasks:
        line = f"#{task.id} [{task.status}] {task.subject}"
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
            line += f" [check: {check}{'; verified' if task.verified else ''}]"
        lines.append(line)
    return "\n".join(lines)
