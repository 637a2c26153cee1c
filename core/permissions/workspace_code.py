"""What workspace code a trusted command runs, and one fingerprint of all of it.

An accepted project MCP server (`python3 mcp/server.py`) or hook (`sh hooks/check.sh`) runs
files of the workspace, which the model can rewrite. Trust keyed on the command line alone
would let the next run execute the model's code as the person's. So the trust of a project
server or hook covers its `Footprint`:

- every workspace file or folder the command line names: the program when it is a path,
  an interpreter's file argument, a directory argument, a `-m` module's package folder;
- everything under the folder of the script it runs (the first file named), which holds
  what the script imports or sources (not for a script in the workspace's root: that
  would be the whole project, and the question says so instead); and a file a shell
  script sources, wherever it is;
- read as files a repository brought (`core/repo_files.py`), hashed path and content, in
  name order, skipping `.git/` and `__pycache__/` (Python writes those itself). Past
  `MAX_FILES` files or `MAX_BYTES` bytes the hashing stops and `Footprint.partial` says so.

What the command runs that the line does not show (`uv run`, `npx`, `make`, a word computed
from a variable, a file sourced by a computed name) is said in `Footprint.unseen`, in words
for the trust question. The footprint's paths are also what the gate keeps the model from
editing while the trust stands (`PermissionPolicy.protected_code`).

Hashing blocks: run it off the event loop. A file's hash is kept by its size, modification
time and inode, so checking again before each run of a hook costs a `stat` per file.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..repo_files import RepoFileError, read_repo_file
from .command_forms import analyse

MAX_FILES = 2_000
MAX_BYTES = 20_000_000
_SKIP = frozenset({".git", "__pycache__"})
_INTERPRETERS = re.compile(r"(python|pypy|node|deno|bun|ruby|perl|php|lua|Rscript|bash|sh|zsh|dash|ksh|fish)[\d.]*")
_SHELLS = re.compile(r"(bash|sh|zsh|dash|ksh)")
_RUNNERS = {
    "uv": "uv",
    "npx": "npx",
    "npm": "npm",
    "pnpm": "pnpm",
    "yarn": "yarn",
    "bunx": "bunx",
    "poetry": "poetry",
    "pipenv": "pipenv",
    "pdm": "pdm",
    "hatch": "hatch",
    "make": "make",
    "just": "just",
    "cargo": "cargo",
    "go": "go",
    "gradle": "gradle",
    "mvn": "mvn",
    "tox": "tox",
    "nox": "nox",
}
"""Programs that run the project's code chosen by its own files (pyproject, package.json,
Makefile…), not by the command line."""
_SOURCE_LINE = re.compile(r"^\s*(?:source|\.)\s+(\S+)", re.MULTILINE)
_PLAIN_PATH = re.compile(r"[A-Za-z0-9/._+-]+")
_PROJECT_DIR = re.compile(r"\$\{?(CLAUDE_PROJECT_DIR|TODO_AGENT_PROJECT_DIR)\}?")


@dataclass(frozen=True)
class Footprint:
    """The workspace code one command runs."""

    paths: tuple[Path, ...] = ()
    """Resolved files and folders inside the workspace, as named or reached."""
    digest: str = ""
    """sha256 over every file under `paths` (path and content); "" when there is none."""
    unseen: tuple[str, ...] = ()
    """Sentences: workspace code it may run that the command line does not show."""
    partial: str = ""
    """Why not all of it could be hashed (past the bounds); "" when all was."""
    sourced: tuple[str, ...] = field(default=(), compare=False)
    """Workspace-relative files a shell script sources (shown in the trust question)."""
    shown: tuple[str, ...] = field(default=(), compare=False)
    """`paths` as the person reads them: workspace-relative, a folder with its `/`."""

    def lines(self) -> list[str]:
        """What the trust question says about it, one line each (plain text)."""
        lines: list[str] = []
        if self.paths:
            lines.append(f"runs workspace code: {', '.join(self.shown)} (a change asks again)")
        lines += [f"sources {name}" for name in dict.fromkeys(self.sourced)]
        lines += list(self.unseen)
        if self.partial:
            lines.append(self.partial)
        return lines


def footprint_of_argv(argv: Sequence[str], cwd: Path, workspace: Path) -> Footprint:
    """The footprint of a program and its arguments (an MCP server's command and args)."""
    return _Finder(workspace.resolve(), cwd).argv(list(argv)).footprint()


def footprint_of_line(command: str, workspace: Path) -> Footprint:
    """The footprint of a shell line run in the workspace (a hook's command), read by the
    permission gate's shell reader: each program it runs, wrappers and `sh -c` unwrapped."""
    # Claude Code's hooks name their scripts under `$CLAUDE_PROJECT_DIR` (hooks get it set):
    # read as the path it will be, when that path needs no quoting where it stands.
    plain = _PLAIN_PATH.fullmatch(str(workspace)) is not None
    text = _PROJECT_DIR.sub(lambda _: str(workspace), command) if plain else command
    finder = _Finder(workspace.resolve(), workspace)
    analysis = analyse(text)
    for forms in analysis.commands:
        if any(w.value is None for w in forms.written):
            written = " ".join(str(w) for w in forms.written)
            finder.unseen.append(f"`{written}` has a word computed when it runs: todo-agent cannot see what it names")
        for form in forms.forms:  # as written (`./x.sh`), and without each wrapper (`timeout 5 …`)
            finder.argv([w.value for w in form if w.value is not None])
    return finder.footprint()


@dataclass
class _Finder:
    workspace: Path
    cwd: Path
    named: list[Path] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)
    sourced: list[str] = field(default_factory=list)

    def argv(self, argv: list[str]) -> _Finder:
        if not argv:
            return self
        program = os.path.basename(argv[0])
        if program in _RUNNERS and not (program == "uv" and argv[1:2] == ["tool"]):
            self.unseen.append(
                f"`{_RUNNERS[program]}` runs code the project's own files choose: todo-agent cannot see all of it"
            )
        files = [found for word in self._path_words(argv, program) if (found := self._inside(word)) is not None]
        for found in files:
            self._add(found)
        script = next((f for f in files if f.is_file()), None)
        if script is not None:
            self._script(script, program)
        return self

    def _path_words(self, argv: list[str], program: str) -> Iterator[str]:
        """The words that may name a path: the program when written as one, the arguments
        (an option's `=value` too); a `-m` module is added as its package folder."""
        if "/" in argv[0]:
            yield argv[0]
        rest = argv[1:]
        for index, word in enumerate(rest):
            if word == "-m" and _INTERPRETERS.fullmatch(program) and index + 1 < len(rest):
                self._module(rest[index + 1])
            elif word.startswith("-"):
                if value := word.partition("=")[2]:  # `--config=conf/x.toml` names a file too
                    yield value
            else:
                yield word

    def _script(self, script: Path, program: str) -> None:
        """The script the command runs (the first file it names): its folder too."""
        if script.parent != self.workspace:
            self._add(script.parent)  # what the script imports or sources lives beside it
        else:  # the whole project would be "beside it": every edit would ask
            self.unseen.append(
                f"{script.name} is in the project's root folder: what it imports from beside it is not fingerprinted"
            )
        if _SHELLS.fullmatch(program) or script.suffix in (".sh", ".bash") or _shebang_shell(script):
            self._sources(script)

    def _module(self, name: str) -> None:
        top = name.split(".", maxsplit=1)[0]
        for candidate in (self.cwd / top, self.cwd / f"{top}.py"):
            if (found := self._inside(str(candidate))) is not None:
                self._add(found)

    def _sources(self, script: Path) -> None:
        try:
            read = read_repo_file(script, 256_000, cut=True)
        except RepoFileError:
            return
        if read is None:
            return
        for match in _SOURCE_LINE.finditer(read.text(errors="replace")):
            word = match.group(1)
            if "$" in word or "`" in word:
                self.unseen.append(f"{_relative(script, self.workspace)} sources a file whose name is computed")
                continue
            # `.` looks in the shell's folder, which may be the script's or the workspace:
            # both are taken.
            targets = [Path(word)] if os.path.isabs(word) else [script.parent / word, self.cwd / word]
            for target in targets:
                if (found := self._inside(str(target))) is not None and found.is_file():
                    self._add(found)
                    self.sourced.append(_relative(found, self.workspace))

    def _inside(self, word: str) -> Path | None:
        if not word or "\0" in word:
            return None
        path = Path(word).expanduser() if word.startswith("~") else Path(word)
        path = path if path.is_absolute() else self.cwd / path
        try:
            resolved = path.resolve()
            if not os.path.lexists(path) or not resolved.is_relative_to(self.workspace):
                return None
        except (OSError, RuntimeError, ValueError):
            return None
        return resolved

    def _add(self, path: Path) -> None:
        if not any(path == p or p in path.parents for p in self.named):
            self.named = [p for p in self.named if path not in p.parents]  # a folder covers what is in it
            self.named.append(path)

    def footprint(self) -> Footprint:
        if not self.named:
            return Footprint(unseen=tuple(dict.fromkeys(self.unseen)))
        paths = tuple(sorted(self.named))
        digest, partial = _hash(paths, self.workspace)
        shown = tuple(_relative(p, self.workspace) + ("/" if p.is_dir() else "") for p in paths)
        return Footprint(paths, digest, tuple(dict.fromkeys(self.unseen)), partial, tuple(self.sourced), shown)


def _hash(paths: Sequence[Path], workspace: Path) -> tuple[str, str]:
    total = hashlib.sha256()
    size = 0
    for count, file in enumerate(_files(paths), 1):
        if count > MAX_FILES:
            return total.hexdigest(), f"more than {MAX_FILES:,} files: only the first {MAX_FILES:,} are fingerprinted"
        entry, length = _file_hash(file, MAX_BYTES - size)
        size += length
        total.update(f"{_relative(file, workspace)}\0{entry}\n".encode("utf-8", "surrogateescape"))
        if size >= MAX_BYTES:
            return total.hexdigest(), f"more than {MAX_BYTES // 1_000_000} MB: only the first are fingerprinted"
    return total.hexdigest(), ""


def _files(paths: Sequence[Path]) -> Iterator[Path]:
    """Every file under `paths`, in name order; links to folders are not followed."""
    for path in paths:
        if not path.is_dir():
            yield path
            continue
        for directory, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
            for name in sorted(filenames):
                yield Path(directory) / name


_CACHE: dict[Path, tuple[tuple[int, int, int], str, int]] = {}
"""File → (size, mtime_ns, inode) when hashed, its hash, its length."""


def _file_hash(file: Path, room: int) -> tuple[str, int]:
    """The file's content hash (or what it is, when not a regular file) and its length."""
    try:
        info = os.stat(file)
    except OSError:
        return "missing", 0
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file", 0
    key = (info.st_size, info.st_mtime_ns, info.st_ino)
    cached = _CACHE.get(file)
    if cached is not None and cached[0] == key:
        return cached[1], cached[2]
    try:
        read = read_repo_file(file, max(room, 0), cut=True)
    except RepoFileError as exc:
        return str(exc), 0
    if read is None:
        return "missing", 0
    entry = hashlib.sha256(read.data).hexdigest() + ("+" if read.cut else "")
    length = len(read.data) + (1 if read.cut else 0)
    if not read.cut:
        _CACHE[file] = (key, entry, length)
    return entry, length


def _shebang_shell(script: Path) -> bool:
    try:
        read = read_repo_file(script, 128, cut=True)
    except RepoFileError:
        return False
    first = read.data.split(b"\n", 1)[0] if read is not None else b""
    return first.startswith(b"#!") and re.search(rb"\b(ba|z|da|k)?sh\b", first) is not None


def _relative(path: Path, workspace: Path) -> str:
    try:
        return path.relative_to(workspace.resolve()).as_posix() or "."
    except ValueError:
        return str(path)
