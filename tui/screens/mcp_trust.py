"""Asking whether the project's MCP servers may start.

Servers in `.mcp.json` or `.todo-agent/settings.toml` came with the repository: starting
one runs its command, or sends its headers to its URL. At start-up, servers the person has
not accepted (or that changed since: command, args, env, cwd, url or headers) are listed
here, with what each would run. Dismisses with True (start them, and remember exactly
these for this project) or False (not this session; asked again next time). `escape` is no.
Env and header values are not shown (they may be secrets); their names are.

It can open while the person is typing a prompt: keys typed before it was on screen, or
within `TYPING_GRACE` of it, are not taken as an answer (a `y` in "yes, fix it" must not
start a repository's commands).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual._time import get_time
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from todo_agent.core.mcp.config import ServerSpec

from ..sanitize import sanitize

TYPING_GRACE = 0.5
"""Seconds after the question appears during which keys are taken as typing, not answers."""


def server_lines(spec: ServerSpec) -> Content:
    what = "url" if spec.transport == "http" else "runs"
    lines = [
        Content.assemble((sanitize(spec.name), "bold"), f"  from {sanitize(spec.origin)}"),
        Content.assemble(f"  {what} ", (sanitize(spec.describe()), "$text-accent")),
    ]
    if spec.env:
        lines.append(Content("  env " + sanitize(", ".join(sorted(spec.env)))))
    if spec.headers:
        lines.append(Content("  headers " + sanitize(", ".join(sorted(spec.headers)))))
    if spec.cwd:
        lines.append(Content("  in " + sanitize(spec.cwd)))
    return Content("\n").join(lines)


class McpTrustScreen(ModalScreen[bool]):
    """The project's MCP servers, and the person's yes or no."""

    CSS_PATH = "mcp_trust.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Start them", tooltip="Start these servers; remember them until they change"),
        Binding("n", "answer(False)", "Not now", tooltip="Do not start them this session; ask again next time"),
        Binding("escape", "answer(False)", "Not now", tooltip="Do not start them this session", show=False),
    ]

    def __init__(self, servers: Sequence[ServerSpec]) -> None:
        super().__init__()
        self.servers = list(servers)
        self.shown_at = float("inf")

    def on_mount(self) -> None:
        self.shown_at = get_time()

    def compose(self) -> ComposeResult:
        with Vertical(id="mcp-trust-dialog") as dialog:
            dialog.border_title = "Start this project's MCP servers?"
            yield Static(
                Content(
                    "This project configures MCP servers. Starting one runs its command on your machine (or "
                    "connects to its URL), and its tools are offered to the model; each call still asks you. "
                    "Start them only if you trust this repository."
                ),
                id="mcp-trust-intro",
            )
            with VerticalScroll(id="mcp-trust-list"):
                for spec in self.servers:
                    yield Static(server_lines(spec), classes="mcp-trust-server")
            yield Static(
                Content.assemble(
                    ("y", "bold"), " start them (remembered until they change)   ", ("n", "bold"), " not now"
                ),
                id="mcp-trust-keys",
            )
        yield Footer()

    def action_answer(self, accepted: bool) -> None:
        if get_time() < self.shown_at + TYPING_GRACE:  # typed for the prompt, not read here
            return
        self.dismiss(accepted)
