"""The trust questions' text for an ACP client: the project's hooks and MCP servers, with
every byte the TUI's trust screens show (control and invisible characters revealed as
␛, ␍, <U+…>), inside a fence so a client's Markdown reads none of it as markup. Env and
header values are not shown (they may be secrets); their names are."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from todo_agent.core.export.markdown import fence
from todo_agent.core.hooks.spec import HookSpec
from todo_agent.core.mcp.config import ServerSpec, environment_lines
from todo_agent.core.terminal import reveal, reveal_line

HOOKS_INTRO = (
    "This project's settings ({path}) define hooks: shell commands that run on agent events without asking. "
    "Run them only if you trust this repository."
)
SERVERS_INTRO = (
    "This project configures MCP servers. Starting one runs its command on your machine (or connects to its URL), "
    "and its tools are offered to the model; each call still asks you. Start them only if you trust this repository."
)


def hooks_text(hooks: Sequence[HookSpec], settings: Path, code: Callable[[HookSpec], Sequence[str]]) -> str:
    lines: list[str] = []
    for spec in hooks:
        matcher = f" [{reveal_line(spec.matcher)}]" if spec.matcher else ""
        lines.append(f"{spec.event}{matcher}:")
        lines += ["  " + line for line in reveal(spec.command).split("\n")]
        lines += ["  " + reveal_line(text) for text in code(spec)]
    return HOOKS_INTRO.format(path=settings) + "\n\n" + fence("\n".join(lines))


def servers_text(servers: Sequence[ServerSpec]) -> str:
    lines: list[str] = []
    for spec in servers:
        what = "url" if spec.transport == "http" else "runs"
        lines.append(f"{reveal_line(spec.name)}  from {reveal_line(spec.origin)}")
        lines += [f"  {what} " + line for line in reveal(spec.as_written()).split("\n")]
        if spec.env:
            lines.append("  env " + reveal_line(", ".join(sorted(spec.env))))
        if spec.headers:
            lines.append("  headers " + reveal_line(", ".join(sorted(spec.headers))))
        if spec.cwd:
            lines.append("  in " + reveal_line(spec.cwd))
        lines += environment_lines(spec)
        lines += ["  " + reveal_line(line) for line in (spec.code.lines() if spec.code else ())]
    return SERVERS_INTRO + "\n\n" + fence("\n".join(lines))
