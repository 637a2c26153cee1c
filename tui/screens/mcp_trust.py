"""Asking whether the project's MCP servers may start (a `TrustScreen`, see `trust.py`).

Servers in `.mcp.json` or `.todo-agent/settings.toml` came with the repository: starting
one runs its command, or sends its headers to its URL. Servers the person has not
accepted (or that changed since: command, args, env, cwd, url or headers) are listed with
what each would run. Env and header values are not shown (they may be secrets); their
names are. A value that reads the person's environment (`${VAR}`) is shown as the file
wrote it, with the variable's name (`environment_lines`). The workspace code its command
runs is named (`Footprint.lines`: a change to it asks again), with what cannot be seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content

from todo_agent.core.mcp.config import ServerSpec, environment_lines, environment_reads
from todo_agent.core.terminal import reveal_line

from .trust import TrustScreen, hides, revealed


def server_lines(spec: ServerSpec) -> Content:
    what = "url" if spec.transport == "http" else "runs"
    lines = [
        Content.assemble((reveal_line(spec.name), "bold"), f"  from {reveal_line(spec.origin)}"),
        revealed(f"  {what}", spec.as_written()),
    ]
    if spec.env:
        lines.append(Content("  env " + reveal_line(", ".join(sorted(spec.env)))))
    if spec.headers:
        lines.append(Content("  headers " + reveal_line(", ".join(sorted(spec.headers)))))
    if spec.cwd:
        lines.append(Content("  in " + reveal_line(spec.cwd)))
    lines += [Content(line) for line in environment_lines(spec)]
    lines += [Content("  " + reveal_line(line)) for line in (spec.code.lines() if spec.code else ())]
    return Content("\n").join(lines)


class McpTrustScreen(TrustScreen):
    """The project's MCP servers, and the person's yes or no."""

    QUESTION = "Start this project's MCP servers?"
    YES = "start them"
    HIDDEN_WARNING = "⚠ A server's command or settings hold control or invisible characters, shown as ␛, ␍, <U+…>."
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Start them", tooltip="Start these servers; remember them until they change"),
        Binding("n", "answer(False)", "Not now", tooltip="Do not start them this session; ask again next time"),
        Binding("escape", "answer(False)", "Not now", tooltip="Do not start them this session", show=False),
    ]

    def __init__(self, servers: Sequence[ServerSpec]) -> None:
        self.servers = list(servers)
        super().__init__(
            "This project configures MCP servers. Starting one runs its command on your machine (or connects "
            "to its URL), and its tools are offered to the model; each call still asks you. Start them only if "
            "you trust this repository.",
            [server_lines(spec) for spec in self.servers],
            hidden=any(
                hides(
                    spec.as_written(),
                    spec.name,
                    spec.cwd or "",
                    *spec.env,
                    *spec.headers,
                    *(text for _, text, _ in environment_reads(spec)),
                )
                for spec in self.servers
            ),
        )
