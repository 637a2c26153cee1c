"""The prompt: a multi-line input with history and slash-command completion."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from ..commands import SlashCommand, complete


class SlashSuggestions(OptionList):
    """Commands matching what is typed, shown above the prompt."""

    can_focus = False

    def __init__(self) -> None:
        super().__init__()
        self.commands: list[SlashCommand] = []

    def show_for(self, commands: list[SlashCommand]) -> None:
        self.clear_options()
        self.add_options(
            Option(Content.assemble((c.name, "bold"), f"  {c.usage}  " if c.usage else "  ", (c.description, "dim")))
            for c in commands
        )
        self.commands = commands
        self.display = bool(commands)
        if commands:
            self.highlighted = 0

    @property
    def selected(self) -> SlashCommand | None:
        commands = self.commands
        if not self.display or self.highlighted is None or self.highlighted >= len(commands):
            return None
        return commands[self.highlighted]


class PromptInput(TextArea):
    """`enter` sends; `shift+enter`/`ctrl+j` add a line; `up`/`down` at the edges recall history."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "submit", "Send", tooltip="Send the prompt", show=False),
        Binding("shift+enter,ctrl+j", "newline", "Newline", tooltip="Insert a line break", show=False),
        Binding("tab", "complete", "Complete", tooltip="Complete the slash command", show=False),
        Binding("up", "history(-1)", "Previous prompt", tooltip="Recall the previous prompt", show=False),
        Binding("down", "history(1)", "Next prompt", tooltip="Recall the next prompt", show=False),
    ]

    @dataclass
    class Submitted(Message):
        """The person sent `text` (already stripped, never empty)."""

        text: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            compact=True,
            highlight_cursor_line=False,
            placeholder="Ask todo-agent… (/ for commands, shift+enter for a new line)",
        )
        self.prompt_history: list[str] = []
        self._history_at: int | None = None
        self._draft = ""
        self.suggestions: SlashSuggestions | None = None

    async def _on_key(self, event: events.Key) -> None:
        # TextArea inserts a newline on enter before bindings run; route it to `submit`.
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.action_submit()
            return
        await super()._on_key(event)

    @property
    def browsing_history(self) -> bool:
        """Whether the text is a recalled prompt, unchanged: up/down keep walking the history."""
        at = self._history_at
        return at is not None and at < len(self.prompt_history) and self.text == self.prompt_history[at]

    def action_submit(self) -> None:
        chosen = self.suggestions.selected if self.suggestions and not self.browsing_history else None
        if chosen is not None and self.text != chosen.name:
            self.text = chosen.name
        text = self.text.strip()
        if not text:
            return
        if not self.prompt_history or self.prompt_history[-1] != text:
            self.prompt_history.append(text)
        self._history_at = None
        self.text = ""
        self.post_message(self.Submitted(text))

    def action_newline(self) -> None:
        self.insert("\n")

    def action_complete(self) -> None:
        chosen = self.suggestions.selected if self.suggestions else None
        if chosen is None:
            self.screen.focus_next()
            return
        self.text = chosen.name + (" " if chosen.usage else "")
        self.move_cursor(self.document.end)

    def action_history(self, step: int) -> None:
        suggestions = self.suggestions
        if suggestions is not None and suggestions.display and not self.browsing_history:
            suggestions.action_cursor_up() if step < 0 else suggestions.action_cursor_down()
            return
        # The edge is the first or last *visual* line, so long wrapped prompts stay editable.
        row = self.wrapped_document.location_to_offset(self.cursor_location).y
        at_edge = row == 0 if step < 0 else row >= self.wrapped_document.height - 1
        if not at_edge or not self._recall(step):
            self.action_cursor_up() if step < 0 else self.action_cursor_down()

    def _recall(self, step: int) -> bool:
        if not self.prompt_history:
            return False
        if self._history_at is None:
            if step > 0:
                return False
            self._draft = self.text
            index = len(self.prompt_history) - 1
        else:
            index = self._history_at + step
        if index < 0:
            return True  # already at the oldest; stay
        if index >= len(self.prompt_history):
            self._history_at = None
            self.text = self._draft
        else:
            self._history_at = index
            self.text = self.prompt_history[index]
        self.move_cursor(self.document.end if step < 0 else (0, 0))
        return True


class PromptBox(Vertical):
    """Suggestions above the input; keeps them in step with what is typed."""

    DEFAULT_CSS = """
    PromptBox {
        height: auto;
        & > SlashSuggestions {
            display: none;
            height: auto;
            max-height: 9;
            border: none;
            padding: 0 1;
            background: $surface;
        }
        & > PromptInput {
            height: auto;
            max-height: 10;
            border: tall $surface-lighten-2;
            padding: 0 1;
            &:focus { border: tall $accent; }
        }
    }
    """

    def compose(self) -> ComposeResult:
        suggestions = SlashSuggestions()
        prompt = PromptInput(id="prompt")
        prompt.suggestions = suggestions
        yield suggestions
        yield prompt

    @on(TextArea.Changed, "#prompt")
    def _update_suggestions(self, event: TextArea.Changed) -> None:
        prompt = self.query_one(PromptInput)
        # A recalled `/help` is history, not typing: a list there would take over up/down.
        self.query_one(SlashSuggestions).show_for([] if prompt.browsing_history else complete(prompt.text))
