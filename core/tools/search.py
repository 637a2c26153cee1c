"""Search tools: Glob (find files by name) and Grep (find lines by regex).

Both skip the directories nobody means to search (VCS data, dependencies, caches).
Grep uses ripgrep when it is installed and a Python walk otherwise; the Python walk
is also the fallback when ripgrep rejects a pattern that Python's `re` accepts. The walk
finds what ripgrep finds, in its order: it reads the same ignore files (`ignores.py`).
Glob reads no ignore files. The walks themselves are in `walk.py`. Grep's searches
run as child processes (`grep_worker.py` for Python), so a search is killed when the
turn is interrupted, at SEARCH_TIMEOUT, or once enough matches are in: a pattern that
backtracks for ever cannot hang the session.

Neither reports a file that resolves (through a symlink) outside the workspace when the
search started inside it: the permission check approved the searched path, not wherever
its links point. Nor does either report a file that a deny rule on reading covers
(`Read(.env)`): the rule was checked against the search root, and is checked again
against everything found. Grep reads regular files only: a FIFO would block forever, a device
(`/dev/zero`) never ends.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from ..globs import split_literal_prefix
from .arguments import Arguments, OptionalPath, Text
from .base import declare, short
from .context import ToolContext
from .fs import display_path, printable
from .ignores import unreadable_ignore_files
from .results import ToolError
from .walk import MAX_MATCH_CHARS, SKIP_DIRS, find_files, glob_regex, search_boundary, within

MAX_FILES = 200
MAX_MATCHES = 250
MAX_OUTPUT_BYTES = 30_000
SEARCH_TIMEOUT = 60.0
"""Seconds a Grep may search before it is stopped (a pattern that backtracks forever)."""
_CHUNK = 65_536


# --- Glob ---------------------------------------------------------------------------


def _summary(args: dict[str, Any]) -> str:
    where = f" in {args['path']}" if args.get("path") else ""
    return short(f"{args.get('pattern', '')}{where}")


def _search_root(path: str | None, ctx: ToolContext) -> Path:
    if path is None:
        return ctx.workspace
    root = ctx.resolve(path)
    if not root.exists():
        raise ToolError(f"Path does not exist: {display_path(root, ctx)}")
    return root


class GlobArgs(Arguments):
    pattern: Text = Field(description="Glob pattern, e.g. `**/*.py` or `src/**/*.{ts,tsx}`.")
    path: OptionalPath = Field(None, description="Directory to search in (default: the workspace root).")


async def _glob(args: GlobArgs, ctx: ToolContext) -> str:
    pattern = args.pattern
    base = _search_root(args.path, ctx)
    if not base.is_dir():
        raise ToolError(f"{display_path(base, ctx)} is not a directory")
    prefix, rest = split_literal_prefix(pattern)
    # Without `**` a pattern reaches a fixed depth; no need to walk below it.
    max_depth = None if "**" in rest else rest.count("/")
    root = base / prefix
    found = await asyncio.to_thread(
        find_files, root, glob_regex(rest), max_depth, search_boundary(root, ctx), ctx.read_denied
    )
    if not found:
        return "No files found"
    lines = [display_path(Path(full), ctx) for _, full in found[:MAX_FILES]]
    if len(found) > MAX_FILES:
        lines.append(
            f"… ({len(found)} files matched; showing the {MAX_FILES} most recently modified. "
            "Use a narrower pattern or path.)"
        )
    return printable("\n".join(lines))


# The pattern's literal directories are walked too: `../*` and `/etc/*` look outside.
GLOB = declare("Glob", GlobArgs, _glob, kind="read", paths={"path": "read", "pattern": "glob"}, summarize=_summary)


# --- Grep ---------------------------------------------------------------------------


class _Matches:
    """`path:line:text` rows, refusing more once the match or byte cap is reached.

    Rows for paths `keep` refuses (outside the search boundary) are dropped silently.
    """

    def __init__(self, show: Callable[[str], str], keep: Callable[[str], bool]) -> None:
        self.rows: list[str] = []
        self.capped = False
        self._size = 0
        self._show = show
        self._keep = functools.lru_cache(maxsize=256)(keep)  # rg repeats a path per match

    def add(self, path: str, line_no: int, text: str) -> bool:
        """Record one match; False once full (the caller stops searching)."""
        if not self._keep(path):
            return True
        text = text.rstrip("\r\n")
        if len(text) > MAX_MATCH_CHARS:
            text = text[:MAX_MATCH_CHARS] + " … [line cut]"
        row = f"{self._show(path)}:{line_no}:{text}"
        if len(self.rows) >= MAX_MATCHES or self._size + len(row) > MAX_OUTPUT_BYTES:
            self.capped = True
            return False
        self.rows.append(row)
        self._size += len(row) + 1
        return True


def _rg_argv(rg: str, pattern: str, target: Path, file_glob: str | None) -> list[str]:
    argv = [rg, "--line-number", "--no-heading", "--color", "never", "--with-filename", "--null"]
    # Sorted output is deterministic and matches the Python walk's order.
    argv += ["--hidden", "--sort", "path", "--max-columns", str(MAX_MATCH_CHARS), "--max-columns-preview"]
    # `--crlf` so `$` and `\s` see lines without their "\r", as the Python walk does.
    argv += ["--crlf"]
    # Never follow symlinks (rg's default, said out loud so it stays): a link may point
    # outside the workspace. Rows are filtered by resolved path as well.
    argv += ["--no-follow"]
    if file_glob:
        argv += ["--glob", file_glob]
    for name in sorted(SKIP_DIRS):  # later globs win, so these exclusions hold
        argv += ["--glob", f"!{name}"]
    return [*argv, "--regexp", pattern, "--", str(target)]


async def _read_rg_output(stream: asyncio.StreamReader, matches: _Matches) -> int:
    """Parse `path NUL line:text` rows into `matches`; returns how many were seen."""
    seen, pending = 0, b""
    while chunk := await stream.read(_CHUNK):
        *rows, pending = (pending + chunk).split(b"\n")
        for row in rows:
            path, _, rest = row.partition(b"\0")
            line_no, _, text = rest.partition(b":")
            if not line_no.isdigit():
                continue
            seen += 1
            if not matches.add(os.fsdecode(path), int(line_no), text.decode("utf-8", errors="replace")):
                return seen
    return seen


def _worker_argv(pattern: str, target: Path, file_glob: str | None, boundary: Path) -> list[str]:
    module = "todo_agent.core.tools.grep_worker"
    return [sys.executable, "-m", module, pattern, str(target), str(boundary), file_glob or "", str(os.getpid())]


@dataclass
class _Run:
    """How one search process ended."""

    code: int | None
    """Its exit status; None if it could not start."""
    seen: int = 0
    timed_out: bool = False


async def _search_process(argv: list[str], matches: _Matches) -> _Run:
    """Run a search process that writes `path NUL line:text` rows, into `matches`.

    It is killed at SEARCH_TIMEOUT, once `matches` is full, and when this call is
    cancelled (escape in the TUI, Ctrl-C headless): nothing outlives the call.
    """
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
        )
    except OSError:
        return _Run(None)
    assert proc.stdout is not None
    run, stopped_early = _Run(None), True
    try:
        try:
            async with asyncio.timeout(SEARCH_TIMEOUT):
                run.seen = await _read_rg_output(proc.stdout, matches)
        except TimeoutError:
            run.timed_out = True
        stopped_early = matches.capped or run.timed_out
    finally:
        # (After EOF it is exiting by itself, and killing it then would lose its exit
        # code.) Drain so asyncio notices the exit even if the pipe buffer was full.
        if stopped_early and proc.returncode is None:
            proc.kill()
        while await proc.stdout.read(_CHUNK):
            pass
        await proc.wait()
    run.code = proc.returncode
    return run


class GrepArgs(Arguments):
    pattern: Text = Field(description="Regular expression (Python `re` syntax) to search for.")
    path: OptionalPath = Field(None, description="File or directory to search (default: the workspace root).")
    glob: OptionalPath = Field(None, description="Only search files matching this glob, e.g. `*.py`.")


async def _grep(args: GrepArgs, ctx: ToolContext) -> str:
    pattern = args.pattern
    try:
        re.compile(pattern)  # a bad regex is the model's to fix, whichever engine runs
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from exc
    target = _search_root(args.path, ctx)
    if not (target.is_dir() or target.is_file()):  # reading a FIFO or a device never ends
        raise ToolError(f"{display_path(target, ctx)} is not a regular file or a directory")
    file_glob = args.glob
    if file_glob:
        glob_regex(file_glob)  # a bad glob is the model's to fix, whichever engine runs
    rg = shutil.which("rg")  # looked up per call: installing rg mid-session just works

    boundary = search_boundary(target, ctx)

    def show(path: str) -> str:
        return display_path(Path(path), ctx)

    def keep(path: str) -> bool:
        return within(path, boundary) and not ctx.read_denied(path)

    matches = _Matches(show, keep)
    # ripgrep opens each ignore file it meets and would wait on a FIFO for ever: where one
    # of those around the search cannot be read safely, the Python walk (which skips it) searches.
    skipped = await asyncio.to_thread(unreadable_ignore_files, target)
    run = _Run(None)
    if rg is not None and not skipped:
        run = await _search_process(_rg_argv(rg, pattern, target, file_glob), matches)
    # Exit 2 with no rows: rg could not run this search (a regex its engine rejects).
    if run.code is None or (run.code == 2 and run.seen == 0 and not run.timed_out):
        matches = _Matches(show, keep)
        run = await _search_process(_worker_argv(pattern, target, file_glob, boundary), matches)
    notes = "".join(f"\n(ignore file {display_path(Path(p), ctx)} not used: {why})" for p, why in skipped.items())
    if run.timed_out:
        found = f"{len(matches.rows)} match(es) so far" if matches.rows else "no matches so far"
        stop = (
            f"… (the search stopped after {SEARCH_TIMEOUT:g} s with {found}: simplify the pattern or narrow the path)"
        )
        return printable("\n".join([*matches.rows, stop]) + notes)
    if not matches.rows:
        return "No matches found" + notes
    text = "\n".join(matches.rows)
    if matches.capped:
        text += (
            f"\n… (showing the first {len(matches.rows)} matches; there are more. "
            "Use a narrower pattern, path or glob.)"
        )
    return printable(text + notes)


# `glob` only filters file names below `path`: not a path of its own.
GREP = declare("Grep", GrepArgs, _grep, kind="read", paths={"path": "read"}, summarize=_summary)

TOOLS = [GLOB, GREP]
