"""The agent turn: an async generator of events.

One turn: append the prompt; then, until the model stops calling tools, compact the
history if the prompt would pass the threshold, run the `before_request` providers, call
the model, and run the response's tool calls as one batch. History is valid for the API
after every step: each assistant tool call gets a `tool` reply (results, errors, denials,
cancellations) before the next request.

Long work: token use comes from the server's `usage` or an estimate (`core/window/tokens.py`);
past `compact_threshold` of the window, or when the server refuses a request as too long
(then the request is retried once), the older history is summarised (`core/window/compaction.py`).
A turn ends for a stated reason: done, `max_turns` requests, an answer cut at the output
limit, or the repeated-call guard (`core/engine/guards.py`).

Interrupting (`Agent.interrupt()`) cancels whatever the turn awaits (model stream,
approval, tools; a running Bash is killed with its process group); the turn then
repairs history and ends with `TurnEnd("interrupted")`. It does so by cancelling the
task that iterates the turn, so iterate it in a task that awaits nothing else between
events (the front ends pump it into a queue: `core/engine/pump.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..events import (
    AssistantMessage,
    Compacted,
    EndReason,
    Error,
    Event,
    Notice,
    ReasoningDelta,
    Reminded,
    ResponseDiscarded,
    Retrying,
    Steered,
    TasksUpdated,
    TextDelta,
    ToolFinished,
    TurnEnd,
    Usage,
)
from ..lifecycle import Lifecycle, PreparedPrompt, StopState, TurnState, run_gates
from ..model.base import (
    ChatModel,
    ContextOverflowError,
    Message,
    ModelError,
    ModelResponse,
    Reasoning,
    ToolCall,
    valid_json,
    valid_text,
)
from ..model.history import assistant_message, cut_arguments, missing_replies, without_images
from ..model.retry import RetryPolicy
from ..model.scripted import ScriptError
from ..permissions.modes import Approver
from ..permissions.policy import PermissionPolicy
from ..permissions.rules import Rule
from ..sandbox import Sandbox
from ..session.directory import SERVER_RECORD
from ..session.transcript import Session
from ..tasks import budgets
from ..tasks.model import AgentRef, StoreError
from ..tasks.reminders import reminder_text
from ..tasks.store import TaskStore
from ..tools.base import Tool
from ..tools.channel import FileChannel
from ..tools.context import HIDDEN_ENV, ToolContext
from ..tools.images import Image
from ..tools.ledger import FileLedger
from ..tools.shells import Shells
from ..window.breakdown import Spend, plan_tokens
from ..window.keeper import WindowKeeper
from ..window.tokens import ContextBudget, TokenCounter
from .batch import BatchDeps, BatchRunner, Status
from .guards import CUT_ANSWER, STOPPED_CALL, RepeatGuard, RequestBudget, refusals, stop_notice
from .person_shell import PersonShell
from .side_request import side_answer

log = logging.getLogger(__name__)


@dataclass
class AgentOptions:
    max_turns: int = 200
    """Model requests per user turn before the agent stops (`--max-turns`, `max_turns`)."""
    repeat_limit: int = 5
    """Identical tool calls in a row that count as a loop (`max_repeated_calls`; 0: off)."""
    request_retries: int = 6
    """Retries of a request that failed in a way that may pass (`request_retries`; `retry.py`)."""
    retry_delay: float = 1.0
    """Seconds before the first retry; doubles each time, with jitter."""
    retry_max_wait: float = 60.0
    """Seconds of waiting in all across one request's retries (`request_retry_wait`)."""
    shared: RequestBudget | None = None
    """For a sub-agent: its parent's turn budget, which its requests also spend."""
    check_timeout: float = 600.0
    """Seconds a task's check may run (`check_timeout`)."""

    def retry_policy(self) -> RetryPolicy:
        """How a request (the turn's, or a compaction's summary) that may pass is waited out."""
        return RetryPolicy(self.request_retries, self.retry_delay, self.retry_max_wait)


@dataclass
class Agent:
    model: ChatModel
    tools: Sequence[Tool]
    workspace: Path
    permissions: PermissionPolicy
    system_prompt: str
    session: Session | None = None
    approver: Approver | None = None
    tasks: TaskStore | None = None
    hidden_env: frozenset[str] = HIDDEN_ENV
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    options: AgentOptions = field(default_factory=AgentOptions)
    history: list[Message] = field(default_factory=list)
    busy: bool = False
    budget: ContextBudget = field(default_factory=ContextBudget)
    counter: TokenCounter = field(default_factory=TokenCounter)
    context_tokens: int = 0
    """Prompt plus completion tokens of the latest response (or the estimated size of the
    history, after a resume or a compaction): how full the context is."""
    agent: AgentRef | None = None
    """Who this agent is on the plan: None for the main agent, else the sub-agent."""
    files: FileLedger = field(default_factory=FileLedger)
    """What this agent last read of each file (Edit and Write refuse a stale one)."""
    requests: RequestBudget | None = None
    """The running turn's request budget (its sub-agents spend from it too)."""
    sandbox: Sandbox | None = None
    """Where the model's commands run (`core/sandbox.py`), shared with its sub-agents."""
    plan_line: str = ""
    """The system prompt's line on keeping the plan (counted as the plan's)."""
    shells: Shells | None = None
    """The session's background commands (`core/tools/shells.py`), shared with its sub-agents."""
    images: list[Image] | None = None
    """Images its tools returned, waiting for its next request (a `before_request` provider
    sends them: `core/tools/images.py`); None: the model takes no images."""
    channel: FileChannel | None = None
    """Where the file tools read and write when not the disk (an ACP client's editor)."""
    spend: Spend = field(default_factory=Spend)
    """Prompt tokens this agent's requests took, and the plan's part (from the session on resume)."""
    steering: list[str] = field(default_factory=list)
    """Messages the person sent while the turn runs (`steer`), not yet delivered."""
    _compact_soon: str | None = field(default=None, repr=False)
    """A `/compact` asked for while the turn runs: its focus, done before the next request."""
    _task: asyncio.Task[Any] | None = field(default=None, repr=False)
    _max_tokens: int = field(default=0, repr=False)
    """`max_tokens` of the latest request."""
    _interrupting: bool = field(default=False, repr=False)
    _partial: list[str] = field(default_factory=list, repr=False)
    """The text streamed so far, in pieces: `+=` on an attribute copies the whole text per
    token, which made a 2 MB answer quadratic."""
    _batch: BatchRunner | None = field(default=None, repr=False)
    _on_interrupt: list[Event] = field(default_factory=list, repr=False)
    """Events that close what esc cut short outside a batch (a `!` command's block)."""
    _window: WindowKeeper = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._window = WindowKeeper(self, retry=self._retry_policy)
        if self.session is not None:
            self.history = self.session.messages
            self.spend = Spend.from_record(self.session.spend)
        if self.history:  # a resumed session: its size, before any request measures it
            self.context_tokens = self.prompt_estimate()

    # --- public ---------------------------------------------------------------------

    async def run_turn(
        self, prompt: str, *, note: str = "", limit: TurnLimit | None = None
    ) -> AsyncGenerator[Event, None]:
        """Run one user turn. Consume with `async with aclosing(agent.run_turn(p))`.
        `note`: a message of the harness's sent after the prompt (a goal's terms);
        `limit`: a bound from outside the turn (a goal's budgets)."""
        async for event in self._run(self._turn(prompt, note, limit)):
            yield event

    async def continue_turn(self, content: str, limit: TurnLimit | None = None) -> AsyncGenerator[Event, None]:
        """A turn the harness starts with `content` (a goal sending the model back): no
        prompt hooks, commands or `@` mentions, as the person wrote none of it."""
        turn = _Turn({"role": "user", "content": content}, RepeatGuard(self.options.repeat_limit), limit=limit)

        async def body() -> AsyncIterator[Event]:
            self.append(turn.prompt)
            async for event in self._steps(turn):
                yield event

        async for event in self._run(body()):
            yield event

    async def run_shell(self, command: str) -> AsyncGenerator[Event, None]:
        """The person's own `!command`: run now, no model, no approval (`person_shell.py`)."""
        shell = PersonShell(self.workspace, self.hidden_env, self.lifecycle, self._remember, self._on_interrupt)
        async for event in self._run(self._shell(shell, command)):
            yield event

    async def _shell(self, shell: PersonShell, command: str) -> AsyncIterator[Event]:
        async for event in shell.run(command):
            yield event
        yield TurnEnd("done")

    def _remember(self, content: str) -> str:
        kept = self._window.cap_tool_output(content)
        self.append({"role": "user", "content": kept})
        return kept

    async def compact(self, focus: str = "") -> AsyncGenerator[Event, None]:
        """Compact the history now (`/compact [focus]`); ends with `TurnEnd("done")` or
        `TurnEnd("error")`. Interrupting it leaves the history as it was."""
        async for event in self._run(self._compact_now(focus)):
            yield event

    def prompt_estimate(self) -> int:
        """Tokens the next request would take, as the server would count them."""
        return self.counter.prompt_tokens(self.request_messages(), self.schemas())

    def tool_output_limit(self) -> int:
        """The most characters one tool result (or `@` attachment) may take in this window."""
        return self._window.tool_output_limit()

    def prefix_tokens(self) -> int:
        """The fixed part of every request: system prompt and tool schemas."""
        return self.counter.estimate(self.request_messages()[:1], self.schemas())

    async def _run(self, body: AsyncIterator[Event]) -> AsyncGenerator[Event, None]:
        if self.busy:
            raise RuntimeError("a turn is already running")
        self.busy, self._interrupting = True, False
        self._task = asyncio.current_task()
        try:
            async for event in body:
                yield event
        except asyncio.CancelledError:
            if not self._interrupting or self._task is None:
                raise
            self._task.uncancel()
            for event in self._finish_interrupted():
                yield event
        finally:
            self._repair()
            self.busy, self._task, self._batch = False, None, None

    def compact_soon(self, focus: str = "") -> None:
        """`/compact` while the turn runs (its sub-agents at work): compact before the
        model's next request, once what runs now has come back."""
        self._compact_soon = focus

    def steer(self, text: str) -> None:
        """A message from the person while a turn runs: it goes to the model with the turn's
        next request, after the tool batch now running (for a fan-out of sub-agents, after
        all of them); when the model was about to end the turn, the turn goes on with it.
        What a turn ends without delivering stays in `steering` (the front end sends it next)."""
        self.steering.append(text)

    def interrupt(self) -> None:
        """End the running turn as soon as possible; safe to call at any time."""
        if self._task is not None and not self._interrupting:
            self._interrupting = True
            self._task.cancel()

    # --- the turn -------------------------------------------------------------------

    async def _admit(self, text: str, what: str) -> AsyncIterator[Event | _Admitted]:
        """`text` on its way to the model as the person's words (a prompt, or a message sent
        mid-turn, `what`): the `UserPromptSubmit` hooks, then `prepare_prompt`; the events on
        the way, then `_Admitted`, or, refused, a notice saying why (never sent, never kept:
        the person reads why and may try again)."""
        gate = await run_gates(self.lifecycle.before_prompt, text)
        for event in gate.events:
            yield event
        if gate.block:
            yield Notice(f"{what} not sent: a UserPromptSubmit hook blocked it: {gate.block}", "warning")
            return
        prepared = PreparedPrompt(text)
        if self.lifecycle.prepare_prompt is not None:
            async for item in self.lifecycle.prepare_prompt(text):
                if isinstance(item, PreparedPrompt):
                    prepared = item
                else:
                    yield item
        if prepared.refusal:  # e.g. a custom command whose shell commands were declined
            yield Notice(prepared.refusal, "warning")
            return
        yield _Admitted(prepared, (gate.context,) if gate.context else ())

    async def _turn(self, prompt: str, note: str, limit: TurnLimit | None) -> AsyncIterator[Event]:
        admitted: _Admitted | None = None
        async for item in self._admit(prompt, "prompt"):
            if isinstance(item, _Admitted):
                admitted = item
            else:
                yield item
        if admitted is None:
            yield TurnEnd("blocked")
            return
        prepared = admitted.prepared
        turn = _Turn(
            {"role": "user", "content": prepared.content},
            RepeatGuard(self.options.repeat_limit),
            model=prepared.model,
            allow=tuple(Rule.parse(rule) for rule in prepared.allow),
            limit=limit,
        )
        self.append(turn.prompt)
        for content in [*prepared.follow, *([note] if note else []), *admitted.context]:
            self.append({"role": "user", "content": content})
        async for event in self._steps(turn):
            yield event

    async def _steps(self, turn: _Turn) -> AsyncIterator[Event]:
        """Requests and tool batches until the model ends the turn (and nothing continues it)."""
        limit = turn.limit
        self.requests = RequestBudget(min(self.options.max_turns, limit.requests) if limit else self.options.max_turns)
        while (spent := self._spend_request(limit)) is None:
            response: ModelResponse | None = None
            usage = 0
            async for item in self._step(turn):
                if isinstance(item, ModelResponse):
                    response = item
                else:
                    usage += item.prompt_tokens + item.completion_tokens if isinstance(item, Usage) else 0
                    yield item
            if response is None:
                yield TurnEnd("error")
                return
            turn.answered = True
            if await self._count_request(turn, usage) and self.tasks is not None:
                yield TasksUpdated(self.tasks.snapshot())  # the panel's `budget 3/20 requests`
            calls = self._record_assistant(response)
            yield AssistantMessage(response.content)
            if not calls:
                events, ended = await self._answered(turn, response)
                for event in events:
                    yield event
                if ended:
                    return
                continue
            ended = False
            async for event in self._tool_batch(turn, response, calls):
                ended = isinstance(event, TurnEnd)
                yield event
            if ended:
                return
            if (why := self._went_on(turn)) is not None:
                yield Notice(why, "warning")
                yield TurnEnd("budget")
                return
        why, reason = spent
        yield Notice(why, "warning")
        yield TurnEnd(reason)

    async def _deliver_steering(self) -> AsyncIterator[Event]:
        """Each message the person sent mid-turn, as a prompt would go (the `UserPromptSubmit`
        hook may block it, `@` files are attached), appended after the batch's results."""
        while self.steering:
            text = self.steering.pop(0)
            async for item in self._admit(text, "message"):
                if not isinstance(item, _Admitted):
                    yield item
                    continue
                yield Steered(text)
                for content in (item.prepared.content, *item.prepared.follow, *item.context):
                    self.append({"role": "user", "content": content})

    def _spend_request(self, limit: TurnLimit | None = None) -> tuple[str, EndReason] | None:
        """Take one model request from the turn's budget (and a sub-agent's parent's); why
        the turn stops (and its `TurnEnd` reason), when none is left."""
        assert self.requests is not None
        if self.agent is not None and (why := self._task_used_up()) is not None:
            return why, "budget"  # a sub-agent's task: its budget stops the work on it
        spent = limit.spent() if limit is not None else None
        if spent is not None:
            return spent, "goal"
        if not self.requests.spend():
            if limit is not None and self.requests.limit < self.options.max_turns:
                return limit.exhausted(), "goal"
            return self.requests.exhausted("in this turn"), "max_turns"
        shared = self.options.shared
        if shared is not None and not shared.spend(by_agent=True):
            self.requests.used -= 1  # not made after all
            return shared.exhausted("in the parent's turn, which this sub-agent shares"), "max_turns"
        return None

    def _task_used_up(self) -> str | None:
        """Why the work on this agent's task in progress stops now (its budget), or None."""
        task = self.tasks.current(self.agent) if self.tasks is not None else None
        if task is None or self.tasks is None or (spent := budgets.used_up(task, self.tasks.clock())) is None:
            return None
        return budgets.STOPPED.format(id=task.id, spent=spent)

    async def _count_request(self, turn: _Turn, tokens: int) -> bool:
        """Count the request just answered to this agent's task in progress, when it has a
        budget; whether it was counted (its spend shows). The main agent is told once its task's budget
        is used up (in the batch's first result); if the next response still works on it,
        the turn stops after that batch (`_went_on`)."""
        current = self.tasks.current(self.agent) if self.tasks is not None else None
        if self.tasks is None or current is None or current.budget is None:
            return False  # only a budget needs the count (a write per request)
        try:
            task = await self.tasks.record_request(tokens, self.agent)
        except (StoreError, OSError):  # a count that cannot be saved is not worth the turn
            log.exception("could not count a request to its task")
            return False
        if task is None:
            return False
        spent = budgets.used_up(task, self.tasks.clock())
        if spent is None or self.agent is not None:  # a sub-agent is stopped before its next request
            return True
        if task.id in turn.budget_told:
            turn.budget_stop = task.id
        else:
            turn.budget_told.add(task.id)
            turn.budget_note = budgets.TOLD.format(id=task.id, spent=spent)
        return True

    def _went_on(self, turn: _Turn) -> str | None:
        """After a batch: why the turn stops, when the model went on with a task whose budget
        it had been told was used up (and still is)."""
        stop, turn.budget_stop, turn.budget_note = turn.budget_stop, "", ""
        task = self.tasks.current(self.agent) if stop and self.tasks is not None else None
        if task is None or task.id != stop:
            return None
        return self._task_used_up()

    async def _tool_batch(self, turn: _Turn, response: ModelResponse, calls: list[ToolCall]) -> AsyncIterator[Event]:
        """Run one response's tool calls (unless the repeated-call guard stops the turn);
        ends with a `TurnEnd` when the turn ends here."""
        verdict = turn.guard.check(calls)
        if verdict == "stop":
            for message in missing_replies(self.history, STOPPED_CALL):
                self.append(message, "cancelled")
            yield Notice(stop_notice(calls, turn.guard.count, self.tools), "warning")
            yield TurnEnd("loop")
            return
        cut = response.finish_reason == "length"
        refused = refusals(calls, cut=cut, verdict=verdict, count=turn.guard.count, limit=self._max_tokens)
        self._batch = BatchRunner(self._batch_deps(turn), calls, refused)
        results: dict[str, str] = {}
        async for event in self._batch.run():
            if isinstance(event, ToolFinished):
                results[event.call_id] = event.output
            yield event
        if verdict == "ok":  # a refused repeat got no result of its own to compare
            turn.guard.observe([results.get(c.id, "") for c in calls])
        if self._batch.rejected:
            yield TurnEnd("rejected")
            return
        async for event in self._deliver_steering():  # every call has its result: the person's word now
            yield event

    async def _answered(self, turn: _Turn, response: ModelResponse) -> tuple[list[Event], bool]:
        """The model answered without tool calls: the events to show, and whether the turn
        ends (False: a turn-end check or a `stop` gate continued it)."""
        if response.finish_reason == "length":
            cut = Notice(CUT_ANSWER.format(limit=self._max_tokens), "warning")
            return [cut, TurnEnd("length", response.content)], True
        if self.steering:  # the person said something meanwhile: the turn goes on with it
            return [event async for event in self._deliver_steering()], False
        events: list[Event] = []
        # A goal's turn is judged by the goal (`core/goal.py`), which names all that is left.
        judged = turn.limit is not None
        follow_up = None if judged else self.lifecycle.check_turn_end(TurnState(self.history, turn.continuations))
        reminded = reminder_text({"role": "user", "content": follow_up}) if follow_up is not None else None
        if follow_up is None:
            stop = await run_gates(self.lifecycle.stop, StopState(response.content, turn.stops))
            events.extend(stop.events)
            if not stop.block:
                return [*events, TurnEnd("done", response.content)], True
            follow_up, turn.stops = stop.block, turn.stops + 1
        turn.continuations += 1
        self.append({"role": "user", "content": follow_up})
        if reminded:  # the stop check's words, not a stop hook's (the hook's result shows those)
            events.append(Reminded(reminded))
        return events, False

    async def _step(self, turn: _Turn) -> AsyncIterator[Event | ModelResponse]:
        """One model request: compact if due, append reminders, ask. A request the server
        refuses as too long is retried once after compacting."""
        if self._compact_soon is not None:
            focus, self._compact_soon = self._compact_soon, None
            async for event in self._window.compact("manual", focus):
                yield event
        elif self._window.compaction_due():
            async for event in self._window.compact("auto"):
                yield event
        overflow: list[ContextOverflowError] = []
        for attempt in (1, 2):
            async for item in self._ask(turn, overflow):
                yield item
            if not overflow or attempt == 2:
                break
            for event in self._window.learn_window(overflow[-1]):
                yield event
            compacted = False
            async for event in self._window.compact("overflow"):
                compacted = compacted or isinstance(event, Compacted)
                yield event
            if not compacted:
                break
        if overflow:  # refused again, or could not compact
            dropped = self._drop_unsent(turn)
            yield Error(
                f"the conversation does not fit the model's context window ({overflow[-1].message}): use /compact "
                f"(optionally saying what to keep) or /new to start over{dropped}"
            )

    async def _ask(self, turn: _Turn, overflow: list[ContextOverflowError]) -> AsyncIterator[Event | ModelResponse]:
        """Reminders, the fit check, the request. A refusal as too long is put in `overflow`."""
        overflow.clear()
        for message in self.lifecycle.collect_before_request(self.history):
            self.append(message)
            if (text := reminder_text(message)) is not None:
                yield Reminded(text)
        if (problem := self.budget.prefix_problem(self.prefix_tokens())) is not None:
            dropped = self._drop_unsent(turn)
            yield Error(problem + dropped)
            return
        async for item in self._call_model(turn.model):
            if isinstance(item, ContextOverflowError):
                overflow.append(item)
            else:
                yield item

    def _retry_policy(self) -> RetryPolicy:
        """The options' policy as they are now (a sub-agent's or a test's may be replaced)."""
        return self.options.retry_policy()

    async def _call_model(
        self, turn_model: ChatModel | None, bare: list[Message] | None = None
    ) -> AsyncIterator[Event | ModelResponse | ContextOverflowError]:
        """One model request (on the turn's own model when it has one), retried (with
        backoff, in view) when it failed in a way that may pass. A refusal as too long is
        handed back (not retried here: the history must shrink first). A request refused
        with an image in it is sent again once without its images (`bare`: the history so),
        and if that is answered the history keeps them out (`_again_without_images`)."""
        schemas = self.schemas()
        options = self.options
        policy = self._retry_policy()
        waited = 0.0
        for attempt in range(1, options.request_retries + 2):
            self._partial = []
            messages = self.request_messages(bare)
            self._max_tokens = self.budget.max_tokens_for(self.counter.prompt_tokens(messages, schemas))
            try:
                async for piece in self._one_request(turn_model or self.model, messages, schemas):
                    yield piece
                return
            except ContextOverflowError as exc:
                self._partial = []
                yield exc
                return
            except ModelError as exc:
                if bare is None and (bare := without_images(self.history, exc.status)) is not None:
                    async for again in self._again_without_images(turn_model, bare, exc):
                        yield again
                    return
                wait = policy.next_wait(attempt, waited, exc.retry_after) if exc.retryable else None
                if wait is None or wait.seconds is None:
                    self._partial = []
                    yield Error(f"{exc.message} ({wait.why})" if wait is not None and wait.why else exc.message)
                    return
                if self._partial:
                    self._partial = []  # void: an interrupt during the wait must not save it
                    yield ResponseDiscarded(exc.message, attempt)
                yield Retrying(exc.reason, exc.message, wait.seconds, attempt, options.request_retries)
                await asyncio.sleep(wait.seconds)  # cancelled at once by an interrupt (esc)
                waited += wait.seconds
            except ScriptError as exc:
                yield Error(str(exc))
                return
            except Exception as exc:  # a model client bug or output nobody foresaw: end the turn, keep the session
                log.exception("model stream failed")
                self._partial = []
                yield Error(f"the model's response could not be read ({type(exc).__name__}: {exc})")
                return

    async def _one_request(
        self, model: ChatModel, messages: list[Message], schemas: list[dict[str, Any]]
    ) -> AsyncIterator[Event | ModelResponse]:
        """The response's pieces as events, then what the answer brings, then the answer."""
        async for item in model.stream(messages, schemas, max_tokens=self._max_tokens):
            if not isinstance(item, ModelResponse):
                yield self._delta(item)
                continue
            self._partial = []
            for event in self._answered_events(model, item, messages, schemas):
                yield event
            yield item
            return
        raise ModelError("the model stream ended without a response", retryable=True)

    def _answered_events(
        self, model: ChatModel, response: ModelResponse, messages: list[Message], schemas: list[dict[str, Any]]
    ) -> list[Event]:
        """What an answer brings before it joins the history: what the client changed for
        its server (notices, remembered in the session), then its usage."""
        events: list[Event] = [Notice(notice, "warning") for notice in response.notices]
        if response.notices:
            self._remember_server(model)
        usage = self._usage(response, messages, schemas)
        self.context_tokens = usage.prompt_tokens + usage.completion_tokens
        plan = plan_tokens(messages, schemas, usage.prompt_tokens, self.plan_line)
        self.spend.add(usage.prompt_tokens, plan)
        if self.session is not None:
            self.session.note(self.spend.record())
        return [*events, replace(usage, plan_tokens=plan)]

    def _remember_server(self, model: ChatModel) -> None:
        """Write what the client learned of its server into the session, so `--continue`
        starts from it (`Session.server_facts`)."""
        learned = getattr(model, "learned", None)
        facts = learned() if callable(learned) else {}
        if self.session is not None and isinstance(facts, dict) and facts:
            self.session.note({"type": SERVER_RECORD, "model": model.name, "learned": facts})

    def _delta(self, item: str | Reasoning) -> TextDelta | ReasoningDelta:
        """A streamed piece as its event; the answer's text is also kept for an interrupt."""
        if isinstance(item, Reasoning):
            return ReasoningDelta(item.text)
        self._partial.append(item)
        return TextDelta(item)

    async def _again_without_images(
        self, turn_model: ChatModel | None, bare: list[Message], refused: ModelError
    ) -> AsyncIterator[Event | ModelResponse | ContextOverflowError]:
        yield Notice(
            f"the model's server refused a request that carried images ({refused.message}): it is sent again "
            "without them, and they stay out of the conversation if that is answered",
            "warning",
        )
        async for item in self._call_model(turn_model, bare):
            if isinstance(item, ModelResponse):  # before the answer joins the history after them
                self._keep_without_images(bare)
            yield item

    def _keep_without_images(self, bare: list[Message]) -> None:
        """The history as it was answered without its images: so in the session too, from
        the first message that changed on (a refused image sent with every later request,
        `--continue` included, had each of them refused)."""
        pairs = enumerate(zip(self.history, bare, strict=True))
        start = next((i for i, (kept, sent) in pairs if kept is not sent), len(bare))
        if self.session is not None:
            self.session.rewind(start)
        else:
            del self.history[start:]
        for message in bare[start:]:
            self.append(message)

    # --- compaction -----------------------------------------------------------------

    async def _compact_now(self, focus: str) -> AsyncIterator[Event]:
        failed = False
        async for event in self._window.compact("manual", focus):
            failed = failed or (isinstance(event, Notice) and event.level == "error")
            yield event
        yield TurnEnd("error" if failed else "done")

    def _drop_unsent(self, turn: _Turn) -> str:
        """Take back the turn's prompt if the model has not answered it (`WindowKeeper.take_back`)."""
        return "" if turn.answered else self._window.take_back(turn.prompt)

    def _record_assistant(self, response: ModelResponse) -> list[ToolCall]:
        message, calls = assistant_message(self.history, response)
        limit = self._window.tool_output_limit()  # a call's arguments are held as its result is
        for call in message.get("tool_calls") or []:
            function = call["function"]
            kept = cut_arguments(function["arguments"], limit)
            self.counter.answer_cut(len(function["arguments"]) - len(kept))
            function["arguments"] = kept
        self.append(message)
        return calls

    # --- helpers --------------------------------------------------------------------

    def request_messages(self, history: Sequence[Message] | None = None) -> list[Message]:
        """What a request sends: the system prompt, then `history` (by default the agent's own)."""
        return [{"role": "system", "content": self.system_prompt}, *(self.history if history is None else history)]

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self.tools]

    def _batch_deps(self, turn: _Turn) -> BatchDeps:
        return BatchDeps(
            self.tools,
            self.permissions,
            self.approver,
            self.lifecycle,
            lambda call_id: self._tool_context(call_id, turn),
            lambda call_id, output, status: self._record(call_id, self._with_budget_note(turn, output), status),
            lambda: self.sandbox is not None and self.sandbox.active != "off",
            turn.allow,
        )

    @staticmethod
    def _with_budget_note(turn: _Turn, output: str) -> str:
        """`output` with the note that the task's budget is used up, on the batch's first result."""
        note, turn.budget_note = turn.budget_note, ""
        return f"{output}\n\n{note}" if note else output

    def _tool_context(self, call_id: str, turn: _Turn) -> ToolContext:
        gates = self.lifecycle.task_change
        model = turn.model or self.model

        async def ask_model(system: str, question: str) -> str:
            return await side_answer(model, self.budget, self.counter, system, question)

        return ToolContext(
            call_id,
            self.workspace,
            self.session,
            self.tasks,
            self.hidden_env,
            read_denied=self.permissions.read_denied,
            command_denied=self.permissions.command_denied,
            check_timeout=self.options.check_timeout,
            task_gates=gates if gates else None,
            agent=self.agent,
            files=self.files,
            host_allowed=lambda host: self.permissions.host_named(host, turn.allow),
            ask_model=ask_model,
            sandbox=self.sandbox,
            shells=self.shells,
            images=self.images,
            channel=self.channel,
        )

    def _record(self, call_id: str, output: str, status: Status) -> str:
        """A tool result into history, cut to fit first (one huge result must not fill the window)."""
        kept = valid_text(self._window.cap_tool_output(output))
        self.append({"role": "tool", "tool_call_id": call_id, "content": kept}, status)
        return kept

    def append(self, message: Message, status: str | None = None) -> None:
        """Add to history (and the session file). `status` is how a tool call ended.

        Lone surrogates (from a server's tool arguments, a hook's JSON, a file name) become
        U+FFFD here, as in every request (`OpenAIChatModel`): the session holds what was sent."""
        message = valid_json(message)
        if self.session is not None:
            self.session.append(message, status)
        else:
            self.history.append(message)

    def _repair(self) -> None:
        """Answer every unanswered tool call (cancelled) so the history stays valid."""
        partial, self._partial = "".join(self._partial), []
        if partial:
            self.append({"role": "assistant", "content": partial + "\n\n[interrupted by the user]"})
        for message in missing_replies(self.history):
            self.append(message, "cancelled")

    def _finish_interrupted(self) -> list[Event]:
        events: list[Event] = list(self._on_interrupt)
        self._on_interrupt.clear()
        if self._batch is not None:
            events.extend(self._batch.cancel_remaining())
        self._repair()
        events.append(Notice("interrupted: the rest of this turn was cancelled", "warning"))
        events.append(TurnEnd("interrupted"))
        return events

    def _usage(self, response: ModelResponse, messages: list[Message], schemas: list[dict[str, Any]]) -> Usage:
        """The response's usage as the server reported it, else an estimate; either way the
        counter learns from it."""
        if response.usage is not None and response.usage.prompt_tokens > 0:
            self.counter.observe(messages, schemas, response.usage)
            usage = response.usage
            return Usage(
                usage.prompt_tokens,
                usage.completion_tokens,
                cached_tokens=usage.cached_tokens,
                reasoning_tokens=usage.reasoning_tokens,
            )
        completion_chars = len(response.content) + sum(len(c.arguments) for c in response.tool_calls)
        prompt = self.counter.prompt_tokens(messages, schemas)  # still anchored on the last measured count
        return Usage(prompt, max(1, self.counter.tokens(completion_chars)), estimated=True)


@dataclass(frozen=True)
class _Admitted:
    """A prompt or a mid-turn message the hooks let through, as it goes to the model."""

    prepared: PreparedPrompt
    context: tuple[str, ...] = ()
    """The hooks' words for the model, sent after it."""


@dataclass
class _Turn:
    """What one user turn keeps track of: this agent's alone. A sub-agent's loop runs
    turns of its own under the same gate, so nothing of a turn lives on a shared object."""

    prompt: Message
    guard: RepeatGuard
    model: ChatModel | None = None
    """The turn's model when a custom command chose one (`PreparedPrompt.model`)."""
    allow: tuple[Rule, ...] = ()
    """Rules allowed for this turn only (a custom command's `allowed-tools`)."""
    continuations: int = 0
    stops: int = 0
    """How many times `stop` gates continued this turn."""
    answered: bool = False
    """Whether the model has answered anything in this turn yet."""
    limit: TurnLimit | None = None
    """A bound from outside the turn (a goal's budgets)."""
    budget_told: set[str] = field(default_factory=set)
    """Tasks whose used-up budget the model has been told about in this turn."""
    budget_note: str = ""
    """That note, waiting for the batch's first result."""
    budget_stop: str = ""
    """The task the model went on with after being told: the turn stops after this batch."""


@dataclass(frozen=True)
class TurnLimit:
    """What a goal (`core/goal.py`) bounds one of its turns by: at most `requests` model
    requests (sub-agents' included, as they spend from the turn's budget), and `spent`,
    asked before each request: why to stop now (tokens or minutes), or None."""

    requests: int
    spent: Callable[[], str | None]
    exhausted: Callable[[], str]
    """Why the turn stopped when it made its `requests`."""
