"""Composition of one running agent: config, session, task store, tools, agent.

The front ends (the TUI, headless `-p`, the ACP agent) build a `Runtime` and drive it
through its face alone (`Runtime.FACE`): the parts in `core/face/` (`plan`, `team`, `mcp`,
`sessions`, `turn`, `trust`, views over the current session) and a few names of its own
(the model, the permission mode, the settings, building and closing it). Never through the
agent, the store or the policy it holds; `tests/test_runtime_face.py` checks the front ends.
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
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .agents.definitions import AgentType, load_types
from .agents.notes import team_note_provider
from .agents.recovery import release_dead_claims
from .agents.team import Parent, Team, TeamSettings
from .agents.tool import agent_tool
from .changes import rewind
from .changes.checkpoint import Checkpoints
from .changes.log import ChangeLog
from .changes.prompt_rewind import PromptRewinds
from .changes.recorder import attribution_observer, change_observers
from .engine.instructions import build_system_context, describe_loaded
from .engine.loop import Agent, AgentOptions
from .events import Notice
from .face.mcp import Mcp
from .face.plan import Plan
from .face.sessions import Sessions
from .face.team import TeamFace
from .face.trust import Trust
from .face.turn import Turn
from .goal import GoalRun
from .hooks.code import HookCode
from .hooks.runner import HookRunner, hook_environment
from .hooks.spec import HookSpec
from .hooks.wiring import ShellHooks
from .input.custom_commands import CustomCommand
from .input.file_index import FileIndex
from .input.mentions import OPEN as ATTACHMENTS_OPEN
from .input.mentions import Attacher
from .input.prepare import InputPreparer
from .lifecycle import BeforeRequest, Lifecycle
from .mcp.manager import McpManager
from .mcp.results import results_dir
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
from .session.directory import find_session, latest_session, task_list_path
from .session.transcript import CompactionMark, Session
from .settings import Config, user_settings_path
from .tasks.reminders import Work, task_reminder_provider, unfinished_stop_check, work_observer
from .tasks.store import TaskStore
from .tools import bash, files, fs, search, shells, web_fetch
from .tools.base import Tool
from .tools.channel import FileChannel
from .tools.context import HIDDEN_ENV
from .tools.images import images_provider
from .tools.shells import Shells
from .tools.task_checks import stop_left_running
from .tools.tasks import SYSTEM_PROMPT_LINE_V1, SYSTEM_PROMPT_LINE_V2, TASK_TOOLS_V1, TASK_TOOLS_V2
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
    FACE = frozenset({
        # the parts (`core/face/`)
        "plan", "team", "mcp", "sessions", "turn", "trust",
        # building and ending one; who answers approvals
        "create", "warm_up", "close", "stop_background", "approver", "set_approver", "set_file_channel",
        # the model, the window, the permission mode
        "model_name", "model_label", "reasoning_effort", "set_model", "set_effort", "server_notices", "offered_models",
        "window_source", "mode", "set_mode", "cycle_mode", "startup_notices",
        # settings as resolved, read only; the background commands and the sandbox, which
        # `/shells` and `/sandbox` drive
        "config", "shells", "sandbox",
    })  # fmt: skip
    """What a front end (`tui/`, `frontends/`) may touch on a runtime; `tests/test_runtime_face.py`
    holds them to it, and to the public members of each part."""

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
        self.file_channel: FileChannel | None = None
        # The front ends' face, in parts (`core/face/`): views over the current session.
        self.plan = Plan(self)
        self.team = TeamFace(self)
        self.mcp = Mcp(self)
        self.sessions = Sessions(self)
        self.turn = Turn(self)
        self.trust = Trust(self)
        self._results_rule: Rule | None = None
        self.agent_types, self.agent_warnings = load_types(config.workspace, user_settings_path().parent, Path.home())
        builtin = [
            *build_tools(config.tasks_version),
            agent_tool(
                lambda: self.team_runner,
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
        self.mcp_manager = McpManager(
            config.mcp_servers,
            workspace=config.workspace,
            hidden_env=self.hidden_env,
            log_dir=self.mcp_log_dir(),
            allow_project=config.allow_project_mcp,
            images=config.images,
        )
        self.tools = ToolSet(
            builtin,
            self.mcp_manager,
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
        self.mcp_manager.listeners.append(lambda server: self.protect_trusted_code())
        self.protect_trusted_code()
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

    def _open_task_files(self) -> None:
        """The session's task list (or the shared one) and record of changes, finishing an
        interrupted rewind and giving back the claims of sub-agents whose process died."""
        shared = self.config.task_list
        # A session's own list is written by that session alone: its subtasks tagged with a
        # bare name (lists written before sessions were kept) are its own.
        home = None if shared else self.session.id
        self.store = TaskStore.load(task_list_path(shared) if shared else self.session.tasks_path, home=home)
        if self.mcp_manager.configured:
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

    @property
    def reasoning_effort(self) -> str:
        """The effort asked of a reasoning model ("" for the server's default)."""
        return self.model.reasoning_effort

    @property
    def offered_models(self) -> tuple[str, ...]:
        """The models the server lists (asked at warm-up); empty when it lists none."""
        return tuple(self.server.model_ids) if self.server is not None else ()

    def set_effort(self, effort: str) -> None:
        """`/effort`: how hard the model reasons from the next request on ("" for the server's default)."""
        self.model.set_effort(effort)

    def startup_notices(self) -> list[Notice]:
        notices = [Notice(describe_loaded(self.system, self.config.workspace)), Notice(f"date {self.system.date}")]
        if self.agent.history:
            notices.append(Notice(self._resumed_notice()))
        notices += [
            Notice(w, "warning") for w in (*self.config.warnings, *self.system.warnings, *self.session.warnings)
        ]
        if self.config.project_allow:  # a cloned repository's rules: say what they let through
            notices.append(Notice("project settings allow: " + ", ".join(self.config.project_allow), "warning"))
        if self.store.warning:
            notices.append(Notice(self.store.warning, "warning"))
        if self.budget.source == "setting" and (problem := self.turn.fit_problem()) is not None:
            notices.append(Notice(problem, "error"))
        if self.changes.warning:
            notices.append(Notice(self.changes.warning, "warning"))
        if self.recovered:
            notices.append(Notice(self.recovered, "warning"))
        notices += [Notice(text, "warning") for text in (*self.released, *self.agent_warnings)]
        if self.config.task_list:
            notices.append(Notice(f"task list: the shared list {self.config.task_list!r} ({self.store.path})"))
        notices += [Notice(text, "warning") for text in self.turn.commands().notices]
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
        text = f"resumed session {self.session.id} ({len(self.agent.history)} messages, about {tokens:,} tokens)"
        if tokens > self.budget.trigger:
            text += "; it is compacted before the next request"
        return text

    @property
    def window_source(self) -> WindowSource:
        """Where the context window's size came from (a setting, the server, the default)."""
        return self.budget.source

    @property
    def mode(self) -> PermissionMode:
        return self.permissions.mode

    def mcp_log_dir(self) -> Path:
        """Where the MCP servers' stderr logs go: beside the session."""
        return self.session.path.with_name(f"{self.session.id}.mcp")

    @staticmethod
    def is_attachment(message: Message) -> bool:
        return _is_attachment(message)

    # --- hooks ----------------------------------------------------------------------------

    def _stop_project_hooks(self) -> None:
        """A project hook's code changed since it was accepted: none of them runs again this session."""
        self.hooks.runner.specs = [s for s in self.hooks.runner.specs if s.source != "project"]
        self.protect_trusted_code()

    def protect_trusted_code(self) -> None:
        """The gate keeps the model from editing what trusted hooks and project servers run
        (their `Footprint`s): an edit there asks, with the reason; headless, it is denied."""
        places = self.hook_code.protected(self.hooks.runner.specs)
        for server in self.mcp_manager.servers:
            if server.spec.code is not None and server.state not in ("untrusted", "disabled"):
                for path, shown in zip(server.spec.code.paths, server.spec.code.shown, strict=True):
                    places.setdefault(path, f"{shown} is run by the accepted project MCP server {server.name}")
        self.permissions.protected_code = places

    def _hook_specs(self) -> list[HookSpec]:
        return [s for s in self.config.hooks if s.source == "user" or self.trust.hooks_trusted]

    def _hook_fields(self) -> dict[str, Any]:
        return {
            "session_id": self.session.id,
            "transcript_path": str(self.session.path),
            "permission_mode": self.permissions.mode,
        }

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
        self.mcp_manager.kill_now()
        self.shells.kill_now()
        self.sandbox.close()
        self.session.close()

    def set_file_channel(self, channel: FileChannel | None) -> None:
        """Where Read, Edit and Write (and the change records and stale-file checks) take
        and put files from now on: an ACP client's editor; None for the disk."""
        self.file_channel = channel
        self.agent.channel = channel
        self.changes.reader = channel.read if channel is not None and channel.reads else None

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
            if (problem := self.turn.fit_problem()) is not None:
                notices.append(Notice(problem, "error"))
        if info.supports_tool_calls is False:
            notices.append(Notice(NO_TOOLS_TEMPLATE, "warning"))
        return notices

    def set_model(self, spec: str) -> None:
        self.config.model = spec
        self.config.model_chosen = True
        self.model = LazyModel(self.config, facts=self.session.server_facts.get(spec, {}), effort=self.model.effort)
        self.agent.model = self.model

    def switch_session(self, session_id: str | None) -> None:
        """A new session (None) or an earlier one; `runtime.sessions.new`/`resume` call it."""
        workspace = self.config.workspace
        self._attach(
            Session.create(workspace) if session_id is None else Session.open(find_session(workspace, session_id))
        )

    async def stop_background(self) -> None:
        """Quit, the end of `-p`: every background command and MCP server stops, with
        everything it started."""
        await asyncio.gather(self.shells.stop_all(), self.mcp_manager.stop())

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
        self.set_file_channel(self.file_channel)  # the front end's, kept across sessions

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
        self.team_runner = Team(
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
        holds = self.team_runner.holds
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
                team_note_provider(self.team_runner.records),
                *([images_provider(self.mcp_manager.pending_images)] if self.mcp_manager.images else []),
            ],
            turn_end=[unfinished_stop_check(self.store, self._files_of)] if planning else [],
            tool_done=[attribution_observer(self.store), recorded, work_observer(self.work, self.store)],
            tool_start=[taken],
        )
        self.hooks.install(lifecycle)
        lifecycle.prepare_prompt = InputPreparer(
            permissions=self.permissions,
            commands=self.turn.fresh_commands,
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
            files=self.team_runner.main_ledger(),
            images=self.mcp_manager.pending_images if self.mcp_manager.images else None,
        )
