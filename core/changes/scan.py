"""A cheap before/after look at the workspace, to find what a shell command changed.

Before a Bash call (only while a task is in progress) the workspace's files are listed
with their size and modification time: in a git repository the tracked and untracked,
not ignored files (`git ls-files`), elsewhere a walk that skips the usual heavy folders.
Files a command may change whose old content git cannot give back (untracked or modified
ones, or every file outside a repository) are read up front, newest first, within a
budget. After the command a second listing tells which files were created, modified or
deleted; their old content comes from that read, or from git's index for a file that was
clean. A file whose old content was neither read nor in git is reported as changed with
its old content unknown (it cannot be rewound). A file read ahead is also compared by
content afterwards, since a rewrite of the same size in the same tick of the file
system's clock leaves its size and time as they were.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .on_disk import look

MAX_FILES = 20_000
"""A listing stops here: a command's changes past it go unnoticed (said in `Scan.partial`)."""
PREREAD_FILES = 300
PREREAD_BYTES = 8_000_000
"""How much old content is read ahead of a command, at most."""
SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"}
)
GIT_TIMEOUT = 10.0

Stamp = tuple[int, int]
"""(size, mtime in ns)."""


@dataclass
class Scan:
    """The workspace's files at one moment: relative posix path → (size, mtime_ns)."""

    stamps: dict[str, Stamp]
    git: bool
    dirty: frozenset[str] = frozenset()
    """In a repository: files `git status` lists as changed or untracked."""
    contents: dict[str, bytes] = field(default_factory=dict)
    """Old content read ahead, for files git cannot give back."""
    partial: bool = False


def _git(root: Path, *args: str) -> bytes | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, timeout=GIT_TIMEOUT, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _is_repo(root: Path) -> bool:
    out = _git(root, "rev-parse", "--show-toplevel")
    return out is not None and Path(out.decode(errors="replace").strip()).resolve() == root.resolve()


def _walk(root: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        base = Path(folder).relative_to(root)
        for name in sorted(names):
            found.append((base / name).as_posix())
            if len(found) > MAX_FILES:
                return found
    return found


def _git_files(root: Path) -> list[str] | None:
    out = _git(root, "ls-files", "-z", "-co", "--exclude-standard")
    return None if out is None else [p for p in out.decode(errors="surrogateescape").split("\0") if p]


def _dirty(root: Path) -> frozenset[str]:
    out = _git(root, "status", "--porcelain", "-z", "--untracked-files=all")
    if out is None:
        return frozenset()
    paths = set()
    for entry in out.decode(errors="surrogateescape").split("\0"):
        if len(entry) > 3 and entry[2] == " ":
            paths.add(entry[3:])
    return frozenset(paths)


def _stamps(root: Path, names: list[str]) -> dict[str, Stamp]:
    stamps: dict[str, Stamp] = {}
    for name in names[:MAX_FILES]:
        try:
            st = (root / name).lstat()
        except OSError:
            continue
        if not os.path.islink(root / name) and (st.st_mode & 0o170000) == 0o100000:  # regular files only
            stamps[name] = (st.st_size, st.st_mtime_ns)
    return stamps


def scan(root: Path, *, read_ahead: bool = False, keep_limit: int = 1_000_000) -> Scan:
    """List the workspace; with `read_ahead`, also read old content git cannot give back."""
    git = _is_repo(root)
    names = _git_files(root) if git else None
    if names is None:
        git, names = False, _walk(root)
    result = Scan(_stamps(root, names), git, _dirty(root) if git else frozenset(), partial=len(names) > MAX_FILES)
    if read_ahead:
        candidates = [n for n in result.stamps if not git or n in result.dirty]
        candidates.sort(key=lambda n: result.stamps[n][1], reverse=True)
        budget = PREREAD_BYTES
        for name in candidates[:PREREAD_FILES]:
            size = result.stamps[name][0]
            if size > keep_limit or size > budget:
                continue
            now = look(root / name, keep_limit)  # listed as a regular file; may be a FIFO by now
            if now.data is None:
                continue
            result.contents[name] = now.data
            budget -= size
    return result


def changed(before: Scan, after: Scan, root: Path) -> list[str]:
    """Paths created, modified or deleted between two scans, sorted.

    Size and modification time miss a rewrite of the same size within one tick of the
    file system's clock (a file written just before the command, then again by it): a file
    whose old content was read ahead is compared by content too, so such a change is seen.
    """
    paths = set(before.stamps) | set(after.stamps)
    return sorted(
        p
        for p in paths
        if before.stamps.get(p) != after.stamps.get(p)
        or (p in before.contents and _rewritten(root / p, before.contents[p]))
    )


def _rewritten(path: Path, old: bytes) -> bool:
    try:
        return path.read_bytes() != old
    except OSError:
        return False  # gone or unreadable now: the stamps say what they can


def old_content(root: Path, before: Scan, path: str) -> bytes | None:
    """What `path` held at the `before` scan, when known; None when it is not."""
    if path in before.contents:
        return before.contents[path]
    if before.git and path not in before.dirty:
        return _git(root, "show", f":{path}")  # clean: the index holds exactly this content
    return None
