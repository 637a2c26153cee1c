"""The prompt: a multi-line input with history, and completion of `/commands` and `@files`.

Slash completion lists the commands the prompt could be the start of (the built-in ones
and the person's own). File completion opens on a word that starts with `@` where the
cursor is: the `MentionSource` (the workspace's file index) is asked in a worker thread,
so typing never waits for it, and an answer for a word no longer being typed is dropped.
`tab` (or `enter`) puts the chosen path in; a folder keeps the list open for what is in it.
A pasted path to an image file in the workspace (a file dragged onto the terminal) goes in
as its `@` mention, which attaches the image; the file is looked at in a worker thread.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, TypeVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from todo_agent.core.input.file_index import Match, pasted_path

from ..commands import SlashCommand, complete
from ..sanitize import sanitize

MENTION_MAX_AGE = 10.0
"""Seconds a file listing is trusted when `@` completion opens; older, it is rebuilt in the
background while the old one answers. (A turn or a `!` command marks it stale at once.)"""
T = TypeVar("T")
FILE_ROWS = 9
"""Files the list shows, always this many rows (blank ones below a short list): a list
that keeps its size is redrawn alone, while one that grows or shrinks makes the whole
screen lay itself out again (~15–30 ms a key on a loaded machine)."""


FILE_KEYS = "tab or enter puts it in · ↑ ↓ choose · esc closes · @path:10-40 attaches lines 10-40"


class MentionSource(Protocol):
    """The workspace's files, for `@` completion (`core/input/file_index.py`'s `FileIndex`)."""

    def query(self, text: str, limit: int = ...) -> list[Match] | None:
        """The best matches; None while the first listing is being built."""

    def refresh(self, max_age: float = ...) -> bool: ...

    def pasted_image(self, text: str) -> str | None:
        """The workspace-relative path of the image file a pasted path names, or None (blocking)."""


_MENTION_WORD = re.compile(r'(?:^|(?<=\s))@(?:"(?P<quoted>[^"\n]*)|(?P<bare>[^\s"]*))$')
"""An `@word` (or `@"a quoted name`) that ends where the cursor is."""


@dataclass(frozen=True)
class MentionWord:
    start: int
    """Offset of the `@` in the text."""
    end: int
    """Offset just past the word (the cursor, or further if the word goes on after it)."""
    query: str


def mention_at(text: str, cursor: int) -> MentionWord | None:
    """The `@` word being typed at `cursor` (an offset in `text`), if any."""
    found = _MENTION_WORD.search(text, 0, cursor)
    if found is None:
        return None
    quoted = found["quoted"] is not None
    end = cursor
    if not quoted:
        while end < len(text) and not text[end].isspace():
            end += 1
    elif (close := text.find('"', cursor)) != -1 and "\n" not in text[cursor:close]:
        end = close + 1
    return MentionWord(found.start(), end, found["quoted"] if quoted else found["bare"])


def mention_text(path: str) -> str:
    """How a chosen path is written back: `@cli.py `, `@src/` (still open), `@"a b.md" `."""
    written = f'@"{path}"' if any(c.isspace() for c in path) else f"@{path}"
    return written if path.endswith("/") else written + " "


def _highlighted(match: Match) -> Content:
    """The path with the characters the query matched in bold, one span per run of them."""
    path = sanitize(match.path)
    if len(path) != len(match.path) or not match.positions:  # a control character was dropped: no positions
        return Content(path)
    pieces: list[str | tuple[str, str]] = []
    start = 0
    for position in sorted(set(match.positions)):
        if position < start:
            continue
        end = position
        while end + 1 in match.positions:
            end += 1
        pieces += [path[start:position], (path[position : end + 1], "bold $text-accent")]
        start = end + 1
    pieces.append(path[start:])
    return Content.assemble(*pieces)


class Suggestions(OptionList):
    """What the prompt could be completed with, shown above it: commands, or files."""

    can_focus = False

    def __init__(self) -> None:
        super().__init__()
        self.commands: list[SlashCommand] = []
        self.matches: list[Match] = []
        self.word: MentionWord | None = None
        """The `@` word the files were found for (None: the list holds commands)."""

    def show_for(self, commands: list[SlashCommand]) -> None:
        if commands == self.commands and self.word is None and self.display:
            return  # the same list (asked again before enter or tab): the choice made in it stays
        self.styles.height = "auto"
        self.set_options(
            Option(
                Content.assemble(
                    (c.name, "bold"),
                    f"  {c.usage}  " if c.usage else "  ",
                    (sanitize(c.description), "dim"),
                    (f"  ({c.source})" if c.source else "", "dim italic"),
                )
            )
            for c in commands
        )
        self.commands, self.matches, self.word = commands, [], None
        self.display = bool(commands)
        if commands:
            self.highlighted = 0

    def show_files(self, word: MentionWord, matches: list[Match] | None) -> None:
        """Files for the `@` word; None: the list is still being built (say so)."""
        self.commands, self.word = [], word
        self.matches = list(matches or [])[:FILE_ROWS]
        if matches is None:
            rows = [Option(Content.styled("listing the workspace's files…", "dim italic"), disabled=True)]
        elif not self.matches:
            rows = [Option(Content.styled(f"no file matches @{sanitize(word.query)}", "dim"), disabled=True)]
        else:
            rows = [Option(_highlighted(m)) for m in self.matches]
        rows += [Option("", disabled=True) for _ in range(FILE_ROWS - len(rows) - 1)]
        if len(rows) < FILE_ROWS:  # room left: say how to use the list
            rows.append(Option(Content.styled(FILE_KEYS, "dim italic"), disabled=True))
        self.styles.height = FILE_ROWS
        self.set_options(rows)
        self.highlighted = 0 if self.matches else None
        self.display = True

    def hide(self) -> None:
        self.commands, self.matches, self.word = [], [], None
        self.display = False

    def _highlighted_in(self, items: Sequence[T]) -> T | None:
        at = self.highlighted
        return items[at] if self.display and at is not None and at < len(items) else None

    @property
    def selected(self) -> SlashCommand | None:
        return self._highlighted_in(self.commands)

    @property
    def selected_file(self) -> Match | None:
        return self._highlighted_in(self.matches)


class PromptInput(TextArea):
    """`enter` sends; `shift+enter`/`ctrl+j` add a line; `up`/`down` at the edges recall history."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "submit", "Send", tooltip="Send the prompt", show=False),
        Binding(
            "alt+enter,ctrl+enter",
            "submit(True)",
            "Send now",
            tooltip="While it works: send it with the turn's next request instead of after the turn",
            show=False,
        ),
        Binding("shift+enter,ctrl+j", "newline", "Newline", tooltip="Insert a line break", show=False),
        Binding("tab", "complete", "Complete", tooltip="Complete the /command or @file", show=False),
        Binding("up", "history(-1)", "Previous prompt", tooltip="Recall the previous prompt", show=False),
        Binding("down", "history(1)", "Next prompt", tooltip="Recall the next prompt", show=False),
    ]

    @dataclass
    class Submitted(Message):
        """The person sent `text` (already stripped, never empty); `now`: with `alt+enter`,
        for the running turn rather than after it."""

        text: str
        now: bool = False

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
        self.suggestions: Suggestions | None = None
        self.refresh_suggestions: Callable[[], None] = lambda: None
        """Bring the list up to the text as it is now. The list follows `Changed`, a message
        that waits its turn: keys that come in one burst (`/new` and enter, pasted or typed
        fast) reach enter and tab before it, and the list would still be the one for `/`."""

    async def _on_key(self, event: events.Key) -> None:
        # TextArea inserts a newline on enter before bindings run; route it to `submit`.
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.action_submit()
            return
        await super()._on_key(event)

    async def _on_paste(self, event: events.Paste) -> None:
        # Not a path to an image file by its name: TextArea's own handler pastes it as it is.
        box = self.parent
        source = box.mentions if isinstance(box, PromptBox) else None
        if source is None or self.read_only or pasted_path(event.text) is None:
            return
        event.prevent_default()
        self._paste_image(source, event.text)

    @work(thread=True, group="paste", exit_on_error=False)
    def _paste_image(self, source: MentionSource, text: str) -> None:
        found = source.pasted_image(text)
        self.app.call_from_thread(self._pasted, mention_text(found) if found is not None else text)

    def _pasted(self, text: str) -> None:
        result = self._replace_via_keyboard(text, *self.selection)
        if result is not None:
            self.move_cursor(result.end_location)

    @property
    def browsing_history(self) -> bool:
        """Whether the text is a recalled prompt, unchanged: up/down keep walking the history."""
        at = self._history_at
        return at is not None and at < len(self.prompt_history) and self.text == self.prompt_history[at]

    @property
    def cursor_offset(self) -> int:
        """The cursor as an offset in `text`."""
        row, column = self.cursor_location
        lines = self.text.split("\n")
        return sum(len(line) + 1 for line in lines[:row]) + column

    def action_submit(self, now: bool = False) -> None:
        self.refresh_suggestions()
        suggestions = self.suggestions
        if suggestions is not None and self._accept_file(suggestions, finishing=True):
            return
        chosen = suggestions.selected if suggestions and not self.browsing_history else None
        if chosen is not None and self.text != chosen.name:
            self.text = chosen.name
        text = self.text.strip()
        if not text:
            return
        if not self.prompt_history or self.prompt_history[-1] != text:
            self.prompt_history.append(text)
        self._history_at = None
        self.text = ""
        self.post_message(self.Submitted(text, now))

    def _accept_file(self, suggestions: Suggestions, *, finishing: bool) -> bool:
        """Put the highlighted file in place of the `@` word; False when there is none to put
        (or, `finishing` with enter, when the word already is that file: then enter sends)."""
        match, word = suggestions.selected_file, suggestions.word
        if match is None or word is None:
            return False
        written = mention_text(match.path)
        text = self.text
        if finishing and text[word.start : word.end].rstrip() == written.rstrip():
            return False
        rest = text[word.end :]
        replacement = written.rstrip(" ") if rest[:1].isspace() else written
        self.text = text[: word.start] + replacement + rest
        # After the space that ends it: the cursor in the word would open the list again.
        offset = word.start + len(replacement) + (1 if rest[:1].isspace() and not match.is_dir else 0)
        before = self.text[:offset]
        self.move_cursor((before.count("\n"), len(before) - before.rfind("\n") - 1))
        if not match.is_dir:
            suggestions.hide()
        return True

    def action_newline(self) -> None:
        self.insert("\n")

    def action_complete(self) -> None:
        self.refresh_suggestions()
        suggestions = self.suggestions
        if suggestions is not None and self._accept_file(suggestions, finishing=False):
            return
        chosen = suggestions.selected if suggestions else None
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
        & > Suggestions {
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

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mentions: MentionSource | None = None
        """Where `@` completion finds files; None: no `@` completion (the first frame)."""
        self.extra_commands: Callable[[], Sequence[SlashCommand]] = list
        """The person's own commands, offered with the built-in ones."""

    def compose(self) -> ComposeResult:
        suggestions = Suggestions()
        prompt = PromptInput(id="prompt")
        prompt.suggestions = suggestions
        prompt.refresh_suggestions = self.update_suggestions
        yield suggestions
        yield prompt

    @on(TextArea.Changed, "#prompt")
    def _update_suggestions(self, event: TextArea.Changed) -> None:
        self.update_suggestions()

    def update_suggestions(self) -> None:
        prompt = self.query_one(PromptInput)
        suggestions = self.query_one(Suggestions)
        # A recalled `/help` is history, not typing: a list there would take over up/down.
        if prompt.browsing_history:
            suggestions.hide()
            return
        word = mention_at(prompt.text, prompt.cursor_offset) if self.mentions is not None else None
        if word is not None:
            if suggestions.word is None or suggestions.word.query != word.query:
                self._find_files(word, opening=suggestions.word is None)
            return
        commands = complete(prompt.text, self.extra_commands())
        if commands:
            suggestions.show_for(commands)
        else:
            suggestions.hide()

    @work(thread=True, exclusive=True, group="mentions", exit_on_error=False)
    def _find_files(self, word: MentionWord, opening: bool = False) -> None:
        source = self.mentions
        if source is None:
            return
        if opening:  # once per `@`, not per key: a rebuild competes with the typing it would serve
            source.refresh(MENTION_MAX_AGE)
        found = source.query(word.query)
        self.app.call_from_thread(self._show_files, word, found)

    def _show_files(self, word: MentionWord, found: list[Match] | None) -> None:
        prompt = self.query_one(PromptInput)
        now = mention_at(prompt.text, prompt.cursor_offset)
        if now is None or now.query != word.query:  # typed on meanwhile: that answer is asked for already
            return
        self.query_one(Suggestions).show_files(now, found)

    def files_changed(self) -> None:
        """A new listing is in: the open file list is found again from it."""
        suggestions = next(self.query(Suggestions).results(), None)
        if suggestions is None:  # (gone: the screen closed while the files were listed)
            return
        if suggestions.display and suggestions.word is not None:
            self._find_files(suggestions.word)
