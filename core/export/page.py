"""A session as one self-contained HTML page: inline CSS, no script, no URL to fetch.

Every text is `html.escape`d, so nothing the model or a tool wrote becomes markup; a
Content-Security-Policy that allows nothing but the inline style says the same to the
browser. An answer's code fences become code blocks, the rest of it stays its Markdown
text (wrapped as written); tool calls, thoughts and attachments fold in `<details>`.
"""

from __future__ import annotations

from collections.abc import Iterator
from html import escape

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

STYLE = """
:root { color-scheme: light dark; --dim: #6a737d; --line: #d0d7de; --code: #f6f8fa; --you: #0969da;
  --ok: #1a7f37; --bad: #cf222e; }
@media (prefers-color-scheme: dark) { :root { --dim: #8b949e; --line: #30363d; --code: #161b22;
  --you: #58a6ff; --ok: #3fb950; --bad: #f85149; } }
body { font: 15px/1.5 system-ui, sans-serif; margin: 0; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem 1.5rem 3rem; }
h1 { font-size: 1.4rem; margin-bottom: .2rem; }
.meta, .note, .compacted { color: var(--dim); }
.note, .compacted { font-style: italic; margin: .3rem 0; }
.compacted { border-top: 1px dashed var(--line); padding-top: .5rem; margin-top: 1.5rem; }
.prompt { border-top: 1px solid var(--line); margin-top: 1.5rem; padding-top: 1rem; white-space: pre-wrap; }
.prompt::before { content: "❯ "; color: var(--you); font-weight: bold; }
.prose { white-space: pre-wrap; margin: .5rem 0; }
pre { background: var(--code); padding: .6rem .8rem; overflow-x: auto; border-radius: 6px; margin: .4rem 0;
  font: 13px/1.45 ui-monospace, monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
details { margin: .3rem 0; }
summary, .call { cursor: pointer; font: 13px/1.6 ui-monospace, monospace; }
.call { cursor: auto; margin: .3rem 0; }
.ok { color: var(--ok); } .bad { color: var(--bad); } .dim { color: var(--dim); }
.plan ul { list-style: none; padding-left: 0; } .plan ul ul { padding-left: 1.6rem; }
.plan code { font: 13px ui-monospace, monospace; }
"""
POLICY = "default-src 'none'; style-src 'unsafe-inline'"
"""Nothing may load or run: not a script, an image, a font, a frame, a form's target."""


def to_html(source: Exported) -> str:
    title = escape(source.title)
    head = (
        f"<!DOCTYPE html>\n<!-- {MARKER} · session {escape(source.session_id)} -->\n"
        f'<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n"
    )
    meta = escape(about(source))
    body = [f'<header><h1>{title}</h1><p class="meta">{meta}</p></header>']
    body += [_block(block) for block in source.blocks]
    body.append(_plan(source.plan))
    return head + "\n".join(body) + "\n</main>\n</body>\n</html>\n"


def _block(block: Block) -> str:
    match block:
        case Prompt(text):
            shown = f'<div class="prompt">{escape(text)}</div>'
        case Answer(text):
            shown = "".join(_answer(text))
        case Thought(text):
            words = len(text.split())
            shown = _details(f"∴ Thought · {words:,} word{'' if words == 1 else 's'}", _pre(text), "dim")
        case ToolCall():
            shown = _call(block)
        case Fold(label, detail, content):
            shown = _details(f"⎿ {label}  {detail}".rstrip(), _pre(content), "dim")
        case Note(text, kind):
            shown = f'<p class="note">{escape(("⎿ reminder · " if kind == "reminder" else "⚠ ") + text)}</p>'
        case Compacted(line, summary):
            shown = f'<p class="compacted">{escape(line)}</p>' + _details("the summary the model kept", _pre(summary))
    return shown


def _call(call: ToolCall) -> str:
    mark = STATUS_MARKS[call.status]
    summary = (
        f"⏺ <b>{escape(call.name)}</b>({escape(call.summary)}) "
        f'<span class="{"ok" if call.status == "ok" else "bad"}">{escape(mark)}</span> '
        f'<span class="dim">{escape(output_summary(call.output, call.status))}</span>'
    )
    arguments = _pre(call.arguments) if call.arguments not in ("", "{}") else ""
    output = "" if output_shown(call) else _pre(call.output)
    if not arguments + output:
        return f'<p class="call">{summary}</p>'
    return f"<details><summary>{summary}</summary>{arguments}{output}</details>"


def _details(summary: str, body: str, kind: str = "") -> str:
    opened = f'<summary class="{kind}">' if kind else "<summary>"
    return f"<details>{opened}{escape(summary)}</summary>{body}</details>"


def _pre(text: str) -> str:
    return f"<pre>{escape(text.removesuffix(chr(10)))}</pre>"


def _answer(text: str) -> Iterator[str]:
    """An answer: its code fences as code blocks, the Markdown around them as written."""
    for segment in segments(text):
        if segment.fence:
            yield _pre("\n".join(segment.lines))
        elif "".join(segment.lines).strip():
            yield f'<div class="prose">{escape(chr(10).join(segment.lines).strip(chr(10)))}</div>'


def _plan(rows: tuple[PlanRow, ...]) -> str:
    if not rows:
        return '<section class="plan"><h2>Plan</h2><p class="note">No tasks.</p></section>'
    items = []
    for row in rows:
        inner = [f"<li><code>{escape(line)}</code></li>" for line in row.files]
        if row.check:
            inner.append(f"<li>check: <code>{escape(row.check)}</code></li>")
        nested = f"<ul>{''.join(inner)}</ul>" if inner else ""
        items.append(f"<li>{escape(row.mark)} #{escape(row.id)} {escape(row.subject)}{nested}</li>")
    done = sum(1 for row in rows if row.status == "completed")
    counted = f'<p class="meta">{done}/{len(rows)} completed</p>'
    return f'<section class="plan"><h2>Plan</h2><ul>{"".join(items)}</ul>{counted}</section>'
