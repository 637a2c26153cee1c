"""The first frame: the main screen's frame, drawn before the agent core is loaded.

The core (`todo_agent.core.runtime`: the tools, hooks, permissions, the session) takes a
good part of start-up to import and build; `TodoAgentApp` builds it in a thread while
this screen is up. It shows what the main screen will (the task panel's frame, the
prompt, the status line saying `starting…`), and the prompt takes keys at once: what is
typed is carried over to the main screen, and what is sent (enter) is kept and sent, in
order, once the core is ready. Slash commands wait too: they need the core. shift+tab
cycles the permission mode here as there (the status line says so), and the mode
chosen is the main screen's; the footer shows only keys that work on this screen.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from todo_agent.core.permissions.modes import PermissionMode, next_mode
from todo_agent.core.settings import Config

from ..sanitize import sanitize
from ..widgets.prompt import PromptBox, PromptInput
from ..widgets.status import StatusLine


class StartScreen(Screen[None]):
    """What the person sees (and types into) while the core is being built."""

    AUTO_FOCUS = "#prompt"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("shift+tab", "cycle_mode", "Mode", tooltip="Cycle the permission mode", id="cycle-mode"),
    ]

    DEFAULT_CSS = """
    StartScreen {
        layout: vertical;
        & > #work { height: 1fr; }
        &.-panel-right #task-panel { dock: right; width: 38%; max-width: 44; min-width: 24; height: 1fr; }
        &.-panel-bottom #task-panel { dock: bottom; height: 12; width: 1fr; }
        &.-panel-hidden #task-panel { display: none; }
        #task-panel {
            border: round $surface-lighten-2;
            border-title-color: $text-accent;
            padding: 0 1;
            color: $text-muted;
            text-style: italic;
        }
        #start-waiting { padding: 1 1 0 1; color: $text-muted; }
        #prompt-box { margin: 0 1; }
    }
    """

    def __init__(self, config: Config) -> None:
        # The panel's place as a class from the start: set on mount, it would restyle the screen.
        super().__init__(classes=f"-panel-{config.task_panel}")
        self.config = config
        self.waiting: list[str] = []
        """Prompts sent (enter) before the core was ready, oldest first."""
        self.mode: PermissionMode = config.permission_mode
        """The permission mode the person chose here (shift+tab); the main screen starts in it."""

    def compose(self) -> ComposeResult:
        with Vertical(id="work"):
            panel = Static("\nNo tasks yet", id="task-panel", markup=False)  # as the empty TaskPanel
            panel.border_title = "Tasks"
            yield panel
            yield Static("", id="start-waiting", markup=False)
        yield PromptBox(id="prompt-box")
        yield StatusLine(id="status", activity="starting…", mode=self.config.permission_mode)
        yield Footer()

    def on_mount(self) -> None:
        if self.app.animation_level == "none":
            self.query_one(PromptInput).cursor_blink = False

    def action_cycle_mode(self) -> None:
        # As the runtime's policy cycles: bypassPermissions only for a session started in it.
        self.mode = next_mode(self.mode, bypass_in_cycle=self.config.permission_mode == "bypassPermissions")
        self.query_one(StatusLine).mode = self.mode

    @on(PromptInput.Submitted)
    def _prompt_sent(self, event: PromptInput.Submitted) -> None:
        event.stop()
        self.waiting.append(event.text)
        lines = [Content.styled("› ", "bold") + Content(sanitize(text)) for text in self.waiting]
        self.query_one("#start-waiting", Static).update(
            Content("\n").join([*lines, Content("sent once todo-agent has started")])
        )

    @property
    def draft(self) -> str:
        """What is typed in the prompt and not sent yet."""
        return self.query_one(PromptInput).text
