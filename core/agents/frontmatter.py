"""The front matter of an agent file: the small YAML subset agent files use.

An agent file (Claude Code's format) is `---`, `key: value` lines, `---`, then the body.
Values are plain or quoted strings, flow lists (`[Read, Grep]`), block lists (`- Read` on
the lines after `tools:`) and block scalars (`|`, `>`). Anything else is an error with its
line, never a guess: the file is then skipped with a warning.
"""

from __future__ import annotations

import re

Value = str | list[str]

_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)\s*:(?:\s+(.*))?$")


class FrontMatterError(ValueError):
    """The file's front matter cannot be read; the message names the line."""


def split(text: str) -> tuple[dict[str, Value], str]:
    """The front matter's keys and the body. A file without front matter is all body."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text.strip()
    end = next((n for n in range(1, len(lines)) if lines[n].strip() == "---"), None)
    if end is None:
        raise FrontMatterError("the front matter has no closing '---' line")
    return parse(lines[1:end], first_line=2), "\n".join(lines[end + 1 :]).strip()


def parse(lines: list[str], first_line: int = 1) -> dict[str, Value]:
    values: dict[str, Value] = {}
    n = 0
    while n < len(lines):
        line = lines[n]
        if not line.strip() or line.lstrip().startswith("#"):
            n += 1
            continue
        found = _KEY.match(line)
        if found is None or line[0].isspace():
            raise FrontMatterError(f"line {first_line + n}: expected 'key: value', got {line.strip()[:40]!r}")
        key, raw = found.group(1), (found.group(2) or "").strip()
        block = _indented(lines, n + 1)
        n += 1 + len(block)
        values[key] = _value(raw, block, first_line + n)
    return values


def _indented(lines: list[str], start: int) -> list[str]:
    """The lines after `start - 1` that belong to it: indented, or `- ` items, or blank."""
    taken: list[str] = []
    for line in lines[start:]:
        if line.strip() and not line[0].isspace() and not line.startswith("- "):
            break
        taken.append(line)
    while taken and not taken[-1].strip():
        taken.pop()
    return taken


def _value(raw: str, block: list[str], where: int) -> Value:
    if raw in ("|", ">", "|-", ">-", "|+", ">+"):
        text = [line.strip() for line in block]
        return "\n".join(text).strip() if raw.startswith("|") else " ".join(t for t in text if t)
    if block and all(not line.strip() or line.strip().startswith("- ") for line in block):
        if raw:
            raise FrontMatterError(f"line {where}: a value and a list at once")
        return [_scalar(line.strip()[2:].strip()) for line in block if line.strip()]
    if block:  # a plain value folded over several lines
        raw = " ".join([raw, *(line.strip() for line in block)]).strip()
    if raw.startswith("[") and raw.endswith("]"):
        inner = raw[1:-1].strip()
        return [_scalar(part.strip()) for part in inner.split(",") if part.strip()] if inner else []
    return _scalar(raw)


def _scalar(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        body = raw[1:-1]
        return body.replace('\\"', '"').replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    return raw.split(" #", 1)[0].strip()
