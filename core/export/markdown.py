"""A session as Markdown: prompts, answers, tool calls and thoughts folded in `<details>`,
one italic line per reminder, the plan at the end.

What the model or a tool wrote cannot change the document's shape: a tool's output, a
thought, an attachment sit in a code fence longer than any run of backticks in them (so
no line of theirs closes it, and `</details>` in them is text); an answer stays Markdown,
with a fence it left open closed after it and raw HTML outside its code shown as text
(`&lt;details>`); plain text (a prompt, a task's subject) has Markdown's characters escaped.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

from .blocks import (
    STATUS_MARKS,
    Answer,
    Block,
    Compacted,
    Fold,
    Note,
    Prompt,
    Thought,
    ToolCall,
    output_shown,
    output_summary,
    segments,
)
from .source import MARKER, Exported, PlanRow, about


def to_markdown(source: Exported) -> str:
    parts = [f"<!-- {MARKER} · session {html.escape(source.session_id)} -->", f"# {plain(source.title)}"]
    parts.append(f"*{plain(about(source))}*")
    parts += [_block(block) for block in source.blocks]
    parts += ["---", "## Plan", _plan(source.plan)]
    return "\n\n".join(parts) + "\n"


def _block(block: Block) -> str:
    match block:
        case Prompt(text):
            shown = "---\n\n" + quoted("**❯** " + plain(text))
        case Answer(text):
            shown = contained(text)
        case Thought(text):
            words = len(text.split())
            shown = details(f"∴ Thought · {words:,} word{'' if words == 1 else 's'}", fence(text))
        case ToolCall():
            shown = _call(block)
        case Fold(label, detail, content):
            shown = details(f"⎿ {label}  {detail}".rstrip(), fence(content))
        case Note(text, kind):
            shown = f"*{plain(('⎿ reminder · ' if kind == 'reminder' else '⚠ ') + text)}*"
        case Compacted(line, summary):
            shown = f"---\n\n*{plain(line)}*\n\n" + details("the summary the model kept", fence(summary))
    return shown


def _call(call: ToolCall) -> str:
    """`⏺ Name(summary) ✔ first line`, folding its arguments and its output (when the line
    does not already show all of it)."""
    summary = f"⏺ {call.name}({call.summary}) {STATUS_MARKS[call.status]} {output_summary(call.output, call.status)}"
    body = []
    if call.arguments not in ("", "{}"):
        body.append(fence(call.arguments, "json" if call.arguments.startswith("{") else ""))
    if not output_shown(call):
        body.append(fence(call.output))
    return details(summary, "\n\n".join(body)) if body else plain(summary)


def _plan(rows: tuple[PlanRow, ...]) -> str:
    if not rows:
        return "No tasks."
    lines = []
    for row in rows:
        lines.append(f"- {row.mark} #{plain(row.id)} {plain(row.subject)}")
        lines += [f"  - {code(line)}" for line in row.files]
        if row.check:
            lines.append(f"  - check: {code(row.check)}")
    done = sum(1 for row in rows if row.status == "completed")
    lines.append(f"\n{done}/{len(rows)} completed")
    return "\n".join(lines)


# --- untrusted text in Markdown ------------------------------------------------------------

_BACKTICKS = re.compile(r"`+")


def fence(text: str, info: str = "") -> str:
    """`text` in a code fence no line of it can close: longer than its longest backtick run."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text.removesuffix(chr(10))}\n{ticks}"


def code(text: str) -> str:
    """`text` as inline code, on one line, whatever backticks it holds."""
    text = text.replace("\n", "␤")
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def details(summary: str, body: str) -> str:
    """A folded block: its summary one line of HTML text, its body Markdown after a blank line."""
    line = html.escape(" ".join(summary.split()), quote=False)
    return f"<details>\n<summary>{line}</summary>\n\n{body}\n\n</details>"


def quoted(text: str) -> str:
    """`text` as a block quote: nothing in it reaches past it."""
    return "\n".join(f"> {line}".rstrip() for line in text.split("\n"))


_INLINE = re.compile(r"([\\`*\[\]<>|~!&]|(?<![^\W_])_|_(?![^\W_]))")
"""Markdown's characters; `_` only where it could open or close emphasis (not `list_posts`)."""
_LINE_START = re.compile(r"^(\s*)(?:([#+=-])|(\d+)(?=[.)]))", re.MULTILINE)
"""What starts a heading, a list item or a rule at the start of a line."""


def plain(text: str) -> str:
    """`text` shown as it is: Markdown's characters escaped, its line breaks kept."""
    escaped = _INLINE.sub(r"\\\1", text.strip("\n"))
    escaped = _LINE_START.sub(lambda m: m[1] + (f"\\{m[2]}" if m[2] else f"{m[3]}\\"), escaped)
    return "\\\n".join(escaped.split("\n"))


_TAG = re.compile(r"<(?=[A-Za-z/!?])")


def contained(text: str) -> str:
    """An answer's Markdown that cannot reach past itself: a fence it leaves open is closed,
    and raw HTML outside its code (`<details>`, `<!--`) is shown as text."""
    lines: list[str] = []
    for segment in segments(text):
        if segment.fence:
            lines += [segment.opening, *segment.lines, segment.closing or segment.fence]
        else:
            lines += [_no_html(line) for line in segment.lines]
    return "\n".join(lines)


def _no_html(line: str) -> str:
    """`line` with each `<` that could open a tag escaped, except inside its code spans."""
    if "<" not in line:
        return line
    return "".join(part if in_code else _TAG.sub("&lt;", part) for part, in_code in _code_spans(line))


def _code_spans(line: str) -> Iterator[tuple[str, bool]]:
    """`line` in pieces, each with whether it is inside a code span (a backtick run up to
    the next run of the same length; a run with no partner is text)."""
    runs = list(_BACKTICKS.finditer(line))
    at, index = 0, 0
    while index < len(runs):
        opener = runs[index]
        closer = next((r for r in runs[index + 1 :] if len(r.group()) == len(opener.group())), None)
        if closer is None:
            index += 1
            continue
        yield line[at : opener.start()], False
        yield line[opener.start() : closer.end()], True
        at = closer.end()
        index = runs.index(closer) + 1
    yield line[at:], False
