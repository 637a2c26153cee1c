"""The ignore files ripgrep honours by default, for Grep's Python walk.

So that Grep finds the same files with and without ripgrep installed, the walk skips
what `rg` skips in a search (with `--hidden`, so hidden files are searched):

- `.gitignore` files, nested ones included, and `.git/info/exclude` and the global
  `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`) — but only inside a git
  repository, and not above the repository's root;
- `.ignore` and `.rgignore` files, in or out of a repository, in every directory from
  the file system's root down.

Precedence is ripgrep's: a match in any `.rgignore` beats one in any `.ignore`, which
beats `.gitignore`, then `.git/info/exclude`, then the global file; within one kind the
deepest file wins, and within a file the last matching line (so `!pattern` re-includes).
A directory that is ignored is not entered. Not read: a `core.excludesFile` set in git's
config (the default location above is). An ignore file is read as any file a repository
brought (`core/repo_files.py`): one that is not a regular file, or is past `MAX_IGNORE_BYTES`,
is skipped and named in `IgnoreRules.skipped`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec
from pathspec.pattern import RegexPattern

from ..repo_files import RepoFileError, read_repo_file

Rules = list[RegexPattern]
"""One ignore file's lines, compiled (blank lines and comments included, as no-ops)."""

KINDS = (".rgignore", ".ignore", ".gitignore")
"""Ignore files by precedence, highest first; `.gitignore` counts only in a repository."""
_GIT_KINDS = (".gitignore", "exclude", "global")


@dataclass(frozen=True)
class _Level:
    """The rules of one directory: one spec per kind of ignore file present."""

    directory: str
    specs: dict[str, Rules]
    has_git: bool


MAX_IGNORE_BYTES = 1_000_000
"""An ignore file past this is skipped (as one that is not a regular file): see `core/repo_files.py`."""


def _read_spec(path: str, skipped: dict[str, str]) -> Rules | None:
    """The file's rules; None when there is none, or it cannot be used (then `skipped`
    says why: a FIFO or a link to `/dev/zero` in a cloned repository must not hang the walk)."""
    try:
        found = read_repo_file(Path(path), MAX_IGNORE_BYTES)
    except RepoFileError as exc:
        if os.path.isdir(path):  # a folder named `.ignore` is no ignore file, and no news
            return None
        skipped[path] = str(exc)
        return None
    if found is None:
        return None
    lines = found.text(errors="replace").splitlines()
    return [p for p in pathspec.GitIgnoreSpec.from_lines(lines).patterns if isinstance(p, RegexPattern)]


def _global_gitignore() -> str:
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "git", "ignore")


def _level(directory: str, skipped: dict[str, str]) -> _Level:
    specs = {kind: spec for kind in KINDS if (spec := _read_spec(os.path.join(directory, kind), skipped)) is not None}
    has_git = os.path.exists(os.path.join(directory, ".git"))
    exclude = _read_spec(os.path.join(directory, ".git", "info", "exclude"), skipped) if has_git else None
    if exclude is not None:
        specs["exclude"] = exclude
    return _Level(directory, specs, has_git)


class IgnoreRules:
    """Which paths ripgrep would skip in a search. One per search: each directory's ignore
    files are read once, when the first path below it is asked about.

    `require_git=False` (ripgrep's `--no-require-git`) reads `.gitignore` files outside a
    repository too: the `@` file list honours a project's `.gitignore` whether or not it
    is a git checkout yet."""

    def __init__(self, *, require_git: bool = True) -> None:
        self._levels: dict[str, _Level] = {}
        self.skipped: dict[str, str] = {}
        """Ignore files not used (path → why): their rules do not apply."""
        self._global = _read_spec(_global_gitignore(), self.skipped)
        self._require_git = require_git

    def ignored(self, path: str | Path, *, is_dir: bool) -> bool:
        """Whether ripgrep skips `path` (a file or directory met in the walk)."""
        target = os.path.abspath(path)
        return bool(self._verdict(self._chain(os.path.dirname(target)), target, is_dir))

    def _chain(self, directory: str) -> list[_Level]:
        """The levels from `directory` up to the file system's root, deepest first."""
        chain: list[_Level] = []
        current = directory
        while True:
            level = self._levels.get(current)
            if level is None:
                level = self._levels[current] = _level(current, self.skipped)
            chain.append(level)
            parent = os.path.dirname(current)
            if parent == current:
                return chain
            current = parent

    def _verdict(self, chain: Sequence[_Level], target: str, is_dir: bool) -> bool | None:
        in_repo = any(level.has_git for level in chain)
        for kind in (*KINDS, "exclude"):
            if kind in _GIT_KINDS and not in_repo and (self._require_git or kind != ".gitignore"):
                continue
            for level in chain:
                spec = level.specs.get(kind)
                if spec is not None:
                    found = _check(spec, target, level.directory, is_dir)
                    if found is not None:
                        return found
                if kind in _GIT_KINDS and level.has_git:
                    break  # git's rules stop at the repository's root
        if in_repo and self._global is not None:
            root = next(level.directory for level in chain if level.has_git)
            return _check(self._global, target, root, is_dir)
        return None


def _check(rules: Rules, target: str, directory: str, is_dir: bool) -> bool | None:
    """True: ignored; False: re-included by a `!` line; None: no line matches. The last
    matching line decides."""
    relative = os.path.relpath(target, directory).replace(os.sep, "/") + ("/" if is_dir else "")
    verdict: bool | None = None
    for pattern in rules:
        if _matches_itself(pattern, relative):
            verdict = pattern.include
    return verdict


def _matches_itself(pattern: RegexPattern, relative: str) -> bool:
    """Whether `pattern` names this very path. Git (and pathspec) also count a path inside
    a matching directory; ripgrep checks each entry as the walk meets it, so a directory
    the walk starts in is searched even when an ignore file names it (`rg x build/`)."""
    if pattern.include is None or pattern.regex is None:
        return False
    found = pattern.regex.match(relative)
    if found is None:
        return False
    if "ps_d" in pattern.regex.groupindex and found.group("ps_d") is not None:
        return found.end("ps_d") == len(relative)  # not just an ancestor directory of it
    # `dir/**` is everything inside `dir`, not `dir` itself.
    return not (relative.endswith("/") and found.end() == len(relative))


def unreadable_ignore_files(target: Path) -> dict[str, str]:
    """The ignore files around a search of `target` (in its folder and every folder above
    it) that cannot be read safely, path → why. Blocking (a few stat calls per level)."""
    skipped: dict[str, str] = {}
    directory = os.path.abspath(target if target.is_dir() else target.parent)
    while True:
        for name in (*KINDS, os.path.join(".git", "info", "exclude")):
            _read_spec(os.path.join(directory, name), skipped)
        parent = os.path.dirname(directory)
        if parent == directory:
            return skipped
        directory = parent
