"""One glob syntax for permission rules, Glob and Grep.

`*` and `?` stay within one path segment, `**` crosses any number of them (`a/**/b` also
matches `a/b`), `[…]` is a character class (`[!…]` negated) and `{a,b}` an alternation.
Matching is case-sensitive and always against the whole path.
"""

from __future__ import annotations

import functools
import re

MAGIC = re.compile(r"[*?\[{]")


def split_top_level(body: str, brackets: str = "{}") -> list[str]:
    """Split `a,b{c,d}` at the commas outside `brackets` (an opening and a closing one)."""
    opening, closing = brackets[0], brackets[1]
    parts, depth, current = [], 0, ""
    for char in body:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {opening: 1, closing: -1}.get(char, 0)
        current += char
    return [*parts, current]


def _closing(pattern: str, start: int, open_char: str, close_char: str) -> int:
    """Index of the bracket closing the one at `start`, or -1."""
    depth = 0
    for index in range(start, len(pattern)):
        if pattern[index] == open_char:
            depth += 1
        elif pattern[index] == close_char:
            depth -= 1
            if depth == 0:
                return index
    return -1


def translate(pattern: str) -> str:
    """Glob to regex source (see the module docstring)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")  # zero or more directories
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        char = pattern[i]
        end = -1
        if char == "[":
            end = pattern.find("]", i + 2)
            if end != -1:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
        elif char == "{":
            end = _closing(pattern, i, "{", "}")
            if end != -1:
                out.append("(?:" + "|".join(translate(p) for p in split_top_level(pattern[i + 1 : end])) + ")")
        if end != -1:
            i = end + 1
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(char) or re.escape(char))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """The compiled matcher; ValueError for a pattern that is not a valid glob."""
    try:
        return re.compile(translate(pattern) + r"\Z", re.DOTALL)
    except re.error as exc:
        raise ValueError(f"invalid glob pattern {pattern!r}: {exc}") from exc


def matches(pattern: str, path: str) -> bool:
    """Whether `path` (posix, no trailing slash) matches the whole `pattern`."""
    return compile_glob(pattern).match(path) is not None


def covers(pattern: str, path: str) -> bool:
    """A rule's match: the pattern itself, and `dir`, `dir/` or `dir/**` also cover the
    directory and everything below it."""
    if matches(pattern, path):
        return True
    base = pattern.removesuffix("/**").rstrip("/")
    return bool(base) and (matches(base, path) or matches(base + "/**", path))


def split_literal_prefix(pattern: str) -> tuple[str, str]:
    """`src/app/**/*.py` → (`src/app`, `**/*.py`): the directory a walk starts in.

    The last segment always stays in the pattern, so a plain file name still matches.
    """
    parts = pattern.split("/")
    literal = 0
    while literal < len(parts) - 1 and not MAGIC.search(parts[literal]):
        literal += 1
    prefix = "/".join(parts[:literal])
    if pattern.startswith("/") and not prefix:
        prefix = "/"
    return prefix, "/".join(parts[literal:])
