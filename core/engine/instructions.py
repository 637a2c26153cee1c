"""The system context: the date and the project's instruction files."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_INSTRUCTION_CHARS = 40_000

BASE_PROMPT = """\
You are todo-agent, a coding agent working in the terminal on the user's project at {workspace}.
Use the tools to read, search, edit and run things; do not guess file contents. Relative paths resolve
against the project root. Keep answers short and concrete; show what you changed and how you checked it.
{task_line}"""


@dataclass(frozen=True)
class SystemContext:
    prompt: str
    loaded: tuple[Path, ...]
    date: str


def find_instruction_files(workspace: Path) -> list[Path]:
    """AGENTS.md / CLAUDE.md from the repository root down to the working directory.

    The walk stops at the first directory holding `.git` (the repository root); outside
    a repository only the working directory itself is read. Outer files come first so
    that the more specific, inner instructions are read last.
    """
    start = workspace.resolve()
    chain = [start]
    if not (start / ".git").exists():
        for parent in start.parents:
            chain.append(parent)
            if (parent / ".git").exists():
                break
        else:
            chain = [start]
    found: list[Path] = []
    for directory in reversed(chain):
        found.extend(directory / name for name in INSTRUCTION_FILES if (directory / name).is_file())
    return found


def build_system_context(workspace: Path, task_line: str, today: dt.date | None = None) -> SystemContext:
    date = (today or dt.date.today()).isoformat()
    parts = [BASE_PROMPT.format(workspace=workspace, task_line=task_line).rstrip(), f"Today's date is {date}."]
    loaded: list[Path] = []
    for path in find_instruction_files(workspace):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if len(text) > MAX_INSTRUCTION_CHARS:
            text = text[:MAX_INSTRUCTION_CHARS] + "\n… (truncated)"
        loaded.append(path)
        parts.append(f"Instructions from {path}:\n<instructions>\n{text.strip()}\n</instructions>")
    return SystemContext("\n\n".join(parts), tuple(loaded), date)


def describe_loaded(context: SystemContext, workspace: Path) -> str:
    if not context.loaded:
        return "no project instructions (AGENTS.md / CLAUDE.md) found"
    names = []
    for path in context.loaded:
        try:
            names.append(path.relative_to(workspace.resolve()).as_posix())
        except ValueError:
            names.append(str(path))
    return "instructions loaded: " + ", ".join(names)
