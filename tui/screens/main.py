"""The main screen: conversation, task panel, prompt, status line.

It implements `ConversationUI` for the event handler and runs agent turns in a worker
(never blocking the UI). Slash commands are read in `slash.py`, which asks this screen (its
`CommandHost`) for what changes screen state; the person's edits and review of the plan
are carried out by the `WorkArea` around the panel (`work_area.py`). It talks to the core
through `Runtime`'s methods only.

Sub-agents: their events come in the turn's stream; `AgentViews` records each one's own
transcript, fills the live line under its `Agent` call and the row of its task. `o` on a
task in the panel shows its sub-agent's transcript in a conversation view of its own, in
place of the main one (live while it runs; esc goes back), and `x` stops it.

Hooks: at start-up, project hooks the person has not accepted are shown in a modal
(`HookTrustScreen`) before anything runs; then the SessionStart hooks run (again after
`/new` and on resume), and a turn waits for them, so their context goes with the first
prompt. A prompt a `UserPromptSubmit` hook blocked goes back into an empty prompt box.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from todo_agent.core.changes.prompt_rewind import Outcome, PromptPlan, Scope
from todo_agent.core.changes.rewind import RewindPlan
from todo_agent.core.engine.pump import turn_events
from todo_agent.core.events import AgentEvent, AgentFinished, AgentStarted, Event, GoalProgress, Usage
from todo_agent.core.hooks.wiring import SessionSource
from todo_agent.core.mcp.server import McpServer
from todo_agent.core.runtime import Runtime
from todo_agent.core.session.directory import SessionError
from todo_agent.core.settings import PanelPlace
from todo_agent.core.tasks.model import Task
from todo_agent.core.tasks.render import render_tasks

from ..agent_views import AgentTranscript, AgentViews
from ..commands import SLASH_COMMANDS, SlashCommand, looks_like_command, parse
from ..handler import EventHandler
from ..notify import LONG_TURN
from ..transcript import Entry, NoticeEntry, PlainEntry, ToolEntry, ToolStatus, UserEntry, entries_from_history
from ..widgets.conversation import Conversation
from ..widgets.markdown_blocks import preload as preload_markdown
from ..widgets.prompt import PromptBox, PromptInput, Suggestions
from ..widgets.status import MODE_LABELS, StatusLine, usage_detail
from ..widgets.task_panel import TaskPanel
from .hook_trust import HookTrustScreen
from .mcp_trust import McpTrustScreen
from .prompt_rewind import PromptsScreen
from .rewind import RewindScreen
from .sessions import SessionsScreen
from .shells import ShellsScreen
from .slash import run_slash
from .work_area import WorkArea

PANEL_PLACES: tuple[PanelPlace, ...] = ("right", "bottom", "hidden")
DOUBLE_ESCAPE = 0.8
"""Seconds within which a second escape on an empty prompt opens `/rewind`."""
SHARED_LIST_POLL = 0.4
"""Seconds between looks at a shared task list (`--task-list`): another process's change
shows within half a second (a `stat` when nothing changed)."""


class MainScreen(Screen[None]):
    CSS_PATH = "main.tcss"
    AUTO_FOCUS = "#prompt"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "interrupt", "Interrupt", tooltip="Stop the running turn", id="interrupt"),
        Binding("ctrl+t", "toggle_tasks", "Tasks", tooltip="Show or hide the task panel", id="toggle-tasks"),
        Binding("shift+tab", "cycle_mode", "Mode", tooltip="Cycle the permission mode", id="cycle-mode"),
        Binding("ctrl+o", "toggle_output", "Output", tooltip="Show or hide the last tool output", id="toggle-output"),
        Binding(
            "pageup",
            "scroll_conversation(-1)",
            "Scroll up",
            tooltip="Scroll the conversation up",
            show=False,
            priority=True,
        ),
        Binding(
            "pagedown",
            "scroll_conversation(1)",
            "Scroll down",
            tooltip="Scroll the conversation down",
            show=False,
            priority=True,
        ),
    ]

    def __init__(
        self,
        runtime: Runtime,
        *,
        initial_prompt: str | None = None,
        pick_session: bool = False,
        waiting: Sequence[str] = (),
        draft: str = "",
    ) -> None:
        """`waiting` and `draft`: what was sent and typed on the first frame (`StartScreen`)."""
        super().__init__()
        self.runtime = runtime
        self.initial_prompt = initial_prompt
        self._waiting = list(waiting)
        self._draft = draft
        self.pick_session = pick_session
        self.panel_place: PanelPlace = runtime.config.task_panel
        self._panel_shown_place: PanelPlace = "right" if self.panel_place == "hidden" else self.panel_place
        self._ready = asyncio.Event()
        self._hooks_ready = asyncio.Event()
        """Set once the SessionStart hooks are done (turns wait for it)."""
        self._sent = ""
        """The prompt of the latest turn (given back if a hook blocks it)."""
        self._turn: Worker[None] | None = None
        self._started = 0.0
        """When the latest turn (or `!` command) started: a long one's end is worth a bell."""
        self._queued: list[str] = []
        self._index_notices: set[str] = set()
        """Ignore-file notices of the `@` listing already shown."""
        self.tasks_seen = ""
        """The task list as last shown to the person (panel or conversation), rendered."""
        self._events = [0, 0]
        """Events of the running turn: produced by the core, and drawn (see `caught_up`)."""
        self._window: int | None = None
        """The context window, for the status line (known after the warm-up)."""
        self.agent_views = AgentViews()
        self.viewing: str | None = None
        """The sub-agent whose transcript is shown in place of the conversation, if any."""
        self._viewed: AgentTranscript | None = None
        self._escaped = 0.0
        """When escape was last pressed on an empty prompt with no turn running (twice: `/rewind`)."""

    def compose(self) -> ComposeResult:
        with WorkArea(self.runtime, self._refuse_while_busy, id="work"):
            yield TaskPanel(id="task-panel")
            yield Conversation(id="conversation")
            yield Static("", id="agent-view-title", markup=False)
            yield Conversation(id="agent-view")
        yield PromptBox(id="prompt-box")
        yield StatusLine(id="status")
        yield Footer()

    @property
    def conversation(self) -> Conversation:
        return self.query_one(Conversation)

    @property
    def panel(self) -> TaskPanel:
        return self.query_one(TaskPanel)

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    @property
    def busy(self) -> bool:
        return self._turn is not None and not self._turn.is_finished

    @property
    def agent_view(self) -> Conversation:
        return self.query_one("#agent-view", Conversation)

    async def on_mount(self) -> None:
        self.query_one("#agent-view-title").display = False
        self.agent_view.display = False
        if self.app.animation_level != "none":  # the live lines' clocks
            self.set_interval(1, self._refresh_agents)
        if self.runtime.config.task_list:  # another todo-agent may change it at any time
            self.set_interval(SHARED_LIST_POLL, self._follow_shared_list)
        self.place_panel(self.panel_place)
        self._wire_prompt()
        if self.app.animation_level == "none":
            self.query_one(PromptInput).cursor_blink = False
        self.status.set_model(self.runtime.model_label)
        self.status.mode = self.runtime.mode
        self.show_sandbox()
        self.runtime.shells.listeners.append(self.show_shells)
        # The model client (`import openai`, ~0.5 s) is built in a thread as soon as the
        # first frame is out: never before it, and never waiting for anything else.
        self.call_after_refresh(self.warm_up)
        self.call_after_refresh(self._start_mcp)  # after the first frame too, and never waited for
        await self._show_session()
        await self._take_over_start()
        if self.pick_session:
            self.choose_session()
        self.call_after_refresh(self._ask_hook_trust)  # a modal pushed before the first frame would stall warm-up

    def _wire_prompt(self) -> None:
        """`@` completion from the workspace's file index, `/` completion with the person's commands."""
        runtime, box = self.runtime, self.query_one(PromptBox)
        runtime.turn.reserve_command_names({c.name for c in SLASH_COMMANDS})
        box.mentions = runtime.turn.files
        box.extra_commands = self.custom_slash_commands
        app = self.app

        def rebuilt() -> None:  # from the index's thread
            if not app.is_running or not box.is_attached:  # the app or the screen has closed meanwhile
                return
            with contextlib.suppress(RuntimeError):  # closed between the look and the call
                app.call_from_thread(box.files_changed)
                app.call_from_thread(self._show_index_notices)

        runtime.turn.files.on_rebuilt = rebuilt

    def on_unmount(self) -> None:
        self.runtime.turn.files.on_rebuilt = None  # a listing that lands later has no list to update

    def _show_index_notices(self) -> None:
        """An ignore file the listing could not use (a FIFO, a link to a device): said once."""
        for text in self.runtime.turn.files.notices():
            if text not in self._index_notices:
                self._index_notices.add(text)
                self.call_later(self.conversation.add, NoticeEntry(text, "warning"))

    def custom_slash_commands(self) -> list[SlashCommand]:
        commands = self.runtime.turn.commands().commands.values()
        return [SlashCommand(c.name, c.description, c.argument_hint, c.label) for c in commands]

    async def use_command(self, command: SlashCommand) -> None:
        """A custom command chosen in the palette: sent, or put in the prompt for its arguments."""
        if not command.usage:
            await self.submit(command.name)
            return
        prompt = self.query_one(PromptInput)
        prompt.text = command.name + " "
        prompt.move_cursor(prompt.document.end)
        prompt.focus()

    async def _take_over_start(self) -> None:
        """What was typed before the core was ready: the draft back in the prompt, and the
        prompts sent in order (after the demo's opening prompt, if there is one)."""
        if self._draft:
            prompt = self.query_one(PromptInput)
            prompt.text = self._draft
            prompt.move_cursor(prompt.document.end)
        waiting, self._waiting = self._waiting, []
        if self.initial_prompt:
            self._queued.extend(waiting)
            return
        for text in waiting:
            await self.submit(text)

    async def _show_session(self) -> None:
        """Draw the current session: its history, its notices, its task list."""
        await self.close_agent_view()
        self.agent_views.forget()
        await self.conversation.load(
            entries_from_history(
                self.runtime.sessions.transcript,  # the full transcript, compactions marked
                summarize=self.runtime.turn.summarize,
                status_of=self.runtime.sessions.tool_status,
            )
        )
        for notice in self.runtime.startup_notices():
            await self.conversation.add(NoticeEntry(notice.text, notice.level))
        await self.panel.show(self.runtime.plan.tasks(), changes=self.runtime.plan.change_lines())
        self.tasks_seen = render_tasks(self.runtime.plan.tasks(), spend=False)
        self._show_context_usage()

    def _show_context_usage(self) -> None:
        used, self._window = self.runtime.turn.context_usage()
        self.status.set_context(used, self._window)

    # --- warm-up and turns --------------------------------------------------------

    @work(thread=True, exclusive=True, group="warm-up", exit_on_error=False)
    def warm_up(self) -> None:
        """Import and build the model client off the event loop, after the first frame
        (and what drawing Markdown needs, so the first answer does not wait for it)."""
        preload_markdown()
        self.runtime.warm_up()

    # --- MCP servers -----------------------------------------------------------------

    def _start_mcp(self) -> None:
        mcp = self.runtime.mcp
        if not mcp.configured:
            return
        mcp.listen(self._mcp_changed)
        self._show_mcp()
        self.runtime.mcp.start()

    def _show_mcp(self) -> None:
        connected, total = self.runtime.mcp.counts()
        failing = any(s.state == "failed" for s in self.runtime.mcp.servers)
        self.status.set_mcp(connected, total, failing)

    def _mcp_changed(self, server: McpServer) -> None:
        """A server's state changed (called in its owner task, on this loop)."""
        if not self.is_attached:
            return
        self._show_mcp()
        if server.state == "connected":  # its tools' schemas now take part of the window
            self._show_context_usage()
        if server.state == "failed":
            text = f"MCP server {server.name} failed: {server.reason} (/mcp shows it; /mcp reconnect {server.name})"
            self.call_later(self.conversation.add, NoticeEntry(text, "warning"))

    def _ask_mcp_trust(self, *, asked: bool = False) -> None:
        """`asked`: by `/mcp trust` (say so when nothing waits)."""
        waiting = self.runtime.mcp.untrusted()
        if not waiting and asked:
            self.call_later(self.conversation.add, NoticeEntry("no project MCP server is waiting to be accepted"))
        if waiting:
            screen = McpTrustScreen([s.spec for s in waiting])
            self.app.push_screen(screen, callback=lambda accepted: self._mcp_trust_answered(waiting, accepted))

    async def _mcp_trust_answered(self, servers: list[McpServer], accepted: bool | None) -> None:
        if accepted:
            warning = self.runtime.mcp.accept(servers)
            names = ", ".join(s.name for s in servers)
            await self.conversation.add(NoticeEntry(f"project MCP servers accepted: {names}; starting them"))
            if warning:
                await self.conversation.add(NoticeEntry(warning, "warning"))
        else:
            self.runtime.mcp.decline(servers)
            await self.conversation.add(
                NoticeEntry("project MCP servers not started this session; /mcp trust starts them", "warning")
            )

    @work(exclusive=True, group="mcp", exit_on_error=False)
    async def manage_mcp(self, action: str, name: str) -> None:
        """`/mcp reconnect|enable|disable NAME` and `/mcp trust`, off the prompt's way."""
        mcp = self.runtime.mcp
        if action == "trust":
            self._ask_mcp_trust(asked=True)
            return
        server = mcp.find(name)
        if server is None:
            known = ", ".join(s.name for s in mcp.servers) or "none configured"
            await self.conversation.add(NoticeEntry(f"no MCP server {name!r} (servers: {known})", "warning"))
            return
        if action == "reconnect":
            await mcp.reconnect(server)
        else:
            await mcp.set_enabled(server, action == "enable")
        self._show_mcp()
        await self.conversation.add(NoticeEntry(f"MCP server {server.name}: {server.state}"))

    @work(exclusive=True, group="mcp", exit_on_error=False)
    async def _restart_mcp(self) -> None:
        await self.runtime.mcp.restart()
        self._show_mcp()

    # --- hooks -------------------------------------------------------------------------

    def _ask_hook_trust(self) -> None:
        waiting = self.runtime.trust.untrusted_hooks
        if not waiting:
            self.run_session_start("resume" if self.runtime.sessions.history else "startup")
            self._ask_mcp_trust()
            return
        path = self.runtime.trust.settings_path
        screen = HookTrustScreen(waiting, path, code=self.runtime.trust.hook_lines)
        self.app.push_screen(screen, callback=self._hook_trust_answered)

    async def _hook_trust_answered(self, accepted: bool | None) -> None:
        if accepted:
            try:
                self.runtime.trust.accept_hooks()
                await self.conversation.add(NoticeEntry("project hooks accepted: they run from now on"))
            except OSError as exc:  # they run this time; the next start asks again
                await self.conversation.add(NoticeEntry(str(exc), "warning"))
        else:
            await self.conversation.add(
                NoticeEntry("project hooks not run this session; you will be asked again next time", "warning")
            )
        self.run_session_start("resume" if self.runtime.sessions.history else "startup")
        self._ask_mcp_trust()

    @work(exclusive=True, group="session-start", exit_on_error=False)
    async def run_session_start(self, source: SessionSource) -> None:
        self._hooks_ready.clear()
        try:
            await self.show_events(await self.runtime.sessions.start(source))
        finally:
            self._hooks_ready.set()

    async def show_events(self, events: Sequence[Event]) -> None:
        """Events from outside a turn (hooks that ran): their notices into the conversation."""
        handler = EventHandler(self)
        for event in events:
            await handler.handle(event)

    # --- turns -------------------------------------------------------------------------

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def run_turn(self, prompt: str) -> None:
        self._sent = prompt
        self._started = time.monotonic()
        await self._hooks_ready.wait()  # SessionStart's context goes with the first prompt
        if not self._ready.is_set():  # sent right at launch: the client is still being built
            self.status.set_activity("connecting…")
            await self._ready.wait()
        self.status.set_activity("thinking")
        await self._draw_turn(lambda: self.runtime.turn.run(prompt))

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def run_goal(self, goal: str) -> None:
        """`/goal [TEXT]`: turns, one after another, until the plan is proven (esc stops it)."""
        self._sent = f"/goal {goal}".strip()
        self._started = time.monotonic()
        await self._hooks_ready.wait()
        await self._ready.wait()
        self.status.set_activity("thinking")
        await self._draw_turn(lambda: self.runtime.turn.run_goal(goal))

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def run_shell(self, command: str) -> None:
        """`!command`: the person's own, run now like a turn (esc kills it)."""
        self._sent = f"!{command}"
        self._started = time.monotonic()
        await self._ready.wait()
        self.status.set_activity("running your command")
        await self._draw_turn(lambda: self.runtime.turn.run_shell(command))

    async def _draw_turn(self, start: Callable[[], AsyncGenerator[Event, None]]) -> None:
        """Draw the events of `start()`, pumped in a task of their own (`turn_events`), counting
        them as they are produced and drawn (`caught_up`)."""
        handler = EventHandler(self)
        self._events = [0, 0]

        async def counted() -> AsyncIterator[Event]:
            async with aclosing(start()) as events:
                async for event in events:
                    self._events[0] += 1
                    yield event

        async for event in turn_events(counted):
            await handler.handle(event)
            self._events[1] += 1

    @property
    def caught_up(self) -> bool:
        """Whether every event the core has produced so far is drawn.

        The core runs ahead of the screen (an approval can open while earlier events are
        still being drawn); tests wait on this rather than on time.
        """
        produced, drawn = self._events
        return produced == drawn

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def run_compact(self, focus: str) -> None:
        """`/compact [focus]`: like a turn (esc interrupts it, the history then stays as it was)."""
        await self._ready.wait()
        handler = EventHandler(self)
        runtime = self.runtime
        async for event in turn_events(lambda: runtime.turn.compact(focus)):
            await handler.handle(event)

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker, state = event.worker, event.state
        if worker.group == "warm-up" and state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self._ready.set()
            # Everything loaded so far (Textual, openai, the session) lives as long as the
            # app: out of the collector's way, a full collection takes ~5 ms, not ~80 ms
            # (a stalled key or frame, a few times a minute while streaming).
            gc.freeze()
            if state == WorkerState.ERROR:
                await self.conversation.add(NoticeEntry(f"The model client could not start: {worker.error}", "error"))
                return
            await self._server_known()
            self.runtime.turn.files.refresh()  # `@` completion's list, built in the background
            if self.initial_prompt:
                prompt, self.initial_prompt = self.initial_prompt, None
                await self.submit(prompt)
        elif worker.group == "command" and state == WorkerState.ERROR:  # a slash command's `in_background`
            message = f"{worker.name} failed: {type(worker.error).__name__}: {worker.error}"
            await self.conversation.add(NoticeEntry(message, "error"))
        elif worker.group == "turn" and state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            # The state the message carries, not the worker's now: a RUNNING message read
            # after the worker failed (a busy machine) would finish the turn twice.
            await self._turn_finished(worker)

    async def _server_known(self) -> None:
        """What the warm-up learnt from the server: its model's name, its window, warnings."""
        self.status.set_model(self.runtime.model_label)
        self._show_context_usage()
        notices, self.runtime.server_notices = self.runtime.server_notices, []  # said once
        for notice in notices:
            await self.conversation.add(NoticeEntry(notice.text, notice.level))

    async def _turn_finished(self, worker: Worker[None]) -> None:
        if worker.state == WorkerState.ERROR:
            await self.conversation.stop_live()
            message = f"The turn failed: {type(worker.error).__name__}: {worker.error}"
            await self.conversation.add(NoticeEntry(message, "error"))
            self.notify(message, severity="error", title="todo-agent", markup=False)
        elif worker.state == WorkerState.CANCELLED:
            await self.conversation.stop_live()
        self.status.busy = False
        self.panel.working = False
        self.status.set_activity("ready")
        self.runtime.turn.files.mark_stale()  # the turn may have made or removed files
        if worker.group == "turn" and self._started and time.monotonic() - self._started > LONG_TURN:
            self._started = 0.0
            self._tell_turn_ended(worker)
        if worker is self._turn:
            self._turn = None
        if undelivered := self.runtime.turn.steering:  # sent mid-turn, but the turn ended first
            self._queued[:0], undelivered[:] = list(undelivered), []
        if self._queued:
            await self.submit(self._queued.pop(0))

    def _tell_turn_ended(self, worker: Worker[None]) -> None:
        # The app's (`TodoAgentApp.needs_person`); a test's plain app has none.
        needs_person: Callable[[str, str], None] | None = getattr(self.app, "needs_person", None)
        if needs_person is not None:
            what = "the turn failed" if worker.state == WorkerState.ERROR else "the turn is done"
            needs_person(what, "idle_prompt")

    # --- ConversationUI ---------------------------------------------------------

    async def stream_text(self, text: str) -> None:
        if self.conversation.live is None:  # once per message: per token, it re-laid out the screen
            self.status.set_activity("writing")
        self.status.text_arriving()
        await self.conversation.write_live(text)

    async def finish_message(self, text: str | None) -> None:
        live = self.conversation.live
        await self.conversation.finish_live(text if text is not None else (live.text if live else ""))

    async def discard_message(self) -> None:
        await self.conversation.drop_thought()
        await self.conversation.stop_live()

    async def stream_reasoning(self, text: str) -> None:
        await self.conversation.write_thought(text)

    async def finish_reasoning(self, seconds: float) -> None:
        await self.conversation.finish_thought(seconds)

    async def add_entry(self, entry: Entry) -> None:
        if isinstance(entry, ToolEntry):
            self.status.set_activity(
                f"running {entry.name}", timed=True
            )  # the call's own time (an MCP call can be long)
        await self.conversation.add(entry)

    async def finish_tool(self, call_id: str, name: str, output: str, status: ToolStatus, elapsed: float) -> None:
        self.status.set_activity("thinking")
        await self.conversation.finish_tool(call_id, name, output, status, elapsed)

    def tool_progress(self, call_id: str, text: str) -> None:
        self.conversation.set_progress(call_id, text)

    async def show_tasks(self, tasks: Sequence[Task]) -> None:
        # The panel draws the list as it is now, not the event's: the person may have
        # edited the plan after the core took this snapshot and before it is drawn (the
        # core runs ahead), and an older list would undo that edit on screen.
        latest = self.runtime.plan.tasks()
        await self.panel.show(latest, changes=self.runtime.plan.change_lines())
        if self.panel_place != "hidden":
            self.tasks_seen = render_tasks(latest, spend=False)
            return
        # Hidden, the list is printed: this batch's list (the core may have run ahead, and
        # the conversation tells what happened in order), and only when it reads
        # differently (a batch that only adds to a task's tool count changes nothing).
        listing = render_tasks(tasks, spend=False)
        if tasks and listing != self.tasks_seen:
            await self.conversation.add(PlainEntry(listing))
            self.tasks_seen = listing

    def show_usage(self, usage: Usage) -> None:
        # What the last response took is what the context holds now (the core counts the same).
        self.status.set_context(usage.prompt_tokens + usage.completion_tokens, self._window)
        self.status.set_usage_detail(usage_detail(usage))

    def set_activity(self, text: str, *, timed: bool = False) -> None:
        self.status.set_activity(text, timed=timed)

    async def agent_update(self, event: AgentStarted | AgentEvent | AgentFinished) -> None:
        if await self.agent_views.record(event, self):
            self._refresh_agents()

    async def _follow_shared_list(self) -> None:
        if await self.runtime.plan.refresh():
            await self.panel.show(self.runtime.plan.tasks(), changes=self.runtime.plan.change_lines())

    def _refresh_agents(self) -> None:
        """The sub-agents' live lines, their tasks' rows, and the status line, as they are now."""
        rows = self.runtime.team.rows()
        if not rows:
            return
        for call_id, line in self.agent_views.lines(rows).items():
            self.conversation.set_progress(call_id, line)
        self.panel.show_agents(rows)
        running = sum(1 for row in rows if row.phase == "running")
        if running and self.busy:
            self.status.set_activity(f"{running} sub-agent{'s' if running > 1 else ''} at work")

    def count_down(self, say: Callable[[float], str], seconds: float) -> None:
        self.status.count_down(say, seconds)

    def turn_ended(self, reason: str) -> None:
        self.status.set_activity("ready")
        prompt = self.query_one(PromptInput)
        if reason == "blocked" and not prompt.text.strip():  # not sent: the person may edit and retry
            prompt.text = self._sent
            prompt.move_cursor(prompt.document.end)

    # --- the prompt --------------------------------------------------------------

    @on(PromptInput.Submitted)
    async def _prompt_sent(self, event: PromptInput.Submitted) -> None:
        if event.now and self.busy and parse(event.text) is None and not looks_like_command(event.text):
            self.runtime.turn.steer(event.text)  # `Steered` draws it once it reaches the model
            self.notify("Sent: the model gets it with its next request in this turn.", title="todo-agent", markup=False)
            return
        await self.submit(event.text)  # a slash command, or nothing running: as enter does

    async def submit(self, text: str) -> None:
        """Run a slash command, or send `text` to the agent (queued while a turn runs).

        Only a known command runs as one. A lone `/word` that is none is a typo and is
        refused; anything else that starts with a slash (`/tmp is full`) is a prompt.
        """
        if parse(text) is not None:
            await self.conversation.add(UserEntry(text))
            await self.run_slash(text)
            return
        custom = False
        if looks_like_command(text):  # read in a thread: a command file made a moment ago counts
            custom = text.split(maxsplit=1)[0] in (await self.runtime.turn.fresh_commands()).commands
        if looks_like_command(text) and not custom:
            await self.conversation.add(UserEntry(text))
            await self.conversation.add(NoticeEntry(f"Unknown command {text.strip()}; /help lists them.", "warning"))
            return
        if self.busy:
            self._queued.append(text)
            self.notify(
                "Queued: it is sent when the current turn ends (esc interrupts).", title="todo-agent", markup=False
            )
            return
        await self.conversation.add(UserEntry(text))
        self.status.busy = True
        self.panel.working = True
        command = text.removeprefix("!").strip() if text.startswith("!") else None  # a lone `!` is a prompt
        self._turn = self.run_shell(command) if command else self.run_turn(text)

    # --- slash commands (read in slash.py; this is the screen's side, `CommandHost`) -------

    async def run_slash(self, text: str) -> None:
        await run_slash(self, text)

    async def say(self, entry: Entry) -> None:
        await self.conversation.add(entry)

    def quit(self) -> None:
        self.app.exit()

    def copy_to_clipboard(self, text: str) -> None:
        self.app.copy_to_clipboard(text)

    def in_background(self, job: Callable[[], Awaitable[None]], name: str) -> Worker[None]:
        return self.run_worker(job(), name=name, group="command", exit_on_error=False)

    def _refuse_while_busy(self, what: str) -> bool:
        if self.busy:
            self.notify(f"Cannot {what} while a turn runs; press esc first.", severity="warning", markup=False)
        return self.busy

    async def new_session(self) -> None:
        if self._refuse_while_busy("start a new session"):
            return
        self.runtime.sessions.new()
        await self._show_session()
        await self.conversation.add(NoticeEntry(f"new session {self.runtime.sessions.id}"))
        self.run_session_start("clear")
        if self.runtime.mcp.configured:  # a new session gets fresh servers (and their logs beside it)
            self._restart_mcp()

    async def start_goal(self, goal: str) -> None:
        if self._refuse_while_busy("start a goal"):
            return
        if not goal and not self.runtime.plan.tasks():
            text = "The task list is empty: /goal TEXT names the goal, and the model plans it first."
            await self.conversation.add(NoticeEntry(text, "warning"))
            return
        self.status.busy = True
        self.panel.working = True
        self._turn = self.run_goal(goal)

    def show_goal(self, progress: GoalProgress) -> None:
        self.status.set_goal(progress.label() if progress.state == "running" else "")

    def start_compact(self, focus: str) -> None:
        if self.busy:  # sub-agents may be at work for minutes: compact before the next request
            self.runtime.turn.compact_soon(focus)
            self.notify(
                "Compacts before the model's next request, once what runs now has come back.",
                title="/compact",
                markup=False,
            )
            return
        self.status.busy = True
        self._turn = self.run_compact(focus)

    def open_shells(self) -> None:
        self.app.push_screen(ShellsScreen(self.runtime.shells))

    def choose_session(self) -> None:
        if self._refuse_while_busy("switch sessions"):
            return
        current = self.runtime.sessions.id
        picker = SessionsScreen([s for s in self.runtime.sessions.saved() if s.id != current])
        self.app.push_screen(picker, callback=self._resume)

    async def _resume(self, session_id: str | None) -> None:
        if not session_id or session_id == self.runtime.sessions.id:
            return
        try:
            self.runtime.sessions.resume(session_id)
        except (SessionError, RuntimeError) as exc:
            await self.conversation.add(NoticeEntry(str(exc), "error"))
            return
        await self._show_session()
        self.run_session_start("resume")
        if self.runtime.mcp.configured:
            self._restart_mcp()

    # --- /rewind to an earlier prompt, /redo ----------------------------------------------

    def open_rewind(self) -> None:
        """`/rewind`: the prompts to go back to (`PromptsScreen`), then which files, then the rewind."""
        if self._refuse_while_busy("rewind"):
            return
        rows = self.runtime.sessions.prompts()
        if not rows:
            self.notify("No prompt to rewind to since the last compaction.", title="Rewind", markup=False)
            return
        self.app.push_screen(PromptsScreen(rows), callback=self._rewind_chosen)

    async def _rewind_chosen(self, chosen: tuple[str, Scope] | None) -> None:
        if chosen is None:
            return
        checkpoint_id, scope = chosen
        try:
            plan = await self.runtime.sessions.rewind_plan(checkpoint_id)
        except ValueError as exc:
            await self.conversation.add(NoticeEntry(str(exc), "warning"))
            return
        doubtful = [f for f in plan.files if not f.suggested and f.action != "nothing"]
        if scope == "conversation" or not doubtful:
            await self._rewind_to(plan, scope, [f.path for f in plan.files if f.suggested])
            return

        async def files_chosen(paths: list[str] | None) -> None:
            if paths is not None:
                await self._rewind_to(plan, scope, paths)

        intro = (
            "Put these files back as they were just before the prompt (a file created since is deleted). "
            "A file that cannot be put back, or was changed outside todo-agent since, is left as it is unless you "
            "choose it."
        )
        files = RewindPlan("", "", plan.files)
        screen = RewindScreen(files, title="Rewind the files to before the prompt?", intro=intro, allow_none=True)
        self.app.push_screen(screen, callback=files_chosen)

    async def _rewind_to(self, plan: PromptPlan, scope: Scope, paths: list[str]) -> None:
        try:
            outcome = await self.runtime.sessions.rewind_to(plan, scope, paths)
        except (RuntimeError, OSError, SessionError) as exc:
            await self.conversation.add(NoticeEntry(f"The rewind failed: {exc}", "error"))
            return
        await self._rewound(outcome)
        if outcome.prompt:
            prompt = self.query_one(PromptInput)
            prompt.text = outcome.prompt
            prompt.move_cursor(prompt.document.end)
            prompt.focus()

    async def redo(self) -> None:
        """`/redo`: undo the latest `/rewind`."""
        if self._refuse_while_busy("redo"):
            return
        try:
            outcome = await self.runtime.sessions.redo()
        except ValueError as exc:
            await self.conversation.add(NoticeEntry(str(exc), "warning"))
            return
        except (RuntimeError, OSError, SessionError) as exc:
            await self.conversation.add(NoticeEntry(f"The redo failed: {exc}", "error"))
            return
        await self._rewound(outcome)

    async def _rewound(self, outcome: Outcome) -> None:
        """Draw the conversation and plan again after a rewind or redo, and say what it did."""
        await self.conversation.load(
            entries_from_history(
                self.runtime.sessions.transcript,
                summarize=self.runtime.turn.summarize,
                status_of=self.runtime.sessions.tool_status,
            )
        )
        for line in outcome.lines:
            await self.conversation.add(NoticeEntry(line))
        await self.panel.show(self.runtime.plan.tasks(), changes=self.runtime.plan.change_lines())
        self.tasks_seen = render_tasks(self.runtime.plan.tasks(), spend=False)
        self._show_context_usage()

    async def cycle_mode(self) -> None:
        self.runtime.cycle_mode()
        await self.show_mode()

    def show_sandbox(self) -> None:
        self.status.set_sandbox(self.runtime.sandbox.active != "off")

    def show_shells(self) -> None:
        """The status line's count of background commands (they start and end on their own)."""
        if self.is_attached:
            self.status.set_shells(len(self.runtime.shells.running()))

    async def show_mode(self) -> None:
        self.status.mode = self.runtime.mode
        await self.conversation.add(NoticeEntry(f"permission mode: {MODE_LABELS[self.runtime.mode]}"))

    def set_effort(self, effort: str) -> None:
        self.runtime.set_effort(effort)
        self.status.set_model(self.runtime.model_label)

    def switch_model(self, spec: str) -> bool:
        if self._refuse_while_busy("switch models"):
            return False
        self.runtime.set_model(spec)
        self.status.set_model(self.runtime.model_label)
        self._ready.clear()
        self.warm_up()
        return True

    # --- the task panel ------------------------------------------------------------

    def place_panel(self, place: PanelPlace) -> None:
        """Dock the panel `right`, at the `bottom`, or hide it."""
        self.panel_place = place
        if place != "hidden":
            self._panel_shown_place = place
        for name in PANEL_PLACES:
            self.set_class(name == place, f"-panel-{name}")

    def focus_tasks(self) -> None:
        if self.panel_place == "hidden":
            self.place_panel(self._panel_shown_place)
        self.panel.list_view.focus()

    @on(TaskPanel.AddCancelled)
    def _task_add_cancelled(self) -> None:
        self.query_one(PromptInput).focus()

    # --- sub-agents ----------------------------------------------------------------------

    def _agent_of(self, task_id: str) -> str | None:
        """The sub-agent of a task: the one at work, else the latest of this run, else the
        latest attempt recorded on the task by this session."""
        rows = [row for row in self.runtime.team.rows() if row.task_id == task_id]
        running = [row for row in rows if row.phase != "done"]
        if running or rows:
            return (running or rows)[-1].agent_id
        task = self.runtime.plan.get(task_id)
        mine = [a for a in (task.attempts if task else ()) if a.session == self.runtime.sessions.id]
        return mine[-1].agent if mine else None

    @on(TaskPanel.OpenAgent)
    async def _open_agent(self, event: TaskPanel.OpenAgent) -> None:
        agent_id = self._agent_of(event.task_id)
        if agent_id is None:
            self.notify(f"No sub-agent has worked on #{event.task_id}.", title="Agents", markup=False)
            return
        await self.show_agent(agent_id, event.task_id)

    async def show_agent(self, agent_id: str, task_id: str | None = None) -> None:
        """Show a sub-agent's transcript where the conversation is (live while it runs)."""
        await self.close_agent_view()
        view = self.agent_view
        transcript = self.agent_views.transcripts.get(agent_id)
        if transcript is None:
            saved = self.runtime.team.transcript(agent_id)
            if saved is None:
                self.notify(f"{agent_id} left no transcript.", title="Agents", severity="warning", markup=False)
                return
            transcript = AgentTranscript(agent_id)
            transcript.entries = entries_from_history(saved, summarize=self.runtime.turn.summarize)
        self.viewing, self._viewed = agent_id, transcript
        where = f" · #{task_id}" if task_id else ""
        title = self.query_one("#agent-view-title", Static)
        live = any(row.agent_id == agent_id and row.phase != "done" for row in self.runtime.team.rows())
        how = "its own transcript, live" if live else "its own transcript"
        title.update(f"◇ {agent_id}{where}: {how} (esc: back to the conversation)")
        title.display = True
        self.conversation.display = False
        view.display = True
        await transcript.attach(view)

    async def close_agent_view(self) -> None:
        """Back to the main conversation."""
        if self._viewed is not None:
            self._viewed.detach()
        self.viewing, self._viewed = None, None
        if self.is_mounted:
            self.query_one("#agent-view-title").display = False
            self.agent_view.display = False
            self.conversation.display = True
            await self.agent_view.clear()

    @on(TaskPanel.StopAgent)
    def _stop_agent(self, event: TaskPanel.StopAgent) -> None:
        running = [r for r in self.runtime.team.rows() if r.task_id == event.task_id and r.phase != "done"]
        if not running or not self.runtime.team.stop(running[-1].agent_id):
            self.notify(f"No sub-agent is at work on #{event.task_id}.", title="Agents", markup=False)
            return
        self.notify(
            f"Stopping {running[-1].agent_id} (#{event.task_id}); the others go on.", title="Agents", markup=False
        )

    # --- key actions -------------------------------------------------------------

    def action_interrupt(self) -> None:
        """Escape: back to the prompt from anywhere else; from the prompt, stop the turn."""
        prompt = self.query_one(PromptInput)
        suggestions = self.query_one(Suggestions)
        if self.viewing is not None:  # back from a sub-agent's transcript first
            self.run_worker(self.close_agent_view(), exit_on_error=False)
            self.panel.close_add()
            prompt.focus()
        elif not prompt.has_focus:  # e.g. in the task panel: leaving it must not stop the turn
            self.panel.close_add()
            prompt.focus()
        elif suggestions.display:  # the least a person can mean: close the list
            suggestions.display = False
        elif not self.busy and not prompt.text.strip():
            now = time.monotonic()
            if now - self._escaped <= DOUBLE_ESCAPE:
                self._escaped = 0.0
                self.open_rewind()
            else:
                self._escaped = now
        else:
            self.interrupt()

    def interrupt(self) -> None:
        """Stop the running turn, if one runs (the command palette's "Interrupt")."""
        if self.busy:
            self.status.set_activity("interrupting")
            if not self.runtime.turn.interrupt() and self._turn is not None:
                self._turn.cancel()

    def action_toggle_tasks(self) -> None:
        if self.panel_place == "hidden":
            self.place_panel(self._panel_shown_place)
        else:
            self.place_panel("hidden")
        if not self.panel.tasks:
            self.notify(
                "No tasks yet. The model adds them for multi-step work.", title="Tasks", timeout=3, markup=False
            )

    async def action_cycle_mode(self) -> None:
        await self.cycle_mode()

    def action_scroll_conversation(self, direction: int) -> None:
        conversation = self.conversation
        if direction < 0:
            conversation.release_anchor()  # reading back: stop following new output
            conversation.scroll_page_up()
        else:
            conversation.scroll_page_down()

    async def action_toggle_output(self) -> None:
        await self.conversation.toggle_last_output()
