"""One ACP session: a `Runtime` for the client's `cwd`, its turns shown as session updates,
its approvals and trust questions asked as `session/request_permission`.

The runtime is driven through its face alone (`Runtime.FACE`, `core/face/`), as the TUI's
screens drive theirs. A turn is pumped in a task of its own (`core/engine/pump.py`), so
`session/cancel` (`runtime.turn.interrupt`, what esc does) lands in the core's awaits and
never half-way through sending an update.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    PermissionOption,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    ToolCallProgress,
    ToolCallUpdate,
    UnstructuredCommandInput,
    UsageUpdate,
)

from todo_agent.core.engine.pump import turn_events
from todo_agent.core.events import (
    AgentEvent,
    AgentFinished,
    AgentStarted,
    AssistantMessage,
    Compacted,
    Event,
    TasksUpdated,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEnd,
)
from todo_agent.core.export.markdown import fence
from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest, PermissionMode
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import EFFORTS
from todo_agent.core.tasks.render import render_tasks
from todo_agent.core.window.breakdown import render_breakdown

from . import trust, updates

log = logging.getLogger(__name__)

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
STOP_REASONS: dict[str, StopReason] = {
    "interrupted": "cancelled",
    "max_turns": "max_turn_requests",
    "length": "max_tokens",
}
MODES: dict[PermissionMode, tuple[str, str]] = {
    "default": ("Default", "Ask before edits, commands and anything outside the workspace"),
    "acceptEdits": ("Accept edits", "Edits in the workspace run unasked; commands still ask"),
    "plan": ("Plan", "Read and plan only: no edits, no commands"),
    "bypassPermissions": ("Bypass permissions", "Nothing asks (the deny rules still hold)"),
}
BUILT_IN: tuple[tuple[str, str, str], ...] = (
    ("compact", "Summarise the older conversation to free the context window", "what to keep in focus"),
    ("context", "What the next request holds, by part", ""),
    ("todos", "The task list, with what each task changed and the plan's share of the tokens", ""),
    ("goal", "Work until every task is completed and every check passes (or a goal budget ends it)", "the goal"),
)
ConfigOption = SessionConfigOptionSelect | SessionConfigOptionBoolean
MAX_MODELS = 50
"""Models an editor's picker offers (the server may list hundreds)."""
AGENT_LINES = 12
"""Lines of a sub-agent's work its `Agent` call shows (the latest)."""


class AcpSession:
    def __init__(self, runtime: Runtime, conn: Client, *, started_in_bypass: bool) -> None:
        self.runtime = runtime
        self.conn = conn
        self.id = runtime.sessions.id
        self.workspace = runtime.config.workspace
        self.started_in_bypass = started_in_bypass
        self.trust_asked = False
        self.running: asyncio.Task[Any] | None = None
        self._shown: dict[str, list[Any]] = {}
        """Call id → what its `tool_call` showed (its diff), kept under its output at the end."""
        self._printed: dict[str, str] = {}
        """Call id → what a running command printed so far (its tail), shown live."""
        self._agents: dict[str, _AgentView] = {}
        """Call id of an `Agent` call → its sub-agent's live lines."""
        self._usage_sent: tuple[int, int] | None = None
        self._plan_sent: Any = None
        self._cancelled = False
        """`session/cancel` came for the running prompt."""

    # --- what the client is told -------------------------------------------------------------

    async def send(self, update: Any) -> None:
        await self.conn.session_update(session_id=self.id, update=update)

    def modes(self) -> SessionModeState:
        offered = [m for m in MODES if m != "bypassPermissions" or self.started_in_bypass]
        return SessionModeState(
            current_mode_id=self.runtime.mode,
            available_modes=[SessionMode(id=m, name=MODES[m][0], description=MODES[m][1]) for m in offered],
        )

    async def set_mode(self, mode_id: str) -> None:
        if mode_id not in MODES or (mode_id == "bypassPermissions" and not self.started_in_bypass):
            raise RequestError.invalid_params({"modeId": f"not a mode this session offers: {mode_id[:80]!r}"})
        self.runtime.set_mode(mode_id)
        await self.send(CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id))

    def config_options(self) -> list[ConfigOption]:
        """What an editor offers as pickers: the model (the one in use and those the server
        lists) and the reasoning effort ("default": the server's own)."""
        runtime = self.runtime
        models = list(dict.fromkeys([runtime.model_name, *runtime.offered_models]))[:MAX_MODELS]
        effort = runtime.reasoning_effort or "default"
        return [
            SessionConfigOptionSelect(
                type="select",
                id="model",
                name="Model",
                category="model",
                current_value=runtime.model_name,
                options=[SessionConfigSelectOption(value=m, name=m) for m in models],
            ),
            SessionConfigOptionSelect(
                type="select",
                id="reasoning_effort",
                name="Reasoning effort",
                category="thought_level",
                current_value=effort,
                options=[SessionConfigSelectOption(value=e, name=e) for e in ("default", *EFFORTS)],
            ),
        ]

    async def set_config(self, config_id: str, value: object) -> list[ConfigOption]:
        """`session/set_config_option`: the model or the effort from the next request on."""
        if self.running is not None:
            raise RequestError.invalid_request({"reason": "the model changes between prompts, not during one"})
        runtime = self.runtime
        if config_id == "model" and isinstance(value, str) and value.strip() and len(value) <= 200:
            if value.startswith("script:") and not runtime.model_name.startswith("script:"):
                raise RequestError.invalid_params(
                    {"value": "a script model is chosen with --model, not from the editor"}
                )
            runtime.set_model(value.strip())
        elif config_id == "reasoning_effort" and value in ("default", *EFFORTS):
            runtime.set_effort("" if value == "default" else str(value))
        else:
            raise RequestError.invalid_params({"configId": f"no option {config_id[:40]!r} takes {str(value)[:40]!r}"})
        options = self.config_options()
        await self.send(ConfigOptionUpdate(session_update="config_option_update", config_options=options))
        return options

    async def announce(self) -> None:
        """What a client shows before the first prompt: what went wrong starting (a setting
        refused, a server's problem), the commands, the plan, the usage."""
        runtime = self.runtime
        warnings = [n.text for n in (*runtime.startup_notices(), *runtime.server_notices) if n.level != "info"]
        if warnings:
            await self.send(updates.message("".join(f"⚠ {text}\n\n" for text in warnings)))
        await self.send_commands()
        if self.runtime.plan.tasks():
            await self.send_plan(again=True)
        await self.send_usage()

    async def send_commands(self) -> None:
        commands = [
            AvailableCommand(
                name=name,
                description=about,
                input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None,
            )
            for name, about, hint in BUILT_IN
        ]
        for command in self.runtime.turn.commands().commands.values():
            about = command.description or f"from {command.label}"
            hint = command.argument_hint
            commands.append(
                AvailableCommand(
                    name=command.name.removeprefix("/"),
                    description=about[:300],
                    input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint[:200])) if hint else None,
                )
            )
        await self.send(
            AvailableCommandsUpdate(session_update="available_commands_update", available_commands=commands)
        )

    async def send_usage(self) -> None:
        used, window = self.runtime.turn.context_usage()
        if window and (used, window) != self._usage_sent:
            self._usage_sent = used, window
            await self.send(UsageUpdate(session_update="usage_update", used=used, size=window))

    async def send_plan(self, *, again: bool = False) -> None:
        """The whole list, when it differs from the last one sent (a sub-agent's task calls
        that change nothing an entry shows are not news); `again`: whatever was sent."""
        plan = updates.plan_update(self.runtime.plan.tasks())
        if again or plan != self._plan_sent:
            self._plan_sent = plan
            await self.send(plan)

    async def replay(self) -> None:
        """`session/load`: the saved conversation as updates, then the plan."""
        runtime = self.runtime
        replayed = await asyncio.to_thread(
            updates.replay, runtime.sessions.transcript, runtime.sessions.tool_status, self.workspace
        )
        for update in replayed:
            await self.send(update)
        await self.announce()

    # --- a prompt ----------------------------------------------------------------------------

    async def prompt(self, text: str) -> StopReason:
        if self.running is not None and not self.running.done():
            raise RequestError.invalid_request({"reason": "a prompt is already running in this session"})
        self.running = asyncio.current_task()
        self._cancelled = False
        try:
            await self.ask_trust()
            if self._cancelled:  # cancelled while a trust question was open
                return "cancelled"
            word, _, rest = text.strip().partition(" ")
            if word in ("/context", "/todos"):
                await self.send(updates.message(self._report(word)))
                return "end_turn"
            if word == "/compact":
                return await self._run(lambda: self.runtime.turn.compact(rest.strip()))
            if word == "/goal":
                return await self._run(lambda: self.runtime.turn.run_goal(rest.strip()))
            return await self._run(lambda: self.runtime.turn.run(text))
        finally:
            self.running = None

    def _report(self, word: str) -> str:
        runtime = self.runtime
        if word == "/context":
            return fence(render_breakdown(runtime.turn.context_breakdown(), runtime.plan.spend()))
        listing = render_tasks(runtime.plan.tasks(), runtime.plan.task_files()) or "No tasks."
        return fence(f"{listing}\n{runtime.plan.spend().line()}")

    async def _run(self, start: Callable[[], AsyncIterator[Event]]) -> StopReason:
        reason: StopReason = "end_turn"
        async for event in turn_events(start):
            if self._cancelled and not isinstance(event, TurnEnd):
                self.runtime.turn.interrupt()  # a cancel that came before the turn had begun
            if isinstance(event, TurnEnd):
                reason = STOP_REASONS.get(event.reason, "end_turn")
            try:
                await self.show(event)
            except Exception:  # the client went away or refused an update: the turn goes on, saved
                log.exception("could not send an update for %s", type(event).__name__)
        await self.send_usage()
        return reason

    def cancel(self) -> None:
        """`session/cancel`: exactly what esc does (the running command's group is killed).
        Before the turn has begun (a trust question open, the turn starting), it ends as
        soon as it can."""
        self._cancelled = self.running is not None
        self.runtime.turn.interrupt()

    # --- events --------------------------------------------------------------------------------

    async def show(self, event: Event) -> None:
        if (said := updates.said(event)) is not None:
            await self.send(said)
        match event:
            case ToolStarted():
                meta = self._call_meta(event.call_id)
                start = await asyncio.to_thread(updates.started, event, self.workspace, meta)
                self._shown[event.call_id] = list(start.content or [])
                await self.send(start)
            case ToolOutput(call_id=call_id, text=text):
                printed = self._printed.get(call_id, "") + text
                self._printed[call_id] = printed[-updates.OUTPUT_LIMIT :]
                await self.send(updates.running(call_id, self._shown.get(call_id, []), self._printed[call_id]))
            case ToolFinished():
                self._printed.pop(event.call_id, None)
                shown = [c for c in self._shown.pop(event.call_id, []) if c.type == "diff"]
                view = self._agents.pop(event.call_id, None)
                if view is not None:
                    shown = [updates.text_content(view.text())]
                await self.send(updates.finished(event, shown))
            case TasksUpdated():
                await self.send_plan()
            case AgentStarted() | AgentEvent() | AgentFinished():
                await self._show_agent(event)
            case AssistantMessage() | Compacted() | TurnEnd():
                await self.send_usage()
            case _:
                pass

    def _call_meta(self, call_id: str) -> dict[str, Any] | None:
        view = self._agents.get(call_id)
        return {updates.META: view.meta()} if view is not None else None

    async def _show_agent(self, event: AgentStarted | AgentEvent | AgentFinished) -> None:
        """A sub-agent's work as its `Agent` call's content, live, with its task and owner in
        `_meta`. The seam for ACP's child sessions (a session per sub-agent, bound to its task,
        cancelled alone): they take this place once an SDK release has their types."""
        view = self._agents.setdefault(event.call_id, _AgentView())
        if isinstance(event, AgentEvent) and isinstance(event.event, TasksUpdated):
            await self.send_plan()
        if not view.take(event, self.runtime):
            return
        await self.send(
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=event.call_id,
                status="in_progress",
                content=[updates.text_content(view.text())],
                field_meta={updates.META: view.meta()},
            )
        )

    # --- asking the person ----------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """The gate's question as `session/request_permission`: the call as a tool call (its
        diff or command), allow once / always (the rule, named) / reject once / always."""
        call_id = request.call_id or f"approval-{id(request)}"
        # A command is named by itself (the TUI shows the model's description beside it).
        named = request.preview if request.tool == "Bash" and request.preview else request.summary
        title = updates.title_of(request.tool, named)
        if request.agent:
            title = f"{request.agent} · {title}"
        content = await asyncio.to_thread(updates.call_content, request.tool, request.arguments, self.workspace)
        if not content and request.preview:
            content = [updates.text_content(fence(request.preview))]
        content.append(updates.text_content(f"Asks because {request.reason}."))
        options = [PermissionOption(option_id="yes", name="Allow once", kind="allow_once")]
        if request.suggested_rule and not request.remembered_for:
            options.append(
                PermissionOption(
                    option_id="always", name=f"Allow always ({request.suggested_rule})", kind="allow_always"
                )
            )
        elif request.remembered_for:
            options.append(
                PermissionOption(
                    option_id="always", name=f"Allow this version of {request.remembered_for}", kind="allow_always"
                )
            )
        options.append(PermissionOption(option_id="no", name="Reject", kind="reject_once"))
        if request.suggested_rule and not request.remembered_for:
            options.append(
                PermissionOption(
                    option_id="never", name=f"Reject always ({request.suggested_rule})", kind="reject_always"
                )
            )
        tool_call = ToolCallUpdate(
            tool_call_id=call_id,
            title=title,
            kind=updates.kind_of(request.tool),
            status="pending",
            content=content,
            locations=updates.locations(request.arguments, self.workspace) or None,
            raw_input=request.arguments,
        )
        chosen = await self._ask(tool_call, options)
        decision = {"yes": "yes", "always": "always", "never": "never"}.get(chosen or "", "no")
        return ApprovalAnswer(decision)  # type: ignore[arg-type]

    async def _ask(self, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str | None:
        """The option the client chose; None when it cancelled (or could not be asked)."""
        try:
            answer = await self.conn.request_permission(session_id=self.id, tool_call=tool_call, options=options)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the permission request failed")
            return None
        outcome = answer.outcome
        return outcome.option_id if isinstance(outcome, AllowedOutcome) else None

    async def ask_trust(self) -> None:
        """Before the first prompt: the project's hooks and MCP servers, every byte shown; a
        client that cancels leaves them untrusted (asked again next session)."""
        if self.trust_asked:
            return
        self.trust_asked = True
        runtime = self.runtime
        if hooks := runtime.trust.untrusted_hooks:
            chosen = await self._question(
                "trust-hooks",
                "Run this project's hooks?",
                trust.hooks_text(hooks, runtime.trust.settings_path, runtime.trust.hook_lines),
                [("yes", "Run them (remembered until they change)", "allow_always"), ("no", "Not now", "reject_once")],
            )
            if chosen == "yes":
                try:
                    runtime.trust.accept_hooks()
                except OSError as exc:
                    await self.send(updates.message(f"⚠ the hooks run, but their acceptance was not saved: {exc}\n\n"))
        if servers := runtime.mcp.untrusted():
            chosen = await self._question(
                "trust-mcp",
                "Start this project's MCP servers?",
                trust.servers_text([s.spec for s in servers]),
                [
                    ("once", "Start them this session", "allow_once"),
                    ("always", "Start them (remembered until they change)", "allow_always"),
                    ("no", "Not now", "reject_once"),
                ],
            )
            if chosen in ("once", "always"):
                if warning := runtime.mcp.accept(servers, remember=chosen == "always"):
                    await self.send(updates.message(f"⚠ {warning}\n\n"))
            else:
                runtime.mcp.decline(servers)
        if runtime.mcp.configured:  # the first prompt's request offers their tools, as headless does
            for server in await runtime.mcp.connect():
                if server.state == "failed":
                    await self.send(updates.message(f"⚠ MCP server {server.name} failed: {server.reason}\n\n"))

    async def _question(self, call_id: str, title: str, text: str, options: list[tuple[str, str, str]]) -> str | None:
        """A trust question: what the project would run, and (id, name, kind) options."""
        return await self._ask(
            ToolCallUpdate(
                tool_call_id=call_id,
                title=title,
                kind="execute",
                status="pending",
                content=[updates.text_content(text)],
            ),
            [PermissionOption(option_id=i, name=name, kind=kind) for i, name, kind in options],  # type: ignore[arg-type]
        )


class _AgentView:
    """A sub-agent's latest lines (its start, each call and its end), for its `Agent` call."""

    def __init__(self) -> None:
        self.agent_id = ""
        self.agent_type = ""
        self.task_id: str | None = None
        self.phase = "waiting"
        self.lines: list[str] = []

    def take(self, event: AgentStarted | AgentEvent | AgentFinished, runtime: Runtime) -> bool:
        """Whether `event` changed what is shown."""
        if isinstance(event, AgentStarted):
            self.agent_id, self.agent_type, self.task_id = event.agent_id, event.agent_type, event.task_id
            self.phase = "waiting" if event.waiting else "running"
            task = runtime.plan.get(event.task_id) if event.task_id else None
            bound = f" on #{task.id} {task.subject}" if task is not None else ""
            self._add(f"{event.agent_id}{bound}: {'waiting for a slot' if event.waiting else 'started'}")
            return True
        if isinstance(event, AgentFinished):
            self.phase = "done"
            self._add(f"{event.agent_id} {event.status}: {event.reason} · {event.tools} tools · {event.turns} requests")
            return True
        inner = event.event
        if isinstance(inner, ToolStarted):
            self._add(f"⏺ {updates.title_of(inner.name, inner.summary)}")
            return True
        if isinstance(inner, ToolFinished) and inner.status != "ok":
            self._add(f"  ⎿ {inner.status}")
            return True
        if isinstance(inner, AssistantMessage) and inner.content.strip():
            self._add("  " + " ".join(inner.content.split())[:200])
            return True
        return False

    def _add(self, line: str) -> None:
        self.lines = [*self.lines, line][-AGENT_LINES:]

    def text(self) -> str:
        return fence("\n".join(self.lines))

    def meta(self) -> dict[str, Any]:
        return {"agentId": self.agent_id, "agentType": self.agent_type, "taskId": self.task_id, "owner": self.agent_id,
                "phase": self.phase}  # fmt: skip
