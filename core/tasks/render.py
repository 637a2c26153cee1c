"""The task list as text: for people (`/todos`, the panel, `-p`) and for the model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .model import Task
from .rules import open_blockers

MARKS: dict[str, str] = {"pending": "☐", "in_progress": "◼", "completed": "☒"}


def render_tasks(tasks: Sequence[Task], files: Mapping[str, Sequence[str]] | None = None) -> str:
    """The list for people (`/todos`, the panel, `-p`); `files`, when given, are lines
    listing what each task changed, shown under it."""
    if not tasks:
        return "No tasks yet"
    lines = []
    for task in tasks:
        line = f"{MARKS[task.status]} #{task.id} {task.subject}"
        if task.status == "in_progress" and task.activeForm:
            line += f"  ← {task.activeForm}"
        lines.append(line)
        lines.extend(f"    {row}" for row in (files or {}).get(task.id, ()))
    done = sum(1 for t in tasks if t.status == "completed")
    lines.append(f"({done}/{len(tasks)} completed)")
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
        lines.append(line)
    return "\n".join(lines)
