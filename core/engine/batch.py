"""Running one response's tool calls: approval, concurrency, results, queued events.

Each call's permission is decided immediately before it runs, never earlier: a command
earlier in the batch may have changed what a path means (a symlink made by an allowed
`git checkout`). Consecutive file/search reads that are allowed at that moment run
concurrently with each other, but never ahead of an earlier write or command; any call
that may need approval runs alone, in order, after the awaited approval. Events that
tools `emit()` are forwarded once, after the whole batch, coalesced so the batch
yields at most one event of each coalescable kind (its final state).

Consecutive calls of a fan-out tool (`Agent`: each runs a sub-agent) run side by side,
each gated and decided on its own; while they run, the events they show live (`ctx.live`:
a sub-agent's progress) are yielded as they come, not held until the batch ends. An
interrupt cancels them; what each had done by then (`ctx.interrupted_output`) becomes its
result, after "cancelled".

Lifecycle gates (`PreToolUse`/`PostToolUse` hooks): `before_tool` is asked first, ahead
of the permission check, as in Claude Code (a hook can refuse a call nobody has been
asked about yet, and the person is never asked about a call a hook refuses); a block
answers the call with the gate's reason as a `denied` error. `after_tool` runs after a
call that ran (ok or error) and may add to its result. Their events are yielded just
before the call's `ToolFinished`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..access import WRITES, Declared
from ..events import COALESCED_KINDS, Event, ToolFinished, ToolStarted
from ..lifecycle import Lifecycle, ToolOutput, ToolRecord, ToolUse, run_gates
from ..model.base import ToolCall
from ..model.history import CANCELLED
from ..permissions.modes import ApprovalAnswer, ApprovalRequest, Approver
from ..permissions.policy import SHELL, Decision, PermissionPolicy
from ..permissions.rules import Rule
from ..sandbox import MARK as SANDBOX_MARK
from ..tools.base import Tool, parse_arguments
from ..tools.context import ToolContext
from ..tools.ledger import FileLedger
from ..tools.results import ToolError, ToolResult
from ..tools.walk import open_regular

log = logging.getLogger(__name__)

NO_APPROVER = "denied: this call needs approval and nobody can be asked in headless mode."
BYPASS = "--permission-mode bypassPermissions"


@dataclass
class Prepared:
    call: ToolCall
    tool: Tool | None
    args: dict[str, Any]
    """As the model sent them (what hooks, summaries and the history see)."""
    error: str | None
    checked: dict[str, Any] = field(default_factory=dict)
    """As the tool will read them (`Tool.check`): what the permission gate judges."""

    @property
    def is_read(self) -> bool:
        # Only file/search reads overlap. Task tools run in order, so a TaskList after a
        # TaskCreate in the same response sees the new task.
        return self.error is None and self.tool is not None and self.tool.kind == "read"

    @property
    def fans_out(self) -> bool:
        return self.error is None and self.tool is not None and self.tool.fan_out


Status = Literal["ok", "error", "denied", "cancelled"]


@dataclass(frozen=True)
class BatchDeps:
    """What a batch needs from the agent that runs it."""

    tools: Sequence[Tool]
    permissions: PermissionPolicy
    approver: Approver | None
    """Asks the person about a call; None: nobody can be asked (headless)."""
    lifecycle: Lifecycle
    context: Callable[[str], ToolContext]
    """The per-call context for a call id."""
    record: Callable[[str, str, Status], str]
    """Puts a call's result (call id, output, status) into history; returns the output as
    kept there (a huge one is cut to fit the window)."""
    sandboxed: Callable[[], bool] = lambda: False
    """Whether commands run in the OS sandbox now: their block says so (`⛶`)."""
    turn_allow: Sequence[Rule] = ()
    """What this agent's running turn alone allows (a custom command's `allowed-tools`):
    handed to the shared gate with each decision, so no other agent's turn can end it."""


@dataclass(frozen=True)
class Outcome:
    output: str
    status: Status
    elapsed: float = 0.0
    events: tuple[Event, ...] = ()
    """From the call's hooks, for the person."""

    @property
    def is_error(self) -> bool:
        return self.status != "ok"


class BatchRunner:
    def __init__(self, deps: BatchDeps, calls: Sequence[ToolCall], refused: Mapping[str, str] | None = None) -> None:
        """`refused`: call id → the error result of a call that must not run (cut off at the
        output limit, or repeated once too often; `core/engine/guards.py`)."""
        self.deps = deps
        # The gate learns what the tools it judges declare, so a rule naming one of them
        # covers its family (`Grep(secrets/**)` every read) in any agent, a sub-agent's too.
        deps.permissions.know(deps.tools)
        self.refused = refused or {}
        self.prepared = [self._prepare(call) for call in calls]
        self.rejected = False
        self.queued: list[Event] = []
        self.answered: set[str] = set()
        self.partial: dict[str, str] = {}
        """Call id → what an interrupted call had done (its `ctx.interrupted_output`)."""
        self._live: asyncio.Queue[Event] = asyncio.Queue()

    async def run(self) -> AsyncIterator[Event]:
        position = 0
        while position < len(self.prepared) and not self.rejected:
            group = self._next_group(position)
            position += len(group)
            for item in group:
                yield self._started(item)
            if (live := self._live_work(group)) is not None:  # each call finished among the live events
                async for shown in self._showing_live(live):
                    yield shown
                continue
            if len(group) == 1:
                outcomes = [await self._run_one(group[0])]
            else:
                outcomes = list(await asyncio.gather(*(self._run_read(item) for item in group)))
            for item, outcome in zip(group, outcomes, strict=True):
                for event in outcome.events:
                    yield event
                yield self._finish(item, outcome)
        for item in self.prepared:
            if item.call.id not in self.answered:
                yield self._finish(
                    item, Outcome("cancelled: the user rejected an earlier call in this batch", "cancelled")
                )
        for event in self.flush_events():
            yield event

    def cancel_remaining(self) -> list[Event]:
        """After an interrupt: finish every unanswered call as cancelled (with what it had
        done, when it said), then flush."""
        events: list[Event] = [
            self._finish(item, Outcome(_cancelled(self.partial.get(item.call.id, "")), "cancelled"))
            for item in self.prepared
            if item.call.id not in self.answered
        ]
        return events + self.flush_events()

    async def _fan_out(self, group: Sequence[Prepared]) -> None:
        """Run the calls side by side, each finished (its result in history and shown) as
        soon as it ends: one sub-agent's result does not wait for its slower siblings, so
        results enter history in the order they come. Cancelled, it returns only once every
        call has wound down: each may be settling its sub-agent (a gather without
        `return_exceptions` would end with the first call that re-raised)."""

        done = await asyncio.gather(*(self._one_live(item) for item in group), return_exceptions=True)
        for failure in done:
            if isinstance(failure, BaseException):
                raise failure

    def _live_work(self, group: Sequence[Prepared]) -> Awaitable[None] | None:
        """The group's run, when its calls show events while they run: `Agent` calls side by
        side, or one call of a `live` tool (a command's output); None for any other group."""
        if group[0].fans_out:
            return self._fan_out(group)
        tool = group[0].tool
        if len(group) == 1 and tool is not None and tool.live:
            return self._one_live(group[0])
        return None

    async def _one_live(self, item: Prepared) -> None:
        """A call that shows its progress (`Tool.live`), finished among its live events."""
        outcome = await self._run_one(item)
        for event in outcome.events:
            self._live.put_nowait(event)
        self._live.put_nowait(self._finish(item, outcome))

    async def _showing_live(self, work: Awaitable[None]) -> AsyncIterator[Event]:
        """Await `work`, yielding the events its calls show live meanwhile. Cancelled, it
        cancels `work` and waits for it to wind down (so every call can say what it had
        done); events shown meanwhile go out with the rest of the batch."""
        running = asyncio.ensure_future(work)
        try:
            while True:
                arrival = asyncio.ensure_future(self._live.get())
                await asyncio.wait({running, arrival}, return_when=asyncio.FIRST_COMPLETED)
                if arrival.done():
                    yield arrival.result()
                    while not self._live.empty():  # what came meanwhile, without a wait per event
                        yield self._live.get_nowait()
                    continue
                arrival.cancel()
                while not self._live.empty():
                    yield self._live.get_nowait()
                running.result()  # raises what the calls raised
                return
        finally:
            if not running.done():
                running.cancel()
                await asyncio.gather(running, return_exceptions=True)
            while not self._live.empty():
                self.queued.append(self._live.get_nowait())

    def flush_events(self) -> list[Event]:
        last_of_kind: dict[type, int] = {}
        for index, event in enumerate(self.queued):
            if isinstance(event, COALESCED_KINDS):
                last_of_kind[type(event)] = index
        kept = [
            e for i, e in enumerate(self.queued) if not isinstance(e, COALESCED_KINDS) or last_of_kind[type(e)] == i
        ]
        self.queued = []
        return kept

    # --- steps ----------------------------------------------------------------------

    def _prepare(self, call: ToolCall) -> Prepared:
        tool = next((t for t in self.deps.tools if t.name == call.name), None)
        if call.id in self.refused:
            return Prepared(call, tool, {}, self.refused[call.id])
        if tool is None:
            names = ", ".join(t.name for t in self.deps.tools)
            return Prepared(call, None, _as_sent(call), f"Error: unknown tool '{call.name}'. Available tools: {names}")
        try:
            args = parse_arguments(call.arguments)
        except ToolError as exc:
            return Prepared(call, tool, {}, f"Error: {exc}")
        try:  # bad arguments are the model's to fix: nobody is asked about a call that cannot run
            checked = tool.check(args)
        except ToolError as exc:
            return Prepared(call, tool, args, f"Error: {exc}")
        return Prepared(call, tool, args, None, checked)

    def _next_group(self, start: int) -> list[Prepared]:
        """The calls to run next, from `start`: the fan-out calls there, or the reads there
        that are allowed right now (decided now, after everything before them has run), or
        else the one call there."""
        rest = self.prepared[start:]
        if rest[0].fans_out:
            return rest[: next((n for n, item in enumerate(rest) if not item.fans_out), len(rest))]
        group: list[Prepared] = []
        for item in self.prepared[start:]:
            if not (item.is_read and item.tool is not None):
                break
            if self.deps.permissions.decide(item.tool, item.checked, self.deps.turn_allow).verdict != "allow":
                break
            group.append(item)
        return group or [self.prepared[start]]

    def _started(self, item: Prepared) -> ToolStarted:
        return ToolStarted(item.call.id, item.call.name, item.args, self._summary(item))

    def _boxed(self, item: Prepared) -> bool:
        """Whether this call is a command that will run in the sandbox."""
        outside = item.checked.get("sandbox") is False
        return item.tool is not None and item.tool.name == "Bash" and not outside and self.deps.sandboxed()

    def _summary(self, item: Prepared) -> str:
        if item.tool is not None:
            try:
                summary = item.tool.summarize(item.args)
                return f"{SANDBOX_MARK} {summary}" if self._boxed(item) else summary
            except Exception:  # a summary is cosmetic; never let it break the batch
                log.exception("summarize failed for %s", item.call.name)
        return ""

    async def _before_tool(self, item: Prepared) -> Outcome | None:
        """The `before_tool` gates; an outcome when they refuse the call."""
        gates = self.deps.lifecycle.before_tool
        if not gates or item.error is not None or item.tool is None:
            return None
        verdict = await run_gates(gates, ToolUse(item.call.id, item.call.name, item.args))
        if verdict.block:
            return Outcome(verdict.block, "denied", events=verdict.events)
        return Outcome("", "ok", events=verdict.events) if verdict.events else None

    async def _run_read(self, item: Prepared) -> Outcome:
        """A call of a concurrent group: it is allowed already; the gates still have a say."""
        gated = await self._before_tool(item)
        if gated is not None and gated.status == "denied":
            return gated
        return _with_events(await self._execute(item), gated)

    async def _run_one(self, item: Prepared) -> Outcome:
        gated = await self._before_tool(item)
        if gated is not None and gated.status == "denied":
            return gated
        return _with_events(await self._decide_and_run(item), gated)

    async def _decide_and_run(self, item: Prepared) -> Outcome:
        if item.error is not None or item.tool is None:
            return await self._execute(item)
        decision = self.deps.permissions.decide(item.tool, item.checked, self.deps.turn_allow)
        if decision.verdict == "deny":
            return Outcome(f"denied: {decision.reason}", "denied")
        if decision.verdict == "ask":
            answer = await self._ask(item, decision.reason, decision.outside_workspace)
            if answer is None:
                return Outcome(self._headless_denial(item.tool, item.checked, decision), "denied")
            if answer.decision in ("no", "never"):
                if answer.decision == "never" and (rule := self._suggested_rule(item)):
                    self.deps.permissions.add_session_deny(rule)
                self.rejected = True
                return Outcome("The user rejected this tool call and stopped the turn.", "denied")
            if answer.decision == "feedback":
                return Outcome(f"The user rejected this tool call with feedback: {answer.feedback}", "denied")
            if rule := self._rule_to_add(item, answer.decision):
                self.deps.permissions.add_session_rule(rule)
        if (refused := await self._decide_commands(item)) is not None:
            return refused
        return await self._execute(item)

    async def _decide_commands(self, item: Prepared) -> Outcome | None:
        """The commands a call sets to run later (a task's check, `Tool.commands`), each
        judged as a Bash call of it; an outcome when one is refused."""
        assert item.tool is not None
        if item.tool.commands is None:
            return None
        try:
            asks = item.tool.commands(item.args, self.deps.context(item.call.id))
        except ToolError:
            return None  # the call itself fails with this error, so nothing is set
        gate = self.deps.permissions
        for what, command in asks:
            decision = gate.decide_check(command, self.deps.turn_allow)
            if decision.verdict == "deny":
                return Outcome(f"denied: cannot {what}: {decision.reason}. The task list is unchanged.", "denied")
            if decision.verdict == "allow":
                continue
            rule = gate.suggest_rule(SHELL, {"command": command})
            request = ApprovalRequest(
                tool=item.tool.name,
                arguments=item.args,
                summary=f"{what[0].upper()}{what[1:]}: it will run as a shell command",
                preview=command,
                preview_kind="command",
                outside_workspace=False,
                suggested_rule=rule,
                reason=f"a task's check runs as a command; {decision.reason}",
                call_id=item.call.id,
            )
            answer = await self.deps.approver(request) if self.deps.approver is not None else None
            if answer is None:
                return Outcome(self._headless_denial(SHELL, {"command": command}, decision), "denied")
            if answer.decision in ("no", "never"):
                if answer.decision == "never" and rule:
                    gate.add_session_deny(rule)
                self.rejected = True
                return Outcome("The user rejected this tool call and stopped the turn.", "denied")
            if answer.decision == "feedback":
                return Outcome(f"The user rejected this tool call with feedback: {answer.feedback}", "denied")
            if answer.decision == "always" and rule:
                gate.add_session_rule(rule)
        return None

    def _headless_denial(self, tool: Declared, args: Mapping[str, Any], decision: Decision) -> str:
        """Why a call nobody could be asked about was denied, and what would allow this very
        call (acceptEdits only where it would: it runs no command and no MCP tool)."""
        gate = self.deps.permissions
        rule = gate.suggest_rule(tool, args)
        named = f"an allow rule `{rule}`" if rule and len(rule) <= 200 else "an allow rule naming it"
        reason = decision.reason
        if "changes to it always ask" in reason or "is not a path that can be checked" in reason:
            allows = f"no rule or acceptEdits allows it: only {BYPASS} runs it unasked (or the person makes it)"
        elif reason.startswith("this command cannot be checked against the deny rules"):
            exact = f" (`{rule}`)" if rule.startswith("Bash(") and not rule.endswith(":*)") and len(rule) <= 200 else ""
            allows = f"only an allow rule naming exactly this command{exact} (bypassPermissions denies it too)"
        elif server_rule := gate.server_rule(tool.name):
            allows = (
                f"an allow rule `{tool.name}` (this tool) or `{server_rule}` (every tool of its server), or {BYPASS}"
            )
        elif decision.outside_workspace:
            allows = f"{named} (an absolute path rule) in [permissions], or {BYPASS}"
        elif tool.kind == "edit" and gate.mode == "default" and any(use in WRITES for use in tool.paths.values()):
            allows = f"--permission-mode acceptEdits, {named} in [permissions], or {BYPASS}"
        else:
            allows = f"{named} in [permissions], or {BYPASS}"
        return f"{NO_APPROVER} It asks because {reason}. What would allow it: {allows}."

    async def _ask(self, item: Prepared, reason: str, outside: bool) -> ApprovalAnswer | None:
        approver = self.deps.approver
        if approver is None or item.tool is None:
            return None
        preview, kind = await self._preview(item)
        # The model's own words for why (Bash's `description`) say more than the shortened command.
        description = item.args.get("description")
        summary = description.strip() if isinstance(description, str) and description.strip() else ""
        if server_rule := self.deps.permissions.server_rule(item.call.name):  # its own arguments are the preview
            server = server_rule.removeprefix("mcp__")
            summary = f"MCP server {server} · tool {item.call.name.removeprefix(server_rule + '__')}"
        request = ApprovalRequest(
            tool=item.tool.name,
            arguments=item.args,
            summary=summary or self._started(item).summary,
            preview=preview,
            preview_kind=kind,
            outside_workspace=outside,
            suggested_rule=self._suggested_rule(item),
            reason=f"{reason} · it runs in the sandbox ({SANDBOX_MARK})" if self._boxed(item) else reason,
            server_rule=self.deps.permissions.server_rule(item.call.name),
            call_id=item.call.id,
        )
        return await approver(request)

    def _rule_to_add(self, item: Prepared, decision: str) -> str:
        """The rule an "always" answer adds: none for a write to a protected path (it asks
        whatever the rules say), none for any other answer."""
        if decision == "always":
            return self._suggested_rule(item)
        if decision == "always_server":
            return self.deps.permissions.server_rule(item.call.name)
        return ""

    def _suggested_rule(self, item: Prepared) -> str:
        if item.tool is None:
            return item.call.name
        return self.deps.permissions.suggest_rule(item.tool, item.checked)

    async def _preview(self, item: Prepared) -> tuple[str, Literal["diff", "command", "text"]]:
        if item.tool is not None and item.tool.preview is not None:
            try:  # a diff of a big file takes a while: keep the event loop (and the UI) free
                return await asyncio.to_thread(item.tool.preview, item.args, self.deps.context(item.call.id)), "diff"
            except Exception as exc:  # a preview must never block the approval itself
                return f"(no preview: {exc})", "text"
        if item.call.name == "Bash":
            return str(item.args.get("command", "")), "command"
        if self.deps.permissions.server_rule(item.call.name):  # an MCP server's tool: its arguments, whole
            return json.dumps(item.args, indent=2, ensure_ascii=False), "text"
        return "", "text"

    async def _execute(self, item: Prepared) -> Outcome:
        if item.error is not None or item.tool is None:
            return Outcome(item.error or "Error: unknown tool", "error")
        ctx = self.deps.context(item.call.id)
        if item.tool.fan_out or item.tool.live:  # only these are awaited while their events are shown
            ctx.live = self._live.put_nowait
        self.queued.extend(await self.deps.lifecycle.notify_tool_start(self._record(item, 0.0, False)))
        started = time.monotonic()
        try:
            result = await item.tool.run(item.args, ctx)
        except ToolError as exc:
            result = ToolResult(f"Error: {exc}", is_error=True)
        except asyncio.CancelledError:
            # Interrupted (esc): what the call did until then still belongs to its task
            # (the files a command changed, to review and rewind; its time).
            self.queued.extend(ctx.pending_events)
            if ctx.interrupted_output:
                self.partial[item.call.id] = ctx.interrupted_output
            record = self._record(item, time.monotonic() - started, True)
            self.queued.extend(await self.deps.lifecycle.notify_tool_done(record))
            raise
        except Exception as exc:  # a tool bug must not end the session; the model sees it
            log.exception("tool %s crashed", item.tool.name)
            result = ToolResult(f"Error: {item.tool.name} failed unexpectedly: {type(exc).__name__}: {exc}", True)
        elapsed = time.monotonic() - started
        self.queued.extend(ctx.pending_events)
        if isinstance(result, str):
            result = ToolResult(result)
        record = self._record(item, elapsed, result.is_error)
        self.queued.extend(await self.deps.lifecycle.notify_tool_done(record))
        output = "\n\n".join([result.output, *record.notes]) if record.notes else result.output
        outcome = Outcome(output, "error" if result.is_error else "ok", elapsed)
        return await self._after_tool(item, outcome, ctx)

    @staticmethod
    def _record(item: Prepared, elapsed: float, is_error: bool) -> ToolRecord:
        assert item.tool is not None
        writes: list[str] = []
        for argument, use in item.tool.paths.items():
            value = item.checked.get(argument)
            if use in WRITES:
                values = value if isinstance(value, list) else [value]
                writes += [v for v in values if isinstance(v, str) and v]
        return ToolRecord(item.tool.name, item.tool.kind, elapsed, is_error, item.call.id, item.args, tuple(writes))

    async def _after_tool(self, item: Prepared, outcome: Outcome, ctx: ToolContext) -> Outcome:
        gates = self.deps.lifecycle.after_tool
        if not gates:
            return outcome
        use = ToolUse(item.call.id, item.call.name, item.args)
        verdict = await run_gates(gates, ToolOutput(use, outcome.output, outcome.is_error))
        if item.tool is not None and not outcome.is_error and ctx.files is not None:
            # A PostToolUse formatter's rewrite is part of this edit, not someone else's change:
            # the next Edit of the file must not be refused as stale because of it.
            written = [ctx.resolve(path) for path in self._record(item, 0.0, False).writes]
            await asyncio.to_thread(_seen_again, ctx.files, written)
        output = f"{outcome.output}\n\n{verdict.context}" if verdict.context else outcome.output
        return replace(outcome, output=output, events=(*outcome.events, *verdict.events))

    def _finish(self, item: Prepared, outcome: Outcome) -> ToolFinished:
        self.answered.add(item.call.id)
        output = self.deps.record(item.call.id, outcome.output, outcome.status)
        return ToolFinished(
            item.call.id,
            item.call.name,
            output,
            outcome.is_error,
            outcome.status,
            outcome.elapsed,
            self._summary(item),
        )


def _as_sent(call: ToolCall) -> dict[str, Any]:
    """A call's arguments as the model sent them, for the person to see (`ToolStarted`):
    the object when they are one, else the raw text under `arguments`."""
    try:
        return parse_arguments(call.arguments)
    except ToolError:
        return {"arguments": call.arguments} if call.arguments.strip() else {}


def _cancelled(done: str) -> str:
    return f"{CANCELLED}. What it had done by then:\n{done}" if done else CANCELLED


def _seen_again(ledger: FileLedger, paths: Sequence[Path]) -> None:
    """`ledger` learns what `paths` hold now (regular files only: a FIFO is never opened)."""
    for path in paths:
        try:
            handle = open_regular(path)
            if handle is not None:
                with handle:
                    ledger.saw(path, handle.read())
        except OSError:
            continue


def _with_events(outcome: Outcome, earlier: Outcome | None) -> Outcome:
    """`outcome`, with the events of the gates that let it run first."""
    if earlier is None or not earlier.events:
        return outcome
    return replace(outcome, events=(*earlier.events, *outcome.events))
