"""Composition of one running agent: config, session, task store, tools, agent.

Both front ends (the TUI and headless `-p`) build a `Runtime` and drive it through its
methods (`run_turn`, `interrupt`, `set_mode`, `new_session`, `resume`, …), never through
the agent or the policy it holds. The one collaborator they use directly is the task
store's `user_*` API: the person's edits of the plan.
Creating a runtime is fast and never imports `openai`: the model client is built on
first use (or by `warm_up()`, which the TUI runs in a thread after its first frame).
`warm_up()` first asks a configured server about itself (`core/model/server.py`): its
context window, when no `context_window` is set, and its model, when none was chosen.

Sub-agents (`core/agents/`): the agent types are read once (built-ins and agent files),
the `Agent` tool joins the tools, and each session gets a `Team` that runs the sub-agents
its `Agent` calls start (rebuilt with the agent on `/new` and resume). Opening a session's
task list gives back the claims of sub-agents whose process died. With `--task-list NAME`
the session works a shared list instead of its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import glob
import importlib
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Collection, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .agents.definitions import AgentType, load_types
from .agents.notes import team_note_provider
from .agents.recovery import release_dead_claims
from .agents.state import AgentRow
from .agents.team import Parent, Team, TeamSettings
from .agents.tool import agent_tool
from .changes import rewind
from .changes.checkpoint import Checkpoints
from .changes.log import ChangeLog
from .changes.prompt_rewind import Outcome, PromptPlan, PromptRewinds, Scope
from .changes.recorder import attribution_observer, change_observers
from .engine.instructions import build_system_context, describe_loaded
from .engine.loop import Agent, AgentOptions
from .events import Event, Notice
from .goal import GoalLimits, GoalRun
from .hooks.code import HookCode
from .hooks.runner import HookRunner, hook_environment
from .hooks.spec import HookSpec
from .hooks.trust import is_trusted, trust
from .hooks.wiring import NotificationKind, SessionSource, ShellHooks
from .input.custom_commands import CommandSet, CustomCommand, default_sources, load_commands, without
from .input.file_index import FileIndex
from .input.mentions import OPEN as ATTACHMENTS_OPEN
from .input.mentions import Attacher
from .input.prepare import InputPreparer
from .lifecycle import BeforeRequest, Lifecycle
from .mcp.manager import McpManager
from .mcp.names import server_of
from .mcp.results import results_dir
from .mcp.server import McpServer
from .mcp.tools import SCHEMA_SHARE, ToolSet
from .model.base import ChatModel, LearnsServer, Message, ScriptsAgents, StreamItem, WireOptions
from .model.openai_types import defer_openai_types
from .model.scripted import ScriptedModel
from .model.server import ServerInfo, probe
from .permissions.modes import Approver, PermissionMode
from .permissions.policy import PermissionPolicy
from .permissions.rules import Rule
from .places import data_root
from .sandbox import Sandbox, literal_read_denials
from .session.directory import SessionError, SessionInfo, find_session, latest_session, list_sessions, task_list_path
from .session.transcript import CompactionMark, Session, TranscriptItem
from .settings import Config, project_settings_path, user_settings_path
from .tasks.model import Task
from .tasks.reminders import Work, task_reminder_provider, unfinished_stop_check, work_observer
from .tasks.store import TaskStore
from .terminal import reveal_line
from .tools import bash, files, fs, search, shells, web_fetch
from .tools.base import Tool
from .tools.context import HIDDEN_ENV
from .tools.images import images_provider
from .tools.shells import Shells
from .tools.task_checks import stop_left_running
from .tools.tasks import SYSTEM_PROMPT_LINE_V1, SYSTEM_PROMPT_LINE_V2, TASK_TOOLS_V1, TASK_TOOLS_V2
from .window.breakdown import Breakdown, Shape, Spend, breakdown
from .window.tokens import (
    DEFAULT_WINDOW,
    OPENAI_DEFAULT_WINDOW,
    ContextBudget,
    TokenCounter,
    WindowSource,
    unbelievable_window,
)


def create_model(
    spec: str,
    *,
    base_url: str | None,
    api_key: str | None,
    script_dir: Path | None = None,
    wire: WireOptions | None = None,
) -> ChatModel:
    """Build the model named by `spec`: `script:PATH` or a model name for the OpenAI API
    (chat completions, or the Responses API when `wire.wire_api` says so)."""
    if spec.startswith("script:"):
        path = Path(spec.removeprefix("script:")).expanduser()
        if not path.is_absolute() and script_dir is not None:
            path = script_dir / path
        return ScriptedModel.from_file(path)
    wire = wire or WireOptions()
    defer_openai_types()
    from .model.openai_chat import OpenAIChatModel

    kind = OpenAIChatModel
    if wire.wire_api == "responses":
        from .model.openai_responses import OpenAIResponsesModel

        kind = OpenAIResponsesModel
    return kind(
        model=spec,
        base_url=base_url,
        api_key=api_key,
        first_byte_timeout=wire.first_byte_timeout,
        reasoning_field=wire.reasoning_field,
        reasoning_effort=wire.reasoning_effort,
        wire_api=wire.wire_api,
    )


def wire_options(config: Config) -> WireOptions:
    return WireOptions(
        first_byte_timeout=config.first_byte_timeout,
        reasoning_field=config.reasoning_field,
        reasoning_effort=config.reasoning_effort,
        wire_api=config.wire_api,
    )


COMMANDS_MAX_AGE = 1.0
"""Seconds a reading of the custom commands' files is used before it is renewed."""


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


STREAM_SLICE = 0.008
"""Seconds of a streamed response's parsing after which the event loop gets a turn."""
STREAM_REST = 0.002
"""How long that turn lasts at least: when nothing else waits, the process rests (the
interpreter lock free for the terminal's input and output threads)."""


@dataclass
class LazyModel:
    """Builds the real model client on first use, keeping `import openai` off start-up."""

    config: Config
    _model: ChatModel | None = field(default=None, repr=False)
    facts: dict[str, Any] = field(default_factory=dict)
    """What an earlier run learned of the server (the session file): given to the client when built."""
    effort: str | None = None
    """The effort `/effort` chose; None: the settings' (`reasoning_effort`)."""

    @property
    def name(self) -> str:
        spec = self.config.model
        if spec.startswith("script:"):  # the script's path is noise in a status line
            return "script:" + Path(spec.removeprefix("script:")).name
        return spec

    def load_client(self) -> None:
        """Import the client's code (the CPU-heavy part of `get`) without building it yet."""
        if not self.config.model.startswith("script:"):
            defer_openai_types()
            importlib.import_module(f"{__package__}.model.openai_chat")

    def get(self) -> ChatModel:
        if self._model is None:
            self._model = create_model(
                self.config.model,
                base_url=self.config.base_url,
                api_key=self.config.api_key,
                script_dir=Path.cwd(),
                wire=replace(wire_options(self.config), reasoning_effort=self.reasoning_effort),
            )
            client: object = self._model
            if isinstance(client, LearnsServer) and self.facts:
                client.learn(self.facts)
        return self._model

    @property
    def reasoning_effort(self) -> str:
        return self.config.reasoning_effort if self.effort is None else self.effort

    def learned(self) -> dict[str, Any]:
        client: object = self._model
        return client.learned() if isinstance(client, LearnsServer) else {}

    def set_effort(self, effort: str) -> None:
        """The reasoning effort from now on (`/effort`); the client is told when it exists."""
        client: object = self._model  # a script's model does not learn
        self.effort = effort
        if isinstance(client, LearnsServer):
            client.set_effort(effort)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        # The client parses whatever the socket holds without pausing: after a burst
        # (a fast local server), hundreds of chunks in one go, with keys and the screen
        # waiting. Pausing every `STREAM_SLICE` seconds lets the event loop serve them between.
        paused = time.monotonic()
        async for item in self.get().stream(messages, tools, max_tokens=max_tokens):
            yield item
            if time.monotonic() - paused > STREAM_SLICE:
                await asyncio.sleep(STREAM_REST)
                paused = time.monotonic()


def _is_attachment(message: Message) -> bool:
    """`@` files (`core/input/mentions.py`) or images (an MCP tool's, after its results)."""
    content = message.get("content")
    return isinstance(content, list) or (isinstance(content, str) and content.startswith(ATTACHMENTS_OPEN + "\n"))


def build_tools(tasks_version: str) -> list[Tool]:
    task_tools = {"v1": TASK_TOOLS_V1, "off": []}.get(tasks_version, TASK_TOOLS_V2)
    return [*files.TOOLS, *bash.TOOLS, *shells.TOOLS, *search.TOOLS, *web_fetch.TOOLS, *task_tools]


NO_TOOLS_TEMPLATE = (
    "this server's chat template cannot call tools; start llama-server with --jinja and a tool-capable template"
)


def initial_budget(config: Config) -> ContextBudget:
    """The window from the settings, else a default until the server says (`warm_up`)."""
    source: WindowSource = "setting" if config.context_window else "default"
    window = config.context_window or (DEFAULT_WINDOW if config.base_url else OPENAI_DEFAULT_WINDOW)
    return ContextBudget(
        window=window, source=source, threshold=config.compact_threshold, max_output=config.max_output_tokens
    )


class Runtime:
    def __init__(self, config: Config, session: Session, approver: Approver | None, model: LazyModel) -> None:
        fs.sweep_unfinished_writes()  # temporary files of Writes a kill -9 cut short
        self.config = config
        self.approver = approver
        self.model = model
        self.budget = initial_budget(config)
        self.counter = TokenCounter()
        self.server: ServerInfo | None = None
        self.server_notices: list[Notice] = []
        self.goal: GoalRun | None = None
        """The goal of `/goal` or `--goal`, the latest one (`goal.over` once it ended)."""
        """What `warm_up()` learnt that the person should know (shown once, after it)."""
        self._warming = threading.Lock()
        self._results_rule: Rule | None = None
        self.agent_types, self.agent_warnings = load_types(config.workspace, user_settings_path().parent, Path.home())
        builtin = [
            *build_tools(config.tasks_version),
            agent_tool(
                lambda: self.team,
                self.agent_types,
                parallel=config.max_parallel_agents,
                max_turns=config.agent_max_turns,
            ),
        ]
        self.permissions = PermissionPolicy.from_strings(
            config.workspace, config.permission_mode, config.allow, config.deny, builtin
        )
        task_line = {"v1": SYSTEM_PROMPT_LINE_V1, "off": ""}.get(config.tasks_version, SYSTEM_PROMPT_LINE_V2)
        self.system = build_system_context(config.workspace, task_line)
        self.plan_line = task_line
        self.shells = Shells(record=session.note)
        """The session's background commands (`core/tools/shells.py`); a new one per session."""
        self.shells.continue_from(session.shells)
        self.session = session
        # The API key variables stay out of every command's environment (and every MCP server's).
        self.hidden_env = frozenset({*HIDDEN_ENV, config.api_key_env})
        self.sandbox = Sandbox(
            config.workspace,
            config.sandbox,
            hidden=(data_root(), *literal_read_denials(config.deny, config.workspace)),
        )
        """Where the model's commands run (`core/sandbox.py`); `/sandbox` changes its mode."""
        self.permissions.sandboxed = lambda: self.sandbox.allows_unasked
        self.sandbox.trusted_code = lambda: tuple(self.permissions.protected_code)
        self.permissions.sandbox_on = lambda: self.sandbox.active != "off"
        self.permissions.allow_unsandboxed = config.sandbox.allow_unsandboxed
        self.mcp = McpManager(
            config.mcp_servers,
            workspace=config.workspace,
            hidden_env=self.hidden_env,
            log_dir=self._mcp_log_dir(),
            allow_project=config.allow_project_mcp,
            images=config.images,
        )
        self.tools = ToolSet(
            builtin,
            self.mcp,
            schema_room=lambda: self.budget.window * SCHEMA_SHARE * self.counter.chars_per_token,
            hidden=self.permissions.hides,
        )
        self._open_task_files()
        self.hook_code = HookCode(config.hooks, config.workspace)
        self.hooks = ShellHooks(
            HookRunner(
                self._hook_specs(),
                config.workspace,
                env=hook_environment(config.workspace, [config.api_key_env]),
                common=self._hook_fields,
                vet=self.hook_code.vetter(lambda: self.config.allow_project_hooks, self._stop_project_hooks),
            )
        )
        self.mcp.listeners.append(lambda server: self._protect_trusted_code())
        self._protect_trusted_code()
        self.reserved_commands: frozenset[str] = frozenset()
        """Names the front end's own slash commands use: a custom command of that name loses."""
        self._renewing = threading.Lock()
        self._commands = self._read_commands()
        """When the custom commands' files were read, and what they held (`custom_commands`)."""
        self.file_index = FileIndex(config.workspace, hidden=self.permissions.read_denied)
        """The workspace's files for `@` completion; built when first refreshed."""
        self.agent = self._make_agent()

    def _allow_reading_results(self) -> None:
        """The whole text of a cut MCP result is kept beside the session for the model to
        Read (`core/mcp/results.py`): reading there is allowed, as reading the project is."""
        if self._results_rule is not None and self._results_rule in self.permissions.allow:
            self.permissions.allow.remove(self._results_rule)
        directory = results_dir(self.session.path, self.session.id)
        self._results_rule = Rule.parse(f"Read({glob.escape(directory.as_posix())}/**)")
        self.permissions.allow.append(self._results_rule)

    def _mcp_log_dir(self) -> Path:
        """Where the MCP servers' stderr logs go: beside the session."""
        return self.session.path.with_name(f"{self.session.id}.mcp")

    # --- MCP servers ---------------------------------------------------------------------

    def start_mcp(self) -> None:
        """Connect the configured MCP servers in the background (on the running loop);
        returns at once. Project servers the person has not accepted wait."""
        self.mcp.start()

    async def connect_mcp(self) -> list[McpServer]:
        """Headless: start the servers and wait for them, at most their `startup_timeout_sec`;
        returns those that are not up (failed, or project servers not accepted)."""
        self.mcp.start()
        await self.mcp.wait_settled(self.mcp.startup_limit())
        return [s for s in self.mcp.servers if s.state not in ("connected", "disabled")]

    async def stop_mcp(self) -> None:
        """Stop every MCP server and its process group."""
        await self.mcp.stop()

    async def stop_background(self) -> None:
        """Quit, the end of `-p`: every background command and MCP server stops, with
        everything it started."""
        await asyncio.gather(self.shells.stop_all(), self.mcp.stop())

    async def restart_mcp(self) -> None:
        """A new or resumed session: the servers start again, logging beside it."""
        self.mcp.set_log_dir(self._mcp_log_dir())
        await self.mcp.restart_all()

    def mcp_report(self) -> list[dict[str, Any]]:
        """Each server for JSON output: name, where it came from, state, why, tool count."""
        return [
            {"name": s.name, "source": s.spec.source, "state": s.state, "reason": s.reason, "tools": len(s.tools)}
            for s in self.mcp.servers
        ]

    def _open_task_files(self) -> None:
        """The session's task list (or the shared one) and record of changes, finishing an
        interrupted rewind and giving back the claims of sub-agents whose process died."""
        shared = self.config.task_list
        # A session's own list is written by that session alone: its subtasks tagged with a
        # bare name (lists written before sessions were kept) are its own.
        home = None if shared else self.session.id
        self.store = TaskStore.load(task_list_path(shared) if shared else self.session.tasks_path, home=home)
        if self.mcp.configured:
            self._allow_reading_results()
        self.changes = ChangeLog.for_session(self.session.path, self.config.workspace)
        self.recovered = rewind.recover(self.changes, self.store)
        self.prompts = PromptRewinds(
            self.changes,
            Checkpoints.for_session(self.session.path, self.changes),
            self.store,
            self.session,
            epoch=lambda: sum(isinstance(item, CompactionMark) for item in self.session.transcript),
            shared=shared or "",
        )
        """`/rewind` to an earlier prompt and `/redo` (`core/changes/prompt_rewind.py`)."""
        if interrupted := self.prompts.recover():
            self.recovered = " ".join(filter(None, [self.recovered, interrupted]))
        released = release_dead_claims(self.store, self.changes, self.session.id)
        self.released = [
            f'#{t.id} "{t.subject}" was being worked on by {t.attempts[-1].agent} when its process ended; it is '
            "pending again, the attempt recorded"
            for t in released
        ]
        if stopped := stop_left_running(self.store):
            self.released.append(
                f"{stopped} task check(s) were running when todo-agent ended; they were stopped and their tasks "
                "are not completed"
            )

    @classmethod
    def create(
        cls,
        config: Config,
        *,
        approver: Approver | None = None,
        resume: str | None = None,
        continue_latest: bool = False,
        model: ChatModel | None = None,
    ) -> Runtime:
        """Open a new session, or resume one. Raises `SessionError` for an unknown id."""
        if resume:
            session = Session.open(find_session(config.workspace, resume))
        elif continue_latest and (path := latest_session(config.workspace)) is not None:
            session = Session.open(path)
        else:
            session = Session.create(config.workspace)
        lazy = LazyModel(config, facts=session.server_facts.get(config.model, {}))
        if model is not None:
            lazy._model = model
        return cls(config, session, approver, lazy)

    # --- what front ends read ---------------------------------------------------------

    @property
    def model_name(self) -> str:
        return self.model.name

    @property
    def model_label(self) -> str:
        """The model as the status line shows it: `gpt-5 (high)` with a reasoning effort set."""
        effort = self.model.reasoning_effort
        return f"{self.model.name} ({effort})" if effort else self.model.name

    def set_effort(self, effort: str) -> None:
        """`/effort`: how hard the model reasons from the next request on ("" for the server's default)."""
        self.model.set_effort(effort)

    @property
    def history(self) -> list[Message]:
        return self.agent.history

    @property
    def session_id(self) -> str:
        return self.session.id

    @property
    def session_path(self) -> Path:
        """The session's transcript file (`/export` writes beside it and reads its records)."""
        return self.session.path

    @property
    def mode(self) -> PermissionMode:
        return self.permissions.mode

    @property
    def busy(self) -> bool:
        """Whether a turn (or a compaction) is running."""
        return self.agent.busy

    @property
    def transcript(self) -> list[TranscriptItem]:
        """The whole conversation to draw, compactions marked (the model sees `history`)."""
        return self.session.transcript

    def tool_status(self, call_id: str) -> str | None:
        """How a past tool call ended (`ok`, `denied`, …), for drawing a resumed transcript."""
        return self.session.tool_status.get(call_id)

    def context_breakdown(self) -> Breakdown:
        """What the next request holds, by part (`/context`, the `-p` json `usage.context`)."""
        agent = self.agent
        shape = Shape(
            instructions=[found.text.strip() for found in self.system.instructions],
            plan_line=self.plan_line,
            attachment=_is_attachment,
            server_of=server_of,
        )
        return breakdown(agent.request_messages(), agent.schemas(), self.counter, self.budget, shape)

    def plan_spend(self) -> Spend:
        """The prompt tokens this session's requests took, and the plan's part of them."""
        return self.agent.spend

    def tasks(self) -> tuple[Task, ...]:
        """The task list as it is now (the person may have edited it since the last event)."""
        return self.store.snapshot()

    def startup_notices(self) -> list[Notice]:
        notices = [Notice(describe_loaded(self.system, self.config.workspace)), Notice(f"date {self.system.date}")]
        if self.history:
            notices.append(Notice(self._resumed_notice()))
        notices += [
            Notice(w, "warning") for w in (*self.config.warnings, *self.system.warnings, *self.session.warnings)
        ]
        if self.config.project_allow:  # a cloned repository's rules: say what they let through
            notices.append(Notice("project settings allow: " + ", ".join(self.config.project_allow), "warning"))
        if self.store.warning:
            notices.append(Notice(self.store.warning, "warning"))
        if self.budget.source == "setting" and (problem := self.fit_problem()) is not None:
            notices.append(Notice(problem, "error"))
        if self.changes.warning:
            notices.append(Notice(self.changes.warning, "warning"))
        if self.recovered:
            notices.append(Notice(self.recovered, "warning"))
        notices += [Notice(text, "warning") for text in (*self.released, *self.agent_warnings)]
        if self.config.task_list:
            notices.append(Notice(f"task list: the shared list {self.config.task_list!r} ({self.store.path})"))
        notices += [Notice(text, "warning") for text in self.custom_commands().notices]
        if lost := [
            f"{name} ({shell['command'][:60]})" for name, shell in self.session.shells.items() if shell["lost"]
        ]:
            notices.append(
                Notice(
                    "background commands still running when this session last ended were stopped then: "
                    + ", ".join(lost),
                    "warning",
                )
            )
        if (line := self.sandbox.start_notice()) is not None:
            notices.append(Notice(line, "warning" if self.sandbox.mode != "off" else "info"))
        return notices

    def _resumed_notice(self) -> str:
        tokens = self.agent.context_tokens
        text = f"resumed session {self.session.id} ({len(self.history)} messages, about {tokens:,} tokens)"
        if tokens > self.budget.trigger:
            text += "; it is compacted before the next request"
        return text

    # --- hooks ----------------------------------------------------------------------------

    @property
    def project_hooks(self) -> list[HookSpec]:
        return [spec for spec in self.config.hooks if spec.source == "project"]

    @property
    def project_hooks_trusted(self) -> bool:
        """Run the project file's hooks? Only once the person said so (`core/hooks/trust.py`),
        or the user file / `--allow-project-hooks` trusts all projects."""
        if self.config.allow_project_hooks:
            return True
        hooks = self.project_hooks
        return is_trusted(self.config.workspace, hooks, self.hook_code.digests(hooks))

    @property
    def untrusted_project_hooks(self) -> list[HookSpec]:
        """Project hooks waiting for the person's yes (empty when there are none, or trusted)."""
        return [] if self.project_hooks_trusted else self.project_hooks

    def trust_project_hooks(self) -> None:
        """The person accepted the project's hooks: remember it and run them from now on.
        Raises OSError when the acceptance cannot be saved (they still run this time)."""
        self.hooks.runner.specs = self.config.hooks
        self._protect_trusted_code()
        hooks = self.project_hooks
        trust(self.config.workspace, hooks, self.hook_code.digests(hooks))

    def _stop_project_hooks(self) -> None:
        """A project hook's code changed since it was accepted: none of them runs again this session."""
        self.hooks.runner.specs = [s for s in self.hooks.runner.specs if s.source != "project"]
        self._protect_trusted_code()

    def _protect_trusted_code(self) -> None:
        """The gate keeps the model from editing what trusted hooks and project servers run
        (their `Footprint`s): an edit there asks, with the reason; headless, it is denied."""
        places = self.hook_code.protected(self.hooks.runner.specs)
        for server in self.mcp.servers:
            if server.spec.code is not None and server.state not in ("untrusted", "disabled"):
                for path, shown in zip(server.spec.code.paths, server.spec.code.shown, strict=True):
                    places.setdefault(path, f"{shown} is run by the accepted project MCP server {server.name}")
        self.permissions.protected_code = places

    def untrusted_hooks_notice(self) -> Notice | None:
        """For headless runs, which cannot ask: say that project hooks were skipped and how to run them."""
        waiting = self.untrusted_project_hooks
        if not waiting:
            return None
        # Every byte of each command, on one line: a control sequence would hide what follows it.
        commands = "; ".join(
            f"{s.event}{f' [{reveal_line(s.matcher)}]' if s.matcher else ''}: {reveal_line(s.command)}" for s in waiting
        )
        return Notice(
            f"{len(waiting)} hook(s) in {project_settings_path(self.config.workspace)} not run: project hooks run "
            f"once you accept them in the TUI, or with --allow-project-hooks ({commands})",
            "warning",
        )

    async def start_session(self, source: SessionSource) -> list[Event]:
        """Run the SessionStart hooks (start-up, `/new` → clear, resume); their context goes
        to the model with the next prompt. Returns their events for the front end to show."""
        return await self.hooks.session_start(source)

    async def notification(self, message: str, kind: NotificationKind, terminal_focused: bool) -> list[Event]:
        """Run the `Notification` hooks: the agent waits for the person (`kind` says why)."""
        return await self.hooks.notification(message, kind, terminal_focused)

    def _hook_specs(self) -> list[HookSpec]:
        return [s for s in self.config.hooks if s.source == "user" or self.project_hooks_trusted]

    def _hook_fields(self) -> dict[str, Any]:
        return {
            "session_id": self.session.id,
            "transcript_path": str(self.session.path),
            "permission_mode": self.permissions.mode,
        }

    def context_usage(self) -> tuple[int, int | None]:
        """Tokens in use and the window (the status line's `ctx 12k/128k (9%)`). With MCP
        servers, what the next request would take: their tools join between requests."""
        used = self.agent.context_tokens
        if self.mcp.configured:
            used = max(used, self.agent.prompt_estimate())
        return used, self.budget.window

    def fit_problem(self) -> str | None:
        """Why the window cannot hold the fixed prompt plus room to work, when it cannot."""
        return self.budget.prefix_problem(self.agent.prefix_tokens())

    def list_sessions(self) -> list[SessionInfo]:
        return list_sessions(self.config.workspace)

    # --- what front ends change -------------------------------------------------------

    def summarize(self, tool: str, arguments: dict[str, Any]) -> str:
        """The short `⏺ Name(...)` form of a call, as the tool itself words it."""
        found = next((t for t in self.tools if t.name == tool), None)
        try:
            return found.summarize(arguments) if found else ""
        except Exception:  # cosmetic only; a resumed history may hold odd arguments
            return ""

    async def run_turn(self, prompt: str) -> AsyncGenerator[Event, None]:
        """One turn; consume with `async with aclosing(runtime.run_turn(p))`. A custom
        command is expanded and `@` mentions are attached on the way (`core/input/`).
        The prompt gets a checkpoint first (`/rewind`), open while its turn runs."""
        async for event in self._checkpointed(prompt, self.agent.run_turn(prompt)):
            yield event

    async def _checkpointed(self, prompt: str, turn: AsyncGenerator[Event, None]) -> AsyncGenerator[Event, None]:
        """`turn` under a checkpoint of its prompt, open while it runs."""
        await asyncio.to_thread(self.prompts.begin, prompt)
        try:
            async with aclosing(turn) as events:
                async for event in events:
                    yield event
        finally:
            self.prompts.end()

    async def rewind_to(self, plan: PromptPlan, scope: Scope, chosen: Collection[str]) -> Outcome:
        """`/rewind`: to just before `plan`'s prompt (`PromptRewinds.apply`); refused while a turn runs."""
        if self.agent.busy:
            raise RuntimeError("cannot rewind while a turn is running")
        return await asyncio.to_thread(self.prompts.apply, plan, scope, chosen)

    async def redo(self) -> Outcome:
        """`/redo`: undo the latest `/rewind`; refused while a turn runs."""
        if self.agent.busy:
            raise RuntimeError("cannot redo while a turn is running")
        return await asyncio.to_thread(self.prompts.redo)

    def run_shell(self, command: str) -> AsyncGenerator[Event, None]:
        """The person's `!command`, run like a turn (esc kills it); its output goes into the history."""
        self.file_index.mark_stale()
        return self.agent.run_shell(command)

    # --- custom commands --------------------------------------------------------------

    def custom_commands(self) -> CommandSet:
        """The custom slash commands as their files were last read. Never blocks an event
        loop: a reading older than a second is renewed in a thread, for the next look
        (without a loop, as a plain call, it is renewed at once)."""
        read_at, found = self._commands
        if time.monotonic() - read_at >= COMMANDS_MAX_AGE:
            if _on_event_loop():
                self._renew_commands_soon()
            else:
                read_at, found = self._read_commands()
        return without(found, self.reserved_commands)

    async def fresh_custom_commands(self) -> CommandSet:
        """The custom commands as their files are now, read in a thread (a prompt naming
        one is expanded from the file as it is, and asks again if it changed)."""
        await asyncio.to_thread(self._read_commands)
        return without(self._commands[1], self.reserved_commands)

    def _read_commands(self) -> tuple[float, CommandSet]:
        """Blocking: the command files read (`core/repo_files.py`), kept for `custom_commands`."""
        sources = default_sources(self.config.workspace, user_settings_path().parent)
        self._commands = (time.monotonic(), load_commands(sources))
        return self._commands

    def _renew_commands_soon(self) -> None:
        if self._renewing.locked():
            return

        def renew() -> None:
            with self._renewing:
                self._read_commands()

        threading.Thread(target=renew, name="todo-agent-commands", daemon=True).start()

    def reserve_command_names(self, names: Collection[str]) -> None:
        """The front end's own commands (`/help`…): custom commands of those names are not used."""
        self.reserved_commands = frozenset(names)

    def _model_for(self, command: CustomCommand) -> ChatModel | str:
        spec = command.model or ""
        if spec.startswith("script:") and command.scope == "project":
            return "a project file cannot choose a script: model"
        if self.config.demo:
            return "the demo runs its scripted model"
        return LazyModel(dataclasses.replace(self.config, model=spec))

    def _attacher(self) -> Attacher:
        return Attacher(
            self.config.workspace,
            read_denied=self.permissions.read_denied,
            reads=self.agent.files,
            char_limit=self.agent.tool_output_limit(),
            images=self.config.images,
        )

    def compact(self, focus: str = "") -> AsyncGenerator[Event, None]:
        """`/compact [focus]`, run like a turn."""
        return self.agent.compact(focus)

    def run_goal(self, goal: str) -> AsyncGenerator[Event, None]:
        """`/goal [TEXT]`, `--goal`: turns until every task is completed and every check
        passes, or a goal budget ends it (`core/goal.py`); empty: the current list is the goal."""
        config = self.config
        limits = GoalLimits(config.goal_max_turns, config.goal_max_tokens, config.goal_max_minutes)
        self.goal = GoalRun(self.agent, self.store, goal, limits)
        # The whole goal is one prompt to `/rewind` to: its turns are the harness's.
        return self._checkpointed(goal or "/goal", self.goal.run())

    def interrupt(self) -> bool:
        """End the running turn (and the goal it serves) as soon as possible. False when
        none runs in the core (the front end may still be waiting for its first event)."""
        goal = self.goal
        if goal is not None:
            goal.stop()
        if not self.agent.busy:
            return goal is not None and not goal.over
        self.agent.interrupt()
        return True

    async def refresh_tasks(self) -> bool:
        """Take in what another process saved to a shared list; whether the list changed."""
        saved = await asyncio.to_thread(self.store.peek)
        return saved is not None and self.store.adopt(saved)

    def compact_soon(self, focus: str = "") -> None:
        """`/compact` while a turn runs (its sub-agents at work): before its next request."""
        self.agent.compact_soon(focus)

    # --- sub-agents --------------------------------------------------------------------

    def agents(self) -> list[AgentRow]:
        """This session's sub-agents, running and finished, for the panel."""
        return self.team.rows()

    def stop_agent(self, agent_id: str) -> bool:
        """Stop one sub-agent (its running command is killed); its siblings go on."""
        return self.team.stop(agent_id)

    def agent_transcript(self, agent_id: str) -> list[TranscriptItem] | None:
        """What a sub-agent of this session did, read from its transcript; None if unknown."""
        path = self.team.transcript_path(agent_id)
        if path is None:
            return None
        try:
            return Session.view(path).transcript
        except SessionError:
            return None

    def agent_results(self) -> list[dict[str, Any]]:
        """Every sub-agent of this session with how it ended (for `-p --output-format json`)."""
        return [
            {
                "agent_id": r.agent_id,
                "agent_type": r.agent_type,
                "description": r.description,
                "task_id": r.task_id,
                "status": r.status,
                **{k: v for k, v in r.details.items() if k not in ("agent_id", "task_id", "status")},
            }
            for r in self.team.records()
        ]

    def child_model(self, kind: AgentType, about: str) -> ChatModel:
        """A sub-agent's model: a script's own part for it, the type's model on the same
        server (when the server does not say it lacks it), or the session's."""
        base = self.model.get()
        if isinstance(base, ScriptsAgents):
            return base.for_agent(about)
        if kind.model and not self.config.scripted and not self.child_model_notice(kind):
            return create_model(
                kind.model, base_url=self.config.base_url, api_key=self.config.api_key, wire=wire_options(self.config)
            )
        return self.model

    def child_model_notice(self, kind: AgentType) -> str:
        """Why a sub-agent of `kind` runs on the session's model instead of the one its file
        names: the server (asked at warm-up) lists models, and not that one."""
        listed = self.server.model_ids if self.server is not None else ()
        if not kind.model or self.config.scripted or not listed or kind.model in listed:
            return ""
        offered = ", ".join(listed[:5]) + (", …" if len(listed) > 5 else "")
        return (
            f"the agent type '{kind.name}' names the model {kind.model[:80]!r}, which the server does not list "
            f"({offered}); it runs on the session's model ({self.model.name})"
        )

    def set_mode(self, mode: PermissionMode) -> None:
        self.permissions.mode = mode

    def cycle_mode(self) -> PermissionMode:
        """The next permission mode (shift+tab); returns it."""
        return self.permissions.cycle_mode()

    def close(self) -> None:
        """Let go of the session (its lock); the runtime is not used after. Any MCP server
        still running (its loop ended without stopping it) is killed with its group."""
        self.mcp.kill_now()
        self.shells.kill_now()
        self.sandbox.close()
        self.session.close()

    def set_approver(self, approver: Approver | None) -> None:
        """Who answers approvals from now on (the TUI's modal; None in headless mode)."""
        self.approver = approver
        self.agent.approver = approver

    def warm_up(self) -> None:
        """Ask the server about itself (once), then build the model client. Blocking: the
        TUI runs it in a thread after the first frame, headless mode before the turn.
        Two threads may call it at once (the TUI's start-up thread, then the main
        screen's): the second waits for the first and finds the work done."""
        with self._warming:
            if self.server is None and self.config.base_url and not self.config.scripted:
                # The server answers while this thread imports the client (~0.3 s of CPU);
                # the client is built after, as the answer may choose the model.
                answers: list[ServerInfo] = []
                config = self.config
                asking = threading.Thread(
                    target=lambda: answers.append(probe(config.base_url or "", config.api_key)),
                    name="todo-agent-probe",
                    daemon=True,
                )
                asking.start()
                self.model.load_client()
                asking.join()
                self.server = answers[0] if answers else ServerInfo()
                self.server_notices = self._apply_server_info(self.server)
            self.model.get()

    def _apply_server_info(self, info: ServerInfo) -> list[Notice]:
        notices: list[Notice] = []
        if not self.config.model_chosen and info.model_ids:
            self.config.model = info.model_ids[0]  # read by the client built next, and the status line
            if len(info.model_ids) > 1:
                offered = ", ".join(info.model_ids[:5]) + (", …" if len(info.model_ids) > 5 else "")
                notices.append(
                    Notice(f"the server offers {len(info.model_ids)} models ({offered}); using "
                           f"{info.model_ids[0]} (choose with --model)", "warning")
                )  # fmt: skip
        window = info.window_for(self.config.model)
        if window and (problem := unbelievable_window(window, "the server")) is not None:
            notices.append(Notice(problem, "warning"))
            window = None
        if window and self.budget.source != "setting":
            self.budget.window, self.budget.source = window, "server"
            notices.append(Notice(f"context window {window:,} tokens (from the server)"))
            if (problem := self.fit_problem()) is not None:
                notices.append(Notice(problem, "error"))
        if info.supports_tool_calls is False:
            notices.append(Notice(NO_TOOLS_TEMPLATE, "warning"))
        return notices

    def set_model(self, spec: str) -> None:
        self.config.model = spec
        self.config.model_chosen = True
        self.model = LazyModel(self.config, facts=self.session.server_facts.get(spec, {}), effort=self.model.effort)
        self.agent.model = self.model

    def new_session(self) -> None:
        self._attach(Session.create(self.config.workspace))

    def resume(self, session_id: str) -> None:
        self._attach(Session.open(find_session(self.config.workspace, session_id)))

    def _attach(self, session: Session) -> None:
        if self.agent.busy:
            session.close()  # let go of its lock: it is not used after all
            raise RuntimeError("cannot switch sessions while a turn is running")
        self.shells.kill_now()  # a new or resumed session starts with none running
        self.session.close()
        self.session = session
        listeners, self.shells = self.shells.listeners, Shells(record=session.note)
        self.shells.listeners = listeners  # the front end's, kept across sessions
        self.shells.continue_from(session.shells)
        self._open_task_files()
        self.agent = self._make_agent()

    # --- what each task changed -------------------------------------------------------

    def task_files(self) -> dict[str, list[str]]:
        """Per task, a line per file it changed (`app.py  +3 −1`), for `/todos`."""
        return {
            task: [
                f"{c.path}  +{c.added} −{c.removed}" + ("" if c.kind == "modified" else f" ({c.kind})") for c in files
            ]
            for task, files in self.changes.records.items()
            if files
        }

    def change_lines(self) -> dict[str, str]:
        """Per task that changed files, its panel line (`2 files · +5 −1`)."""
        return {task: summary.line() for task, summary in self.changes.summaries().items()}

    def task_changes(self, task_id: str) -> tuple[str, str]:
        """What a task changed: its summary line ("" when nothing) and the unified diff."""
        summary = self.changes.summaries().get(task_id)
        return (summary.line() if summary else ""), self.changes.diff(task_id)

    def files_changed(self, task_id: str) -> list[dict[str, Any]]:
        """The files a task changed, for JSON output (path, kind, lines added and removed)."""
        return self.changes.as_json(task_id)

    async def plan_rewind(self, task_id: str) -> rewind.RewindPlan:
        return await asyncio.to_thread(rewind.plan, self.changes, self.store, task_id)

    async def rewind(self, plan: rewind.RewindPlan, chosen: Collection[str]) -> str:
        """Put back the chosen files of `plan`; refused while a turn runs."""
        if self.agent.busy:
            raise RuntimeError("cannot rewind while a turn is running")
        return await rewind.apply(self.changes, self.store, plan, chosen)

    def _files_of(self, task_id: str) -> list[str]:
        """The files changed under a task, as its change record has them."""
        return [change.path for change in self.changes.files_of(task_id)]

    def _task_reminders(self) -> BeforeRequest:
        config = self.config
        return task_reminder_provider(
            self.store, config.reminder_interval, self.work, config.stale_after_calls, self._files_of
        )

    def _make_agent(self) -> Agent:
        self.counter.forget()
        self.team = Team(
            Parent(
                self.config.workspace,
                self.store,
                self.changes,
                self.session,
                lambda: self.agent,
                self.child_model,
                # The instructions as the session read them at start: never read on the event loop.
                lambda line: (
                    build_system_context(self.config.workspace, line, instructions=self.system.instructions).prompt
                ),
                self.hooks,
                model_notice=self.child_model_notice,
                checkpoints=self.prompts.checkpoints,
            ),
            self.agent_types,
            TeamSettings(
                self.config.max_parallel_agents, self.config.agent_max_turns, tasks=self.config.tasks_version != "off"
            ),
        )
        holds = self.team.holds
        taken, recorded = change_observers(
            self.changes,
            self.store,
            held=holds.holding_for(None),
            commands=holds.commands_of(None),
            checkpoints=self.prompts.checkpoints,
        )
        planning = self.config.tasks_version != "off"
        self.work = Work()
        """What the main agent's tools did since the plan last changed (the reminders' work rules)."""
        lifecycle = Lifecycle(
            before_request=[
                *([self._task_reminders()] if planning else []),
                team_note_provider(self.team.records),
                *([images_provider(self.mcp.pending_images)] if self.mcp.images else []),
            ],
            turn_end=[unfinished_stop_check(self.store, self._files_of)] if planning else [],
            tool_done=[attribution_observer(self.store), recorded, work_observer(self.work, self.store)],
            tool_start=[taken],
        )
        self.hooks.install(lifecycle)
        lifecycle.prepare_prompt = InputPreparer(
            permissions=self.permissions,
            commands=self.fresh_custom_commands,
            attacher=self._attacher,
            approver=lambda: self.approver,
            model_for=self._model_for,
            hidden_env=self.hidden_env,
            sandbox=self.sandbox,
        )
        return Agent(
            model=self.model,
            tools=self.tools,
            workspace=self.config.workspace,
            permissions=self.permissions,
            system_prompt=self.system.prompt,
            session=self.session,
            approver=self.approver,
            tasks=self.store,
            hidden_env=self.hidden_env,
            lifecycle=lifecycle,
            options=AgentOptions(
                max_turns=self.config.max_turns,
                repeat_limit=self.config.max_repeated_calls,
                request_retries=self.config.request_retries,
                retry_max_wait=self.config.request_retry_wait,
                check_timeout=self.config.check_timeout,
            ),
            budget=self.budget,
            sandbox=self.sandbox,
            counter=self.counter,
            plan_line=self.plan_line,
            shells=self.shells,
            files=self.team.main_ledger(),
            images=self.mcp.pending_images if self.mcp.images else None,
        )
