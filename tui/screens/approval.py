"""The approval modal: what a tool wants to do, and the person's answer.

Dismisses with an `ApprovalAnswer`. Keys: `1`/`y` yes, `2`/`a` yes and don't ask again
(the rule is shown), `3`/`n`/`escape` no (the turn stops), `f` no with feedback (the
text goes to the model and the turn goes on). Keys typed before the modal was on screen
(a double tap meant for the previous question) are ignored: see `predates`; keys typed
right after `f` are the feedback's, however fast they come.

A sub-agent's request says which sub-agent asks and for which task (`general-1 · #3 Write
the tests`), on the dialog's first line and in its title; answering it answers that call
only, and the next waiting request (any agent's) opens after it.

Whatever the terminal's size, the choices (and the feedback box, once open) stay on
screen: the preview gets the rows that are left, scrolls (`pgup`/`pgdn`, the wheel),
and says how much of it is out of sight. A preview holding control or invisible
characters gets a warning line above it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar

from textual import events, on
from textual._time import get_time
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.core.terminal import reveal_line

from ..sanitize import sanitize
from ..widgets.preview import has_hidden_characters, render_preview

COMPACT_BELOW = 30
"""Terminal heights under this get the dialog without its inner padding and margin."""
MIN_PREVIEW_ROWS = 1


class FeedbackInput(Input):
    """Where "no, and do this instead" is typed; escape goes back to the choices."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", tooltip="Back to the choices without sending feedback"),
    ]

    def action_back(self) -> None:
        self.value = ""
        self.display = False
        self.screen.set_focus(self.screen.query_one(OptionList))  # at once: see `action_feedback`
        if isinstance(self.screen, ApprovalScreen):
            self.screen.refit()


class ApprovalScreen(ModalScreen[ApprovalAnswer]):
    """Asks about one tool call. The agent waits until this screen is dismissed."""

    CSS_PATH = "approval.tcss"

    # The answers are priority bindings: run as each key arrives, before the next one is
    # handed to a widget. After `f` the keys that follow (typed fast, pasted, or queued on
    # a busy machine) go into the feedback box; had `f` waited to bubble back up from the
    # choices, the `a` of "use an offset" would have answered "yes, and don't ask again".
    # While the box has focus the answers step aside (`SkipAction`) and the keys are text.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1,y", "answer('yes')", "Yes", tooltip="Run it this once", priority=True),
        Binding(
            "2,a",
            "answer('always')",
            "Always",
            tooltip="Run it, and add the shown rule for this session",
            priority=True,
        ),
        Binding(
            "s",
            "answer('always_server')",
            "Always (server)",
            tooltip="Run it, and allow every tool of this MCP server for this session",
            priority=True,
        ),
        Binding("3,n", "answer('no')", "No", tooltip="Do not run it; the turn stops", priority=True),
        Binding(
            "f",
            "feedback",
            "No, with feedback",
            tooltip="Do not run it; tell the model what to do instead",
            priority=True,
        ),
        Binding("escape", "answer('no')", "No", tooltip="Do not run it; the turn stops", show=False),
        Binding(
            "pagedown", "scroll_preview(1)", "Scroll", tooltip="Scroll the preview down", show=False, priority=True
        ),
        Binding(
            "pageup", "scroll_preview(-1)", "Scroll up", tooltip="Scroll the preview up", show=False, priority=True
        ),
    ]

    def __init__(self, request: ApprovalRequest, *, workspace: Path | None = None, queued: int = 0) -> None:
        super().__init__()
        self.request = request
        self.workspace = workspace
        self.queued = queued
        self.shown_at = math.inf
        """When the modal was mounted, on the clock key events are stamped with."""
        self._dialog_rows = 0
        self._preview_rows = 0
        self.fitted = False
        """Whether the dialog has been sized to the screen as it is (tests wait on it)."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`s` (all tools of this server) only for an MCP server's tool; "always" only with a
        rule to add (a write to a protected path has none: it asks whatever the rules say);
        a command file's question has no rule to add and no model to tell: no feedback."""
        if action == "answer" and parameters == ("always_server",):
            return bool(self.request.server_rule)
        if action == "answer" and parameters == ("always",):
            return bool(self.request.suggested_rule)  # a command file's question has none either
        return not (self.request.remembered_for and action == "feedback")

    @property
    def asking(self) -> bool:
        """Whether the question is on screen: keys typed from now on answer it (earlier
        ones are dropped, see `predates`). Pushed is not yet asking."""
        return self.shown_at != math.inf

    def predates(self, event: events.Key) -> bool:
        """Whether `event` was typed before this question was on screen.

        With several calls waiting, the next modal opens as soon as one is answered; a
        second `y` typed right after the first would otherwise answer a question the
        person never saw. The app drops such keys (`TodoAgentApp.on_event`).
        """
        return event.time < self.shown_at

    def set_queued(self, queued: int) -> None:
        """How many more requests wait behind this one (it changes while it is open)."""
        self.queued = queued
        if self.is_mounted:
            self.query_one("#approval-dialog").border_subtitle = f"{queued} more waiting" if queued else ""

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="approval-dialog") as dialog:
            who = f"{sanitize(request.agent.split(' · ')[0])}: " if request.agent else ""
            dialog.border_title = (
                f"{who}Run the shell commands of {sanitize(request.tool)}?"
                if request.remembered_for
                else f"{who}Allow {sanitize(request.tool)}?"
            )
            if self.queued:
                dialog.border_subtitle = f"{self.queued} more waiting"
            if request.agent:
                yield Static(Content(f"⚑ {sanitize(request.agent)} asks"), id="approval-agent", markup=False)
            if request.summary.strip() != request.preview.strip():
                yield Static(Content(sanitize(request.summary, visible=True)), id="approval-summary", markup=False)
            if request.reason:
                yield Static(Content(sanitize(request.reason)), id="approval-reason", markup=False)
            if request.outside_workspace:
                where = f" ({self.workspace})" if self.workspace else ""
                yield Static(
                    Content(f"⚠ This path is outside the workspace{where}."), id="approval-outside", markup=False
                )
            if has_hidden_characters(request.preview, request.preview_kind):
                yield Static(
                    Content("⚠ Contains control or invisible characters, shown as ␛, ␍, <U+…>."),
                    id="approval-hidden",
                    markup=False,
                )
            if request.preview:
                with VerticalScroll(id="approval-preview", classes=f"-{request.preview_kind}"):
                    yield Static(render_preview(request.preview, request.preview_kind), markup=False)
                yield Static("", id="approval-more", markup=False)
            yield OptionList(*self._options(), id="approval-options")
            yield FeedbackInput(placeholder="Tell todo-agent what to do instead, then enter", id="approval-feedback")
        yield Footer()

    def _options(self) -> list[Option]:
        if self.request.remembered_for:  # a command file's shell lines: yes holds for this version of it
            where = reveal_line(self.request.remembered_for)
            return [
                Option(
                    Content.assemble(("1 ", "bold"), "Yes, run them (asked again when ", (where, "bold"), " changes)"),
                    id="yes",
                ),
                Option(Content.assemble(("3 ", "bold"), "No, do not send the command", ("  (esc)", "dim")), id="no"),
            ]
        rule = reveal_line(self.request.suggested_rule)
        server_rule = reveal_line(self.request.server_rule)
        server = [
            Option(
                Content.assemble(
                    ("s ", "bold"),
                    "Yes, and don't ask again for all tools of this server ",
                    (server_rule, "bold $text-accent"),
                ),
                id="always_server",
            )
        ]
        always = [
            Option(
                Content.assemble(("2 ", "bold"), "Yes, and don't ask again for ", (rule, "bold $text-accent")),
                id="always",
            )
        ]
        # A sub-agent's "no" stops that sub-agent only; its siblings and the main agent go on.
        who = sanitize(self.request.agent.split(" · ")[0]) if self.request.agent else ""
        stop = f"No, and stop {who}" if who else "No, and stop"
        return [
            Option(Content.assemble(("1 ", "bold"), "Yes"), id="yes"),
            *(always if rule else []),
            *(server if server_rule else []),
            Option(Content.assemble(("3 ", "bold"), stop, ("  (esc)", "dim")), id="no"),
            Option(
                Content.assemble(("f ", "bold"), f"No, and tell {who or 'todo-agent'} what to do instead"),
                id="feedback",
            ),
        ]

    def on_mount(self) -> None:
        self.shown_at = get_time()
        self.query_one("#approval-feedback").display = False
        self.query_one(OptionList).focus()
        if preview := self._preview:
            preview.can_focus = False  # tab stays with the choices; pgup/pgdn scroll it
            self.query_one("#approval-more").display = False
            self.watch(preview, "scroll_y", self._show_more, init=False)
        self.refit()

    def on_resize(self) -> None:
        self.refit()

    @property
    def _preview(self) -> VerticalScroll | None:
        found = self.query("#approval-preview")
        return found.first(VerticalScroll) if found else None

    def refit(self) -> None:
        """Size the dialog to the screen, then again once laid out (see `_fit_preview`)."""
        dialog = next(self.query("#approval-dialog").results(), None)
        if dialog is None:  # (gone: answered before this ran)
            return
        self.fitted = False
        compact = self.size.height < COMPACT_BELOW
        self.set_class(compact, "-compact")
        self._dialog_rows = max(1, self.size.height - 1 - (0 if compact else 2))  # 1: the footer
        dialog.styles.max_height = self._dialog_rows
        self.call_after_refresh(self._fit_preview)

    def _fit_preview(self) -> None:
        """Give the preview the rows the rest of the dialog leaves, so the choices stay
        on screen; say what is out of sight when it does not fit."""
        preview = self._preview
        if preview is None or not self.query("#approval-more"):  # (gone: answered before this ran)
            self.fitted = True
            return
        dialog = self.query_one("#approval-dialog")
        more = self.query_one("#approval-more")
        others = sum(
            child.outer_size.height + child.styles.margin.top + child.styles.margin.bottom
            for child in dialog.children
            if child.display and child not in (preview, more)
        )
        margins = preview.styles.margin.top + preview.styles.margin.bottom
        room = self._dialog_rows - dialog.styles.gutter.height - others - margins
        content = preview.query_one(Static).outer_size.height
        overflows = content > room
        self._preview_rows = max(MIN_PREVIEW_ROWS, room - 1 if overflows else room)
        preview.styles.max_height = self._preview_rows
        more.display = overflows
        self.call_after_refresh(self._show_more)  # once the preview has its new height

    def _show_more(self) -> None:
        self.fitted = True
        preview, more = self._preview, next(self.query("#approval-more").results(Static), None)
        if preview is None or more is None or not more.display:  # (gone: answered before this ran)
            return
        content = preview.query_one(Static).outer_size.height
        shown = preview.scrollable_content_region.height or self._preview_rows
        top = round(preview.scroll_y)
        below = max(0, content - top - shown)
        if below:
            more.update(f"↓ {below} more line{'s' if below != 1 else ''} · pgdn scrolls")
        else:
            more.update(f"↑ {top} line{'s' if top != 1 else ''} above · pgup scrolls")

    def action_scroll_preview(self, direction: int) -> None:
        preview = self._preview
        if preview is None:
            return
        if direction > 0:
            preview.scroll_page_down(animate=False)
        else:
            preview.scroll_page_up(animate=False)

    def _typing_feedback(self) -> bool:
        return isinstance(self.focused, FeedbackInput)

    def action_answer(self, decision: str) -> None:
        if self._typing_feedback():
            raise SkipAction  # a letter of the feedback (escape is the box's own: back)
        if decision == "yes":
            self.dismiss(ApprovalAnswer("yes"))
        elif decision == "always":
            self.dismiss(ApprovalAnswer("always"))
        elif decision == "always_server":
            if not self.request.server_rule:  # not an MCP tool: `s` means nothing here
                return
            self.dismiss(ApprovalAnswer("always_server"))
        else:
            self.dismiss(ApprovalAnswer("no"))

    def action_feedback(self) -> None:
        if self._typing_feedback():
            raise SkipAction
        box = self.query_one(FeedbackInput)
        box.display = True
        # At once, not as `focus()` does after the keys already queued: the `a` of "use an
        # offset", typed right after `f`, would otherwise answer "yes, and don't ask again".
        self.set_focus(box)
        self.refit()  # the box takes rows from the preview, never from the choices

    @on(OptionList.OptionSelected, "#approval-options")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id == "feedback":
            self.action_feedback()
        else:
            self.action_answer(event.option.id or "no")

    @on(Input.Submitted, "#approval-feedback")
    def _feedback(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if text:
            self.dismiss(ApprovalAnswer("feedback", text))
