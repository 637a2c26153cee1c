"""The system context: the date and the project's instruction files."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..repo_files import RepoFileError, read_repo_file

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_INSTRUCTION_CHARS = 40_000

BASE_PROMPT = """\
You are todo-agent, a coding agent working in the terminal on the user's project at {workspace}.
Use the tools to read, search, edit and run things; do not guess file contents. Relative paths resolve
against the project root. Keep answers short and concrete; show what you changed and how you checked it.
{task_line}"""


@dataclass(frozen=True)
class Instructions:
    """One instruction file as it was read (at start-up: the session keeps that text)."""

    path: Path
    text: str


@dataclass(frozen=True)
class SystemContext:
    prompt: str
    instructions: tuple[Instructions, ...]
    date: str
    warnings: tuple[str, ...] = ()
    """Instruction files that could not be used (a FIFO, a link to a device, not a file)."""

    @property
    def loaded(self) -> tuple[Path, ...]:
        return tuple(found.path for found in self.instructions)


def find_instruction_files(workspace: Path) -> list[Path]:
    """AGENTS.md / CLAUDE.md from the repository root down to the working directory.

    The walk stops at the first directory holding `.git` (the repository root); outside
    a repository only the working directory itself is read. Outer files come first so
    that the more specific, inner instructions are read last. Whatever is there but a
    directory is listed: `read_instructions` refuses what is not a regular file.
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
        found.extend(
            path
            for path in (directory / name for name in INSTRUCTION_FILES)
            if os.path.lexists(path) and not path.is_dir()
        )
    return found


def read_instructions(workspace: Path) -> tuple[list[Instructions], list[str]]:
    """The instruction files' texts (each cut at MAX_INSTRUCTION_CHARS), and a warning per
    file skipped. Blocking: read once, off the event loop (`core/repo_files.py`)."""
    found: list[Instructions] = []
    warnings: list[str] = []
    for path in find_instruction_files(workspace):
        try:
            read = read_repo_file(path, MAX_INSTRUCTION_CHARS * 4, cut=True)
            if read is None:  # gone since the look
                continue
            text = read.text(errors="replace")
        except RepoFileError as exc:
            warnings.append(f"{path}: instructions not used: {exc}")
            continue
        if read.cut or len(text) > MAX_INSTRUCTION_CHARS:
            text = text[:MAX_INSTRUCTION_CHARS] + "\n… (truncated)"
        found.append(Instructions(path, text))
    return found, warnings


def build_system_context(
    workspace: Path,
    task_line: str,
    today: dt.date | None = None,
    *,
    instructions: Sequence[Instructions] | None = None,
) -> SystemContext:
    """The system prompt; the instruction files are read (blocking) unless `instructions`
    gives them as read before (a sub-agent gets the text its session started with)."""
    warnings: list[str] = []
    if instructions is None:
        read, warnings = read_instructions(workspace)
        instructions = read
    date = (today or dt.date.today()).isoformat()
    parts = [BASE_PROMPT.format(workspace=workspace, task_line=task_line).rstrip(), f"Today's date is {date}."]
    for found in instructions:
        parts.append(f"Instructions from {found.path}:\n<instructions>\n{found.text.strip()}\n</instructions>")
    return SystemContext("\n\n".join(parts), tuple(instructions), date, tuple(warnings))


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
