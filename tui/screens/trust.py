"""Asking whether what a cloned repository configured may run on this machine.

A project's hooks and MCP servers come with the repository; both run commands without
asking each time. At start-up, those the person has not accepted (or that changed since)
are listed in a `TrustScreen`, which dismisses with True (run them, remembered until they
change) or False (not this session; asked again next time). `escape` is no.

Every byte that would run is shown, as in the tool approval: control characters and
escape sequences as symbols (`␛]0;…␇` would otherwise set the window title and hide what
follows it), runs of blank lines folded into one counted line, and a warning when anything
was hidden. The question can open while the person is typing a prompt: keys typed before
it was on screen, or within `TYPING_GRACE` of it, are not taken as an answer (a `y` in
"yes, fix it" must not run a repository's commands).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual._time import get_time
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from todo_agent.core.terminal import reveal

from ..widgets.preview import collapse_blank_runs, has_hidden_characters

TYPING_GRACE = 0.5
"""Seconds after the question appears during which keys are taken as typing, not answers."""


def revealed(label: str, text: str) -> Content:
    """`label` in bold and the whole of `text`: each of its lines, below the first lined up
    under it, runs of blank lines as one `⋯ N blank lines`."""
    pieces: list[str | tuple[str, str]] = [(label, "bold"), "  "]
    indent = " " * (len(label) + 2)
    for index, (line, marker) in enumerate(collapse_blank_runs(reveal(text).split("\n"))):
        if index:
            pieces += ["\n", indent]
        pieces.append((line, "dim italic") if marker else line)
    return Content.assemble(*pieces)


def hides(*texts: str) -> bool:
    """Whether any of `texts` holds a character a terminal would not show as it is."""
    return any(has_hidden_characters(text, "command") for text in texts)


class TrustScreen(ModalScreen[bool]):
    """What the project would run, and the person's yes or no."""

    CSS_PATH = "trust.tcss"
    QUESTION: ClassVar[str] = ""
    YES: ClassVar[str] = ""
    """What `y` does, for the keys line."""
    HIDDEN_WARNING: ClassVar[str] = "⚠ Something here holds control or invisible characters, shown as ␛, ␍, <U+…>."

    def __init__(self, intro: str, items: Sequence[Content], *, hidden: bool) -> None:
        super().__init__()
        self.intro = intro
        self.items = list(items)
        self.hidden = hidden
        self.shown_at = float("inf")

    def on_mount(self) -> None:
        self.shown_at = get_time()

    def compose(self) -> ComposeResult:
        with Vertical(id="trust-dialog") as dialog:
            dialog.border_title = self.QUESTION
            yield Static(Content(self.intro), id="trust-intro")
            if self.hidden:
                yield Static(Content(self.HIDDEN_WARNING), id="trust-hidden")
            with VerticalScroll(id="trust-list"):
                for item in self.items:
                    yield Static(item, classes="trust-item")
            yield Static(
                Content.assemble(
                    ("y", "bold"), f" {self.YES} (remembered until they change)   ", ("n", "bold"), " not now"
                ),
                id="trust-keys",
            )
        yield Footer()

    def action_answer(self, accepted: bool) -> None:
        if get_time() < self.shown_at + TYPING_GRACE:  # typed for the prompt, not read here
            return
        self.dismiss(accepted)
