"""Reading a file that a repository brought: the one way todo-agent reads them.

A cloned repository chooses what its `.mcp.json`, `.todo-agent/settings.toml`, command and
agent files, `AGENTS.md` and ignore files are: a symlink to `/dev/zero` (endless), a FIFO
or `/dev/stdin` (a read that never returns), a gigabyte, a megabyte of `[`. Every such file
is read here, and only as:

- a regular file (checked on the open descriptor, which was opened without blocking, so a
  FIFO swapped in after a look still cannot hang the read); a symlink to a regular file is
  followed (`CLAUDE.md -> AGENTS.md` is common);
- at most `limit` bytes, by bounded reads (never `read_text()` then a length check): a
  bigger file is refused, or cut where the caller keeps a prefix (`cut=True`);
- parsed, for JSON and TOML, only below `MAX_NESTING` levels of brackets, checked by a scan
  before the parser sees it (the standard parsers recurse, and 200 kB of `[` raises
  RecursionError).

Every refusal is a `RepoFileError` with a one-line reason (the caller names the file and
says what it skips). Reads block: call them in a thread, never on the event loop.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_NESTING = 64
"""Brackets deep a JSON or TOML file may go: real settings stay under ten."""

_CHUNK = 65_536


class RepoFileError(Exception):
    """Why a repository's file is not used: one line, without the path (the caller adds it)."""


@dataclass(frozen=True)
class RepoFile:
    data: bytes
    cut: bool = False
    """More followed `data` (only with `cut=True`; otherwise a bigger file is refused)."""

    def text(self, *, errors: str = "strict") -> str:
        """The bytes as UTF-8; RepoFileError when they are not (with `errors="strict"`).
        A character cut in half at the end of a cut file is left out."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors)
        try:
            return decoder.decode(self.data, final=not self.cut)
        except UnicodeDecodeError as exc:
            raise RepoFileError(f"it is not UTF-8 text (byte {exc.start})") from None


def read_repo_file(path: Path, limit: int, *, cut: bool = False) -> RepoFile | None:
    """The file's bytes, None when it does not exist. RepoFileError when it is not a
    regular file, cannot be read, or (unless `cut`) holds more than `limit` bytes."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        raise RepoFileError("it is a directory, not a file") from None
    except OSError as exc:
        raise RepoFileError(f"cannot read it ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise RepoFileError("it is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise RepoFileError(f"it is not a regular file (a {_kind(info.st_mode)})")
        if info.st_size > limit and not cut:
            raise RepoFileError(f"it is larger than {limit:,} bytes")
        os.set_blocking(fd, True)
        data = _read_at_most(fd, limit + 1)  # one byte more tells a file that grew past the limit
    except OSError as exc:
        raise RepoFileError(f"cannot read it ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        if not cut:
            raise RepoFileError(f"it is larger than {limit:,} bytes")
        return RepoFile(data[:limit], cut=True)
    return RepoFile(data)


def read_repo_text(path: Path, limit: int) -> str | None:
    """`read_repo_file` as UTF-8 text (refused when it is not UTF-8); None when missing."""
    found = read_repo_file(path, limit)
    return None if found is None else found.text()


def _read_at_most(fd: int, count: int) -> bytes:
    parts: list[bytes] = []
    left = count
    while left > 0 and (chunk := os.read(fd, min(_CHUNK, left))):
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


# --- parsing with a nesting bound ----------------------------------------------------


def load_json(text: str) -> Any:
    """`json.loads`, refusing (RepoFileError) nesting deeper than MAX_NESTING first."""
    _check_depth(_json_depth(text))
    try:
        return json.loads(text)
    except RecursionError:  # the scan above should make this unreachable
        raise RepoFileError(f"nested deeper than {MAX_NESTING} levels") from None


def load_toml(text: str) -> dict[str, Any]:
    """`tomllib.loads`, refusing (RepoFileError) nesting deeper than MAX_NESTING first.
    `tomllib.TOMLDecodeError` passes through for the caller's own message."""
    _check_depth(_toml_depth(text))
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise RepoFileError(f"nested deeper than {MAX_NESTING} levels") from None


def _check_depth(depth: int) -> None:
    if depth > MAX_NESTING:
        raise RepoFileError(f"nested deeper than {MAX_NESTING} levels")


_JSON_TOKENS = re.compile(r'"(?:[^"\\]+|\\.)*"?|[\[\]{}]', re.DOTALL)
"""A string (skipped whole, escapes and all; an unclosed one runs to the end) or a bracket."""
_TOML_TOKENS = re.compile(
    r'''#[^\n]*|"""(?:[^\\]|\\.)*?(?:"""|$)|\'\'\'.*?(?:\'\'\'|$)|"(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?|[\[\]{}]''',
    re.DOTALL,
)
"""As `_JSON_TOKENS` for TOML: a comment, the four kinds of string, or a bracket."""


def _json_depth(text: str) -> int:
    """The deepest run of open `[`/`{` outside strings (a bound only: unbalanced text is
    the parser's to refuse)."""
    return _deepest(_JSON_TOKENS, text)


def _toml_depth(text: str) -> int:
    """As `_json_depth`, for TOML (comments and every kind of string skipped)."""
    return _deepest(_TOML_TOKENS, text)


def _deepest(tokens: re.Pattern[str], text: str) -> int:
    depth = deepest = 0
    for match in tokens.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_NESTING:
                    break
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)
    return deepest
