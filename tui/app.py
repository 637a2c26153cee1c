"""The composition root: builds the screens and hands them the core.

`TodoAgentApp` takes a `Runtime` (the agent, its session and task store) or, when no
model is configured, just the `Config` (then it shows the welcome screen). Nothing here
imports the model client: `openai` loads in a thread after the first frame.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.actions import SkipAction
from textual.app import App
from textual.binding import Binding, BindingType
from textual.widgets import Input, TextArea

from todo_agent.core.model import ChatModel
from todo_agent.core.permissions import ApprovalAnswer, ApprovalRequest
from todo_agent.core.runtime import Runtime
from todo_agent.core.session import data_root
from todo_agent.core.settings import Config

from .approvals import ApprovalBroker, Resolve
from .screens.approval import ApprovalScreen
from .screens.main import MainScreen

if TYPE_CHECKING:
    from textual.command import Provider

QUIT_WINDOW = 2.0
"""Seconds within which a second ctrl+c quits."""
DOUBLE_TAP = 0.25
"""Seconds within which the key that answered one approval is not taken as the answer to
the next: nobody reads a command that fast, so it is a double tap."""


def _palette_commands() -> type[Provider]:
    """The palette's provider, imported when the palette first opens (textual.command: ~25 ms)."""
    from .palette import TodoAgentCommands

    return TodoAgentCommands


class TodoAgentApp(App[int]):
    TITLE = "todo-agent"
    COMMANDS = App.COMMANDS | {_palette_commands}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", tooltip="Quit todo-agent", priority=True, id="quit"),
        # Priority, so it works on modal screens too (their copy binding would catch it);
        # `action_ctrl_c` steps aside when there is selected text to copy.
        Binding(
            "ctrl+c",
            "ctrl_c",
            "Quit (twice)",
            tooltip="Press twice to quit (copies instead when text is selected)",
            show=False,
            priority=True,
            id="quit-twice",
        ),
    ]

    def __init__(
        self,
        target: Runtime | Config,
        *,
        broker: ApprovalBroker | None = None,
        initial_prompt: str | None = None,
        pick_session: bool = False,
        animations: bool = True,
    ) -> None:
        """`broker` must be the one whose `approve` the runtime was created with."""
        super().__init__()
        self.runtime = target if isinstance(target, Runtime) else None
        self.config = target.config if isinstance(target, Runtime) else target
        self.broker = broker or ApprovalBroker()
        if self.runtime is not None and self.runtime.approver is None:
            # A runtime built without an approver would deny everything that asks; ask here.
            self.runtime.set_approver(self.broker.approve)
        self.initial_prompt = initial_prompt
        self.pick_session = pick_session
        self._last_ctrl_c = -QUIT_WINDOW
        self._approval_key: tuple[ApprovalScreen, str, float] | None = None
        """The last key an approval modal got: the modal, the key, when it was typed."""
        if not animations:
            self.animation_level = "none"

    @classmethod
    def for_config(
        cls,
        config: Config,
        *,
        resume: str | None = None,
        continue_latest: bool = False,
        model: ChatModel | None = None,
        initial_prompt: str | None = None,
        animations: bool = True,
    ) -> TodoAgentApp:
        """The app for `config`: a runtime wired to this app's approvals, or the welcome screen.

        `resume=""` (the flag without an id) opens a new session and the session picker.
        """
        if not config.has_model and model is None:
            return cls(config, animations=animations)
        broker = ApprovalBroker()
        runtime = Runtime.create(
            config, approver=broker.approve, resume=resume or None, continue_latest=continue_latest, model=model
        )
        return cls(
            runtime, broker=broker, initial_prompt=initial_prompt, pick_session=resume == "", animations=animations
        )

    def on_mount(self) -> None:
        if self.runtime is None:
            from .screens.welcome import WelcomeScreen  # only without a model: off the usual start-up

            self.push_screen(WelcomeScreen())
            return
        self.broker.attach(self._present_approval)
        self.push_screen(MainScreen(self.runtime, initial_prompt=self.initial_prompt, pick_session=self.pick_session))

    def on_unmount(self) -> None:
        self.broker.attach(None)

    async def on_event(self, event: events.Event) -> None:
        stack = self.screen_stack
        screen = stack[-1] if stack else None
        # Checked twice per key: as it arrives, and when it bubbles back from the focused
        # widget to the app's bindings, by which time the next modal may be on top.
        if (
            isinstance(event, events.Key)
            and isinstance(screen, ApprovalScreen)
            and not self._is_priority_key(event.key)  # quitting always works
        ):
            if screen.predates(event) or self._double_tap(event, screen):
                # Meant for the previous question: this one was not on screen yet, or only
                # just. Each dropped press of the same key keeps the window open, so a burst
                # or a held key never answers the next question, however slow it is to appear.
                if not event.is_forwarded and self._approval_key is not None and self._approval_key[1] == event.key:
                    previous, key, _ = self._approval_key
                    self._approval_key = (previous, key, event.time)
                return
            if not event.is_forwarded:
                self._approval_key = (screen, event.key, event.time)
        await super().on_event(event)

    def _double_tap(self, event: events.Key, screen: ApprovalScreen) -> bool:
        """The same key again, right after it answered another approval."""
        if self._approval_key is None:
            return False
        previous, key, typed = self._approval_key
        return previous is not screen and key == event.key and event.time - typed < DOUBLE_TAP

    def _is_priority_key(self, key: str) -> bool:
        return any(binding.priority for binding in self._bindings.key_to_bindings.get(key, ()))

    def _present_approval(self, request: ApprovalRequest, resolve: Resolve, queued: int) -> Callable[[], None]:
        screen = ApprovalScreen(request, workspace=self.config.workspace, queued=queued)
        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        status = main.status if main is not None else None
        conversation = main.conversation if main is not None else None
        if status is not None:  # the clock keeps running, but the wait is the person's, not the tool's
            status.set_waiting(request.tool)
        if conversation is not None:  # and the call's block says so too, not "running…"
            conversation.set_waiting(request.tool)

        def answered(answer: ApprovalAnswer | None) -> None:
            if status is not None:
                status.set_waiting(None)
            if conversation is not None:
                conversation.set_waiting(None)
            resolve(answer)

        self.push_screen(screen, callback=answered)

        def close() -> None:
            if screen in self.screen_stack:
                screen.pop_until_active()
                screen.dismiss(None)

        return close

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """Save an SVG of the screen (the palette's "Screenshot") and say where, or why not.

        Into the Downloads folder when there is one, else beside the sessions (never into
        the project). Textual's own version failed without a reason where there is no
        Downloads folder (a server, a container).
        """
        directory = Path(path) if path else screenshot_directory()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            saved = self.save_screenshot(filename, str(directory), time_format)
        except OSError as exc:
            self.notify(
                f"Could not save the screenshot in {directory}: {exc.strerror or exc}",
                title="Screenshot",
                severity="error",
                markup=False,
            )
            return None
        self.notify(f"Screenshot saved to {saved}", title="Screenshot", markup=False)
        return saved

    def action_ctrl_c(self) -> None:
        if self._has_selection():
            raise SkipAction()  # let the focused widget's or the screen's copy binding have it
        now = time.monotonic()
        if now - self._last_ctrl_c <= QUIT_WINDOW:
            self.exit(0)
            return
        self._last_ctrl_c = now
        self.notify("Press ctrl+c again to quit", title="todo-agent", timeout=QUIT_WINDOW, markup=False)

    def _has_selection(self) -> bool:
        """Whether ctrl+c should copy: text is selected in the focused input or on screen."""
        focused = self.focused
        if isinstance(focused, TextArea | Input) and focused.selected_text:
            return True
        stack = self.screen_stack
        return bool(stack and stack[-1].get_selected_text())


def screenshot_directory() -> Path:
    from platformdirs import user_downloads_path

    downloads = user_downloads_path()
    return downloads if downloads.is_dir() else data_root() / "screenshots"


def run_app(
    target: Runtime | Config,
    *,
    resume: str | None = None,
    continue_latest: bool = False,
    initial_prompt: str | None = None,
) -> int:
    """Run the TUI until the person quits; returns the exit code.

    Given a `Config`, builds the `Runtime` (resuming `resume` or the latest session when
    asked) with this app's approver; without a model, shows the welcome screen. A
    `Runtime` created without an approver gets this app's.
    """
    owned = isinstance(target, Config)
    if isinstance(target, Config):
        app = TodoAgentApp.for_config(
            target, resume=resume, continue_latest=continue_latest, initial_prompt=initial_prompt
        )
    else:
        app = TodoAgentApp(target, initial_prompt=initial_prompt)
    try:
        app.run()
    finally:
        if owned and app.runtime is not None:  # built here, so closed here
            app.runtime.close()
    return app.return_code or 0
