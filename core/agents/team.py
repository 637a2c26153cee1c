"""The team: the sub-agents the main agent's `Agent` calls start, each answering for its task.

One `Agent` call (`Team.run`):
1. its type is found (an unknown one is a tool error naming the types there are);
2. with `task_id`, the task is claimed under the list's lock (of any number of claims of
   one task, exactly one wins); a refusal is a tool error and nothing starts;
3. it waits for a free slot (`max_parallel_agents`), shown as waiting;
4. the `SubagentStart` hooks run (their context joins its brief), then its own agent loop
   runs to its end, every event shown live;
5. however it ends (done, failed, cut at the output limit, out of requests, stopped,
   crashed) the harness settles its task: completed only if it marked the task completed
   and ended cleanly, otherwise pending again with the attempt recorded; it measures the
   files the run changed from the change record, and returns an honest result.
An interrupt of the main agent's turn stops every sub-agent running for it; each is
settled the same way, and what it had done becomes its call's result.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..changes.checkpoint import Checkpoints
from ..changes.log import ChangeLog
from ..changes.recorder import attribution_observer, change_observers
from ..engine.loop import Agent, AgentOptions
from ..events import AgentEvent, AgentFinished, AgentStarted, Notice, TasksUpdated
from ..hooks.wiring import ShellHooks
from ..lifecycle import Lifecycle, TurnState
from ..model.base import ChatModel
from ..permissions.modes import ApprovalAnswer, ApprovalRequest, Approver
from ..session.directory import SessionError
from ..session.transcript import Session
from ..tasks.model import AgentRef, Attempt, Claim, StoreError
from ..tasks.persistence import PersistenceError
from ..tasks.reminders import wrap
from ..tasks.store import TaskStore
from ..tools.base import Tool
from ..tools.context import ToolContext
from ..tools.images import Image, images_provider
from ..tools.ledger import FileLedger
from ..tools.results import ToolError, ToolResult
from ..tools.tasks import TASK_TOOLS_V2
from ..window.tokens import TokenCounter
from .child import Child, Show
from .definitions import TASK_TOOLS, AgentType
from .holds import Holds
from .records import Record, number, past_records
from .result import UNVERIFIED, files_changed, mark, result_text, status_of
from .state import AgentRow

DEFAULT_PARALLEL = 3
DEFAULT_MAX_TURNS = 30

SUBAGENT_LINE = (
    "You are {name}, a sub-agent of todo-agent. Your brief is the first message. If it names a task of the "
    "shared plan, that task is yours: mark it completed with TaskUpdate as soon as it is done and checked (never "
    "when checks fail or the work is partial). You may update only that task (status, activeForm, metadata) and "
    "the subtasks you create with TaskCreate. When you are done, end your turn with a short summary for the agent "
    "that started you: what you did, how you checked it, and what is left."
)
UNFINISHED_TASK = (
    'Your task #{id} "{subject}" is not marked completed. If it is done and checked, mark it completed with '
    "TaskUpdate; if it is not, say what is left. Then end your turn with your summary."
)


@dataclass(frozen=True)
class AgentCall:
    """What one `Agent` call asks for (its arguments, checked)."""

    description: str
    prompt: str
    subagent_type: str | None = None
    task_id: str | None = None
    max_turns: int | None = None


@dataclass
class Parent:
    """What the team needs of the main agent and its session (filled by the runtime)."""

    workspace: Path
    store: TaskStore
    changes: ChangeLog
    session: Session
    agent: Callable[[], Agent]
    """The main agent: its tools, permission gate, approver, window and turn budget."""
    model_for: Callable[[AgentType, str], ChatModel]
    """A sub-agent's model, from its type and its description and brief."""
    system_for: Callable[[str], str]
    """The system context (the project's instructions, the date) with this task line."""
    hooks: ShellHooks | None = None
    model_notice: Callable[[AgentType], str] = lambda kind: ""
    """Why a sub-agent of this type does not run on the model its file names ("" when it does)."""
    checkpoints: Checkpoints | None = None
    """The prompts' checkpoints: a sub-agent's changes belong to the prompt whose turn started it."""


@dataclass
class TeamSettings:
    max_parallel: int = DEFAULT_PARALLEL
    max_turns: int = DEFAULT_MAX_TURNS
    """A sub-agent's model requests when its call does not say."""
    tasks: bool = True
    """Sub-agents get the task tools (False: `tasks = "off"`, no plan at all)."""


class Team:
    def __init__(self, parent: Parent, types: dict[str, AgentType], settings: TeamSettings | None = None) -> None:
        self.parent = parent
        self.types = types
        self.settings = settings or TeamSettings()
        self.holds = Holds(parent.store, parent.changes)
        self.children: dict[str, Child] = {}
        """This run's sub-agents, running and finished, by name."""
        self.past: list[Record] = past_records(self.directory)
        """Sub-agents of earlier runs of this session (read from their transcripts)."""
        self._slots = asyncio.Semaphore(max(1, self.settings.max_parallel))
        self._numbers = max((number(r.agent_id) for r in self.past), default=0)

    @property
    def directory(self) -> Path:
        """Where the sub-agents' transcripts are: `<session>.agents/` beside the session."""
        session = self.parent.session
        return session.path.with_name(f"{session.id}.agents")

    # --- what front ends read and do -------------------------------------------------

    def rows(self) -> list[AgentRow]:
        now = time.time()
        return [child.row(now) for child in self.children.values()]

    def records(self) -> list[Record]:
        """Every sub-agent of this session: earlier runs', then this run's."""
        return [*self.past, *(self._record(c) for c in self.children.values())]

    def stop(self, agent_id: str, why: str = "stopped by you") -> bool:
        """Stop one sub-agent (its running command is killed); its siblings go on."""
        child = self.children.get(agent_id)
        if child is None or child.phase == "done":
            return False
        child.stop(why)
        return True

    def transcript_path(self, agent_id: str) -> Path | None:
        path = self.directory / f"{agent_id}.jsonl"
        return path if _NAME.fullmatch(agent_id) and path.is_file() else None

    def main_ledger(self) -> FileLedger:
        """The main agent's file ledger: held files are those of sub-agents' tasks."""

        def record() -> str | None:
            task = self.parent.store.current()
            return task.id if task is not None else None

        return FileLedger(self.holds.holder_for(None), self.holds.wrote_by(None, record))

    # --- one Agent call ----------------------------------------------------------------

    async def run(self, call: AgentCall, ctx: ToolContext) -> ToolResult:
        """Start, run and settle one sub-agent; its result (an error unless it completed)."""
        if ctx.agent is not None:
            raise ToolError("a sub-agent cannot start sub-agents")
        kind = self._type(call.subagent_type)
        show: Show = ctx.live or (lambda event: None)
        child = self._child(kind, call, ctx.call_id)
        if child.task_id is not None:
            await self._claim(child)
            show(TasksUpdated(self.parent.store.snapshot()))
        self.children[child.id] = child
        runner = asyncio.ensure_future(self._lifetime(child, call, show))
        child.runner = runner
        try:
            finished = await asyncio.shield(runner)
        except asyncio.CancelledError:  # the main agent's turn was interrupted
            child.stop("interrupted")
            finished = await _outcome(runner)
            ctx.interrupted_output = result_text(finished, self._task_line(child))
            raise
        return ToolResult(result_text(finished, self._task_line(child)), is_error=finished.status != "completed")

    def _type(self, name: str | None) -> AgentType:
        wanted = (name or "general").strip().lower()
        found = self.types.get(wanted)
        if found is None:
            known = ", ".join(self.types)
            raise ToolError(f"no sub-agent type '{wanted[:40]}'; the types are: {known}")
        return found

    def _child(self, kind: AgentType, call: AgentCall, call_id: str) -> Child:
        self._numbers += 1
        name = f"{kind.name}-{self._numbers}"
        session = self.parent.session
        header = {
            "parent": session.id,
            "agent_type": kind.name,
            "description": call.description,
            "task_id": call.task_id,
            "call_id": call_id,
        }
        transcript = Session.for_agent(self.directory / f"{name}.jsonl", header)
        return Child(
            name, AgentRef(name, session.id), kind, call.description, call.prompt, call_id, call.task_id, transcript
        )

    async def _claim(self, child: Child) -> None:
        assert child.task_id is not None
        taken = Claim(child.id, child.ref.session, os.getpid(), time.time())
        try:
            await self.parent.store.claim(child.task_id, taken)
        except (StoreError, PersistenceError) as exc:
            if self._numbers == number(child.id):  # nothing started: its name is free again
                self._numbers -= 1
            raise ToolError(f"no sub-agent started: {exc}") from exc

    async def _lifetime(self, child: Child, call: AgentCall, show: Show) -> AgentFinished:
        """Wait for a slot, run, settle; always settles, whatever happens before."""
        key = child.task_id or f"@{child.id}"
        since = mark(self.parent.changes, key)
        try:
            if self._slots.locked():
                show(self._started(child, waiting=True))
            async with self._slots:
                if not child.stopped:
                    await self._run(child, call, show)
        except asyncio.CancelledError:  # stopped while it waited, or in its start hooks
            if not child.stopped:
                child.stopped = "interrupted"
        except Exception as exc:  # a hook or set-up failure: this sub-agent fails, nothing else
            child.error = f"it could not start ({type(exc).__name__}: {exc})"
        finally:  # its background commands end with it (no await when it started none)
            shells = self.parent.agent().shells
            if shells is not None and any(s.owner == child.ref for s in shells.running()):
                await asyncio.shield(shells.stop_all(child.ref, everyone=False))
        return await self._settle(child, key, since, show)

    async def _run(self, child: Child, call: AgentCall, show: Show) -> None:
        context = ""
        if self.parent.hooks is not None:
            verdict = await self.parent.hooks.subagent_start(child.id, child.kind.name)
            for event in verdict.events:
                show(event)
            context = verdict.context
        agent = self._agent(child, call)
        child.brief = self._brief(child, context)
        child.begin(agent)
        self.holds.running(child.ref, True)
        show(self._started(child, waiting=False))
        if notice := self.parent.model_notice(child.kind):
            show(AgentEvent(child.id, child.call_id, Notice(notice, "warning")))
        try:
            await child.run(show)
        finally:
            self.holds.running(child.ref, False)

    def _started(self, child: Child, *, waiting: bool) -> AgentStarted:
        return AgentStarted(
            child.id,
            child.kind.name,
            child.description,
            child.call_id,
            child.task_id,
            str(child.transcript.path),
            waiting,
            "" if waiting else child.brief,
        )

    def _brief(self, child: Child, hook_context: str) -> str:
        parts = [child.brief.strip()]
        task = self.parent.store.get(child.task_id) if child.task_id else None
        if task is not None:
            about = f"\n{task.description}" if task.description else ""
            parts.append(f'Your task: #{task.id} "{task.subject}"{about}')
        if hook_context:
            parts.append(hook_context)
        return "\n\n".join(parts)

    def _agent(self, child: Child, call: AgentCall) -> Agent:
        main = self.parent.agent()
        key = child.task_id or f"@{child.id}"
        taken, recorded = change_observers(
            self.parent.changes,
            self.parent.store,
            target=lambda: key,
            held=self.holds.holding_for(child.ref),
            commands=self.holds.commands_of(child.ref),
            checkpoints=self.parent.checkpoints,
        )
        images: list[Image] | None = [] if main.images is not None else None  # its own, as the main agent's
        lifecycle = Lifecycle(
            before_request=[images_provider(images)] if images is not None else [],
            turn_end=[self._own_task_check(child)] if child.task_id else [],
            tool_done=[attribution_observer(self.parent.store, child.ref), recorded],
            tool_start=[taken],
        )
        if self.parent.hooks is not None:
            self.parent.hooks.install_for_subagent(lifecycle, child.id, child.kind.name, str(child.transcript.path))
        system = child.kind.prompt + "\n\n" + self.parent.system_for(SUBAGENT_LINE.format(name=child.id))
        return Agent(
            model=self.parent.model_for(child.kind, f"{child.description}\n{child.brief}"),
            tools=self._tools(child.kind, main),
            workspace=self.parent.workspace,
            permissions=main.permissions,  # the same gate and the same rules, never wider
            system_prompt=system,
            session=child.transcript,
            approver=_labelled(main.approver, child.label),
            tasks=self.parent.store,
            hidden_env=main.hidden_env,
            lifecycle=lifecycle,
            options=AgentOptions(
                max_turns=call.max_turns or self.settings.max_turns,
                repeat_limit=main.options.repeat_limit,
                request_retries=main.options.request_retries,
                retry_delay=main.options.retry_delay,
                retry_max_wait=main.options.retry_max_wait,
                shared=main.requests,
            ),
            budget=dataclasses.replace(main.budget),
            counter=TokenCounter(),
            agent=child.ref,
            sandbox=main.sandbox,
            shells=main.shells,
            channel=main.channel,
            files=FileLedger(self.holds.holder_for(child.ref), self.holds.wrote_by(child.ref, lambda: key)),
            images=images,
        )

    def _tools(self, kind: AgentType, main: Agent) -> list[Tool]:
        """The main agent's tools but `Agent` (depth 1) and the list-wide TodoWrite, narrowed
        to the type's `tools`; every sub-agent gets the task tools (unless there is no plan)."""
        chosen = [
            tool
            for tool in main.tools
            if not tool.fan_out
            and tool.name not in (*TASK_TOOLS, "TodoWrite")
            and (kind.tools is None or tool.name in kind.tools)
        ]
        return [*chosen, *TASK_TOOLS_V2] if self.settings.tasks else chosen

    def _own_task_check(self, child: Child) -> Callable[[TurnState], str | None]:
        def check(state: TurnState) -> str | None:
            task = self.parent.store.get(child.task_id or "")
            if state.continuations or task is None or task.claim is None or not task.claim.by(child.ref):
                return None
            return None if task.claim.done else wrap(UNFINISHED_TASK.format(id=task.id, subject=task.subject))

        return check

    async def _settle(self, child: Child, key: str, since: tuple[int, Any], show: Show) -> AgentFinished:
        """How the run ended, measured; its task completed or given back; the result."""
        store = self.parent.store
        reason = child.end.reason if child.end is not None else ("interrupted" if child.stopped else "error")
        if child.error and reason in ("done", "interrupted") and not child.stopped:
            reason = "error"  # it crashed: no clean end, whatever the last event said
        marked = None
        if child.task_id is not None:
            task = store.get(child.task_id)
            marked = bool(task and task.claim and task.claim.by(child.ref) and task.claim.done)
        status, why = status_of(reason, marked_done=marked, stopped=child.stopped or child.error)
        if reason == "max_turns" and "parent's turn" in child.stop_note:
            why = "the main agent's turn used up its model requests (max_turns), its sub-agents' included"
        if reason == "budget" and child.stop_note:
            why = child.stop_note.removeprefix("stopped: ")
        summary = (child.end.final_text if child.end is not None else "") or child.last_text
        files = files_changed(self.parent.changes, key, since)
        if status == "completed" and child.task_id is not None and not child.work_tools and not files:
            task = store.get(child.task_id)
            if task is None or not (task.verify and task.last_check and task.last_check.passed):
                status, why = "unverified", UNVERIFIED
        note = ""
        if child.task_id is not None:
            attempt = Attempt(child.id, status, summary[:500], files, time.time(), child.ref.session)
            try:
                settled = await store.settle(child.task_id, child.ref, attempt)
                note = "" if settled is not None else " (its task was changed meanwhile, and is left as it is)"
            except (StoreError, PersistenceError) as exc:
                note = f" (its task could not be given back: {exc})"
            show(TasksUpdated(store.snapshot()))
        finished = AgentFinished(
            child.id,
            child.call_id,
            child.task_id,
            status,
            why + note,
            summary,
            files,
            child.tools,
            child.requests_made(),
            child.tokens,
            child.finish(status),
        )
        child.result = finished
        # Unsaved, the result still reaches the main agent; only the record beside the session is missing.
        with contextlib.suppress(SessionError):
            child.transcript.note({"type": "agent_result", **dataclasses.asdict(finished)})
        child.transcript.close()
        show(finished)
        return finished

    def _task_line(self, child: Child) -> str:
        if child.task_id is None:
            return ""
        task = self.parent.store.get(child.task_id)
        if task is None:
            return f"task #{child.task_id} no longer exists"
        if task.status == "completed":
            return f'task #{task.id} "{task.subject}" is completed'
        if task.claim is None:
            return f'task #{task.id} "{task.subject}" is {task.status} again; the attempt is recorded on it'
        return f'task #{task.id} "{task.subject}" is {task.status}'

    def _record(self, child: Child) -> Record:
        status = child.status or ("running" if child.phase == "running" else "waiting")
        summary = (child.end.final_text if child.end is not None else "") or child.last_text
        details = dataclasses.asdict(child.result) if child.result is not None else {}
        return Record(child.id, child.kind.name, child.description, child.task_id, status, summary, details)


def _labelled(approver: Approver | None, label: str) -> Approver | None:
    """The main agent's approver, each request labelled with the sub-agent and its task."""
    if approver is None:
        return None
    ask = approver

    async def labelled(request: ApprovalRequest) -> ApprovalAnswer:
        return await ask(dataclasses.replace(request, agent=label))

    return labelled


async def _outcome(runner: asyncio.Future[AgentFinished]) -> AgentFinished:
    """`runner`'s result, however many more cancellations arrive meanwhile (a stopped
    sub-agent must be settled before the interrupted turn goes on)."""
    while True:
        try:
            return await asyncio.shield(runner)
        except asyncio.CancelledError:
            if runner.done():
                return runner.result()


_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*-\d+")
