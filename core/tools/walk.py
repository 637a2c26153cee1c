"""The file walks behind Glob and Grep: glob patterns, which files a search may report,
and the order and rules by which it finds them.

Both walks skip SKIP_DIRS (VCS data, dependencies, caches) and never report a file that
resolves (through a symlink) outside the search's boundary (`search_boundary`) or that a deny
rule on reading hides. Grep's walk (`candidate_files`, run in `grep_worker.py`) reads the
ignore files ripgrep reads (`ignores.py`); Glob's (`find_files`) reads none.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from ..globs import compile_glob
from .context import ToolContext
from .ignores import IgnoreRules
from .results import ToolError

MAX_MATCH_CHARS = 500
"""The longest part of a matching line that Grep shows."""
SKIP_DIRS = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", ".hg", ".svn", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)


def glob_regex(pattern: str) -> re.Pattern[str]:
    try:
        return compile_glob(pattern)
    except ValueError as exc:
        raise ToolError(str(exc)) from exc


def search_boundary(root: Path, ctx: ToolContext) -> Path:
    """Where results may resolve to: the workspace when `root` is inside it, else `root`
    itself (a search outside was approved for that directory, not for its links)."""
    real_root = Path(os.path.realpath(root))
    real_workspace = Path(os.path.realpath(ctx.workspace))
    return real_workspace if real_root.is_relative_to(real_workspace) else real_root


def within(path: str | Path, boundary: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(boundary)


def links_out(path: str | Path, boundary: Path) -> bool:
    """For walk entries: the walk does not descend into linked directories, so only an
    entry that is itself a symlink can lead outside (one lstat for the rest)."""
    return os.path.islink(path) and not within(path, boundary)


def find_files(
    root: Path, regex: re.Pattern[str], max_depth: int | None, boundary: Path, hidden: Callable[[str], bool]
) -> list[tuple[float, str]]:
    """(mtime, path) of every file under `root` whose relative path matches, except those
    outside `boundary` and those `hidden` by a deny rule."""
    found: list[tuple[float, str]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        depth = prefix.count("/")
        dirnames[:] = [] if max_depth is not None and depth >= max_depth else sorted(set(dirnames) - SKIP_DIRS)
        for name in filenames:
            if regex.match(prefix + name):
                full = os.path.join(dirpath, name)
                if links_out(full, boundary) or hidden(full):
                    continue
                try:
                    found.append((os.stat(full).st_mtime, full))
                except OSError:  # vanished, or a dangling symlink
                    continue
    found.sort(key=lambda item: (-item[0], item[1]))
    return found


def candidate_files(
    target: Path, file_glob: str | None, boundary: Path, hidden: Callable[[str], bool] = lambda path: False
) -> Iterator[Path]:
    """The files Grep searches under `target`, in ripgrep's order and by ripgrep's rules.

    Depth first, each directory's entries (files and directories together) sorted by name,
    as `rg --sort path` lists them. Skipped: SKIP_DIRS (files of those names too), what
    ignore files exclude (`ignores.py`), links that lead outside `boundary`, and what
    `hidden` refuses. Like `rg --glob`, a glob without "/" matches the name at any depth;
    a glob overrides the ignore files: a file it matches is searched even if a
    `.gitignore` names it, and a directory it matches is entered.
    """
    if target.is_file():
        if not hidden(str(target)):
            yield target
        return
    matcher = glob_regex(file_glob) if file_glob else None
    by_name = file_glob is not None and "/" not in file_glob
    ignores = IgnoreRules()
    stack = [_sorted_entries(str(target), "")]
    while stack:
        entry, rel = next(stack[-1], (None, ""))
        if entry is None:
            stack.pop()
            continue
        if entry.name in SKIP_DIRS:
            continue
        globbed = matcher is not None and matcher.match(entry.name if by_name else rel) is not None
        if _is_dir(entry):
            if not entry.is_symlink() and (globbed or not ignores.ignored(entry.path, is_dir=True)):
                stack.append(_sorted_entries(entry.path, rel + "/"))
            continue
        wanted = globbed if matcher is not None else not ignores.ignored(entry.path, is_dir=False)
        if wanted and not links_out(entry.path, boundary) and not hidden(entry.path):
            yield Path(entry.path)


def _sorted_entries(directory: str, rel_dir: str) -> Iterator[tuple[os.DirEntry[str], str]]:
    """`directory`'s entries by name, each with its path relative to the search root."""
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError:  # vanished, or unreadable: nothing to search there
        return
    for entry in entries:
        yield entry, rel_dir + entry.name


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def open_regular(file: Path) -> IO[bytes] | None:
    """Open `file` for reading if it is a regular file, else None.

    Non-blocking, then checked on the open descriptor: `open()` of a FIFO blocks until a
    writer appears, and a file swapped for one between a check and the open must not hang us.
    (O_NONBLOCK changes nothing for the regular files we go on to read.)
    """
    if not stat.S_ISREG(os.stat(file).st_mode):
        return None
    fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")
