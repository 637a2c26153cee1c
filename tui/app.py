"""The composition root: builds the screens and hands them the core.

`TodoAgentApp` takes a `Runtime` (the agent, its session and task store) or, when no
model is configured, just the `Config` (then it shows the welcome screen). `run_app`
(the `todo-agent` command) starts it with neither built: `TodoAgentApp.starting` draws
the first frame (`StartScreen`, a prompt that takes keys at once) and builds the
`Runtime` in a thread meanwhile (`startup.py`), then swaps in the main screen, carrying
over what was typed and sent. Nothing here imports the agent core (`core.runtime`) or
the model client before the first frame: `openai` loads in a thread after it.

An unknown `--resume` id is found before the app starts (a file name), and the
command says so on stderr, exit status 2. Any other error building the runtime (a
session in use, a broken script) ends the app at once, and `run_app` raises it again once the terminal is
restored, so the command prints it on stderr and exits with status 2, as it did when the
runtime was built before the app: a message drawn in the app would vanish with the
full-screen view. Settings errors are found before the app starts, as before.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual._time import get_time
from textual.actions import SkipAction
from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input, TextArea

from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.core.settings import Config
from todo_agent.core.stop_signals import exit_status, on_stop_signals

from .approvals import ApprovalBroker, Resolve
from .notify import Attention
from .screens.starting import StartScreen
from .startup import RuntimeStarter

if TYPE_CHECKING:
    from textual.command import Provider
    from textual.driver import Driver

    from todo_agent.core.hooks.wiring import NotificationKind
    from todo_agent.core.model.base import ChatModel
    from todo_agent.core.runtime import Runtime

    from .screens.approval import ApprovalScreen

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
        self.runtime = None if isinstance(target, Config) else target
        self.config = target if isinstance(target, Config) else target.config
        self.broker = broker or ApprovalBroker()
        self.broker.on_waiting = self._approvals_waiting
        if self.runtime is not None and self.runtime.approver is None:
            # A runtime built without an approver would deny everything that asks; ask here.
            self.runtime.set_approver(self.broker.approve)
        self.initial_prompt = initial_prompt
        self.pick_session = pick_session
        self.starter: RuntimeStarter | None = None
        """Set by `starting`: the runtime being built while the first frame is up."""
        self._start: StartScreen | None = None
        self._last_ctrl_c = -QUIT_WINDOW
        self._approval_key: tuple[ApprovalScreen, str, float] | None = None
        """The last key an approval modal got: the modal, the key, when it was typed."""
        self._release_signals: Callable[[], None] = lambda: None
        self.attention = Attention(self.config.notify, self._write_to_terminal, lambda: self.app_focus)
        """Rings and notifies when the terminal is in the background (`notify.py`)."""
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
        from todo_agent.core.runtime import Runtime

        if not config.has_model and model is None:
            return cls(config, animations=animations)
        broker = ApprovalBroker()
        runtime = Runtime.create(
            config, approver=broker.approve, resume=resume or None, continue_latest=continue_latest, model=model
        )
        return cls(
            runtime, broker=broker, initial_prompt=initial_prompt, pick_session=resume == "", animations=animations
        )

    @classmethod
    def starting(
        cls,
        config: Config,
        *,
        resume: str | None = None,
        continue_latest: bool = False,
        initial_prompt: str | None = None,
        create: Callable[[Config, ApprovalBroker], Runtime] | None = None,
        animations: bool = True,
    ) -> TodoAgentApp:
        """The app for a `config` with a model, drawn before its runtime is built.

        The runtime is built in a thread once the first frame is out (`create`, by default
        `Runtime.create` with this app's approver; tests pass a slower one). `resume=""`
        opens a new session and the session picker.
        """
        app = cls(config, initial_prompt=initial_prompt, pick_session=resume == "", animations=animations)

        def build() -> Runtime:
            if create is not None:
                return create(config, app.broker)
            from todo_agent.core.runtime import Runtime

            from .screens import approval, main  # noqa: F401  (here, not on the event loop at the swap)

            return Runtime.create(
                config, approver=app.broker.approve, resume=resume or None, continue_latest=continue_latest
            )

        app.starter = RuntimeStarter(build)
        return app

    def get_driver_class(self) -> type[Driver]:
        driver = super().get_driver_class()
        if driver.__name__ != "LinuxDriver":  # Windows' driver, or one a test chose
            return driver
        from .terminal_driver import TerminalDriver  # imports LinuxDriver: POSIX only

        return TerminalDriver

    def get_default_screen(self) -> Screen[None]:
        """`StartScreen` as the base of the stack when the runtime is built after the first frame.

        Pushed from `on_mount` instead, it would be drawn inside Textual's start-up batch,
        where the frame is computed but never written: the first frame seen would lack
        the prompt until the next full repaint (~30 ms later).
        """
        if self.runtime is None and self.starter is not None:
            self._start = StartScreen(self.config)
            return self._start
        return super().get_default_screen()

    def on_mount(self) -> None:
        # The terminal closed, or `kill`: quit as on ctrl+q, which stops a running command.
        self._release_signals = on_stop_signals(
            asyncio.get_running_loop(), lambda sig: self.exit(return_code=exit_status(sig))
        )
        if self.runtime is not None:
            self._show_main(self.runtime)
        elif self.starter is not None:
            # `call_later`: the result is taken in the app's own context, as a message
            self.call_after_refresh(self._first_frame_out)
        else:
            from .screens.welcome import WelcomeScreen  # only without a model: off the usual start-up

            self.push_screen(WelcomeScreen())

    def _first_frame_out(self) -> None:
        """The first frame is on screen: build the core (in a thread) now."""
        # What drew the first frame (Textual, Rich, the start screen: most of the objects
        # the process will ever hold) lives as long as the app. Out of the collector's
        # way, the collections while the core loads and a session is read walk only what
        # is new (a full one walked everything: 30-80 ms of a resume).
        gc.freeze()
        assert self.starter is not None
        self.starter.start(partial(self.call_later, self._runtime_built), self._prompt_waits)

    def _prompt_waits(self) -> bool:
        """Whether a prompt waits for the model: sent on the start screen, or given on the
        command line (asked from the start-up thread: it reads, never changes)."""
        return bool(self.initial_prompt or (self._start is not None and self._start.waiting))

    def _runtime_built(self) -> None:
        """On the event loop, once the starter's thread is done: the main screen, or exit."""
        starter = self.starter
        if starter is None or not self.is_running:
            return
        if starter.runtime is None:  # `run_app` raises the error once the terminal is back
            self.exit(return_code=2)
            return
        self.runtime = starter.runtime
        start = next(s for s in self.screen_stack if isinstance(s, StartScreen))
        while self.screen is not start:  # e.g. the command palette, opened meanwhile
            self.pop_screen()
        self._show_main(starter.runtime, start)

    def _show_main(self, runtime: Runtime, start: StartScreen | None = None) -> None:
        """The main screen, in place of `start` if given (with what was typed on it)."""
        from .screens.main import MainScreen

        self.broker.attach(self._present_approval)
        if start is not None and start.mode != runtime.mode:  # chosen with shift+tab while it started
            runtime.set_mode(start.mode)
        main = MainScreen(
            runtime,
            initial_prompt=self.initial_prompt,
            pick_session=self.pick_session,
            waiting=start.waiting if start else (),
            draft=start.draft if start else "",
        )
        self.push_screen(main)
        if start is not None:  # the base of the stack (Textual cannot switch that one away): emptied
            start.remove_children()

    async def on_unmount(self) -> None:
        self.broker.attach(None)
        self._release_signals()
        if self.runtime is not None:  # quit, a closed terminal, SIGTERM: nothing started in the background outlives it
            await self.runtime.stop_background()
        self.attention.seen()

    def _write_to_terminal(self, text: str) -> None:
        """Escape sequences of our own, straight to the terminal (Textual's `bell` does the same)."""
        driver = self._driver
        if driver is not None and not self.is_headless:
            driver.write(text)
            driver.flush()

    def watch_app_focus(self, focused: bool) -> None:
        """Back from another window (the terminal reports focus, or a key is typed): the
        person's title comes back, and so does the focus. Textual gives focus back only to
        a widget on the screen that lost it, and a screen shown while the terminal was in
        the background gets no focus of its own: the main screen, swapped in during start-up
        with focus reporting on (tmux `focus-events on`), took no keys at all."""
        if not focused:
            return
        self.attention.seen()
        screen = self.screen
        if screen.focused is None and isinstance(screen.AUTO_FOCUS, str):
            target = next((w for w in screen.query(screen.AUTO_FOCUS) if w.focusable), None)
            if target is not None:
                screen.set_focus(target)

    def needs_person(self, message: str, kind: NotificationKind) -> None:
        """The agent waits for the person: tell the terminal if it is in the background, and
        run the person's `Notification` hooks (whatever the focus; they are told it)."""
        focused = self.app_focus
        self.attention.needed(message)
        if self.runtime is not None and self.runtime.turn.notifies(kind):
            self.run_worker(self._notification_hooks(message, kind, focused), exit_on_error=False)

    async def _notification_hooks(self, message: str, kind: NotificationKind, focused: bool) -> None:
        from .screens.main import MainScreen

        if self.runtime is None:
            return
        events = await self.runtime.turn.notification(message, kind, focused)
        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        if main is not None:
            await main.show_events(events)

    async def on_event(self, event: events.Event) -> None:
        stack = self.screen_stack
        screen = _approval_screen(stack[-1]) if stack else None
        # Checked twice per key: as it arrives, and when it bubbles back from the focused
        # widget to the app's bindings, by which time the next modal may be on top.
        if (
            isinstance(event, events.Key)
            and screen is not None
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
        return self._within_double_tap(event.key, event.time, screen)

    def _within_double_tap(self, key: str, when: float, screen: ApprovalScreen) -> bool:
        """`key` at `when` is the same key again, right after it answered another approval."""
        if self._approval_key is None:
            return False
        previous, last, typed = self._approval_key
        return previous is not screen and key == last and when - typed < DOUBLE_TAP

    def answers_now(self, key: str) -> bool:
        """Whether `key`, pressed now, would answer the approval on top: it is on screen and
        the key is neither from before it opened nor a double tap of the previous answer.
        A person who reads the question first always gets here; tests wait on it."""
        screen = _approval_screen(self.screen_stack[-1]) if self.screen_stack else None
        if screen is None or not screen.asking:
            return False
        now = get_time()
        return now >= screen.shown_at and not self._within_double_tap(key, now, screen)

    def _is_priority_key(self, key: str) -> bool:
        return any(binding.priority for binding in self._bindings.key_to_bindings.get(key, ()))

    def _approvals_waiting(self, waiting: int) -> None:
        """More requests joined (or left) the queue: the open dialog counts those behind it."""
        screen = _approval_screen(self.screen_stack[-1]) if self.screen_stack else None
        if screen is not None:
            screen.set_queued(max(0, waiting - 1))

    def _present_approval(self, request: ApprovalRequest, resolve: Resolve, queued: int) -> Callable[[], None]:
        from .screens.approval import ApprovalScreen
        from .screens.main import MainScreen

        screen = ApprovalScreen(request, workspace=self.config.workspace, queued=queued)
        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        status = main.status if main is not None else None
        conversation = main.conversation if main is not None else None
        if status is not None:  # the clock keeps running, but the wait is the person's, not the tool's
            status.set_waiting(request.tool)
        if conversation is not None and not request.agent:  # and the call's block says so too, not "running…"
            conversation.set_waiting(request.tool)

        def answered(answer: ApprovalAnswer | None) -> None:
            if status is not None:
                status.set_waiting(None)
            if conversation is not None and not request.agent:
                conversation.set_waiting(None)
            resolve(answer)

        self.push_screen(screen, callback=answered)
        who = f"{request.agent.split(' · ')[0]}: " if request.agent else ""  # a sub-agent's, named
        self.needs_person(f"{who}{request.tool} waits for your approval", "permission_prompt")

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


def _approval_screen(screen: object) -> ApprovalScreen | None:
    """`screen` if it is an approval modal. Its module is loaded with the main screen,
    after the first frame; until then no approval can be on screen (and the first key
    typed must not wait for the import)."""
    module = sys.modules.get("todo_agent.tui.screens.approval")
    return screen if module is not None and isinstance(screen, module.ApprovalScreen) else None


def screenshot_directory() -> Path:
    from platformdirs import user_downloads_path

    from todo_agent.core.places import data_root

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

    Given a `Config`, draws the first frame, then builds the `Runtime` (resuming `resume`
    or the latest session when asked) with this app's approver, and raises what building
    it raised (`SessionError`, `ScriptError`) once the app is gone; without a model,
    shows the welcome screen. A `Runtime` created without an approver gets this app's.
    """
    if not isinstance(target, Config):
        app = TodoAgentApp(target, initial_prompt=initial_prompt)
        app.run()
        return app.return_code or 0
    if not target.has_model:
        app = TodoAgentApp(target)
        app.run()
        return app.return_code or 0
    if resume:  # an unknown id is found at once (a file name), and said before the app starts
        from todo_agent.core.session.directory import find_session

        find_session(target.workspace, resume)
    app = TodoAgentApp.starting(target, resume=resume, continue_latest=continue_latest, initial_prompt=initial_prompt)
    starter = app.starter
    assert starter is not None
    try:
        app.run()
    finally:
        starter.join()  # quit before the runtime was ready: it is still built, and closed
        if starter.runtime is not None:  # built here, so closed here
            starter.runtime.close()
    if starter.error is not None:
        raise starter.error
    return app.return_code or 0
