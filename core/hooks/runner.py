"""Shell-command hooks, Claude-Code compatible: the runner.

Each `[[hooks.<Event>]]` entry in settings is a `HookSpec`: a `command` run with
`/bin/sh -c` in the workspace, an optional `matcher` and a `timeout` (default 60 s).
`HookRunner.run(event, fields, target)` runs every spec of `event` that matches `target`,
all at once, each in its own process group (`core/hooks/process.py`), with one JSON object on
stdin: `session_id`, `transcript_path`, `cwd`, `permission_mode`, `hook_event_name` and
the event's own `fields` (Claude Code's field names). It never blocks the event loop.

What a hook says, as Claude Code reads it:
- exit 0: fine. Its stdout is context for the model for `SessionStart` and
  `UserPromptSubmit`; for the other events stdout is ignored unless it is a JSON object
  (`{"decision": "block", "reason": …}` blocks; `hookSpecificOutput.permissionDecision:
  "deny"` with `permissionDecisionReason` blocks a `PreToolUse`;
  `hookSpecificOutput.additionalContext` adds context; `systemMessage` is shown to the person).
- exit 2: block, with stderr as the reason (for `SessionStart`, which nothing can block,
  it is a failure like any other code).
- any other exit, a timeout (the whole process group is killed) or a command that
  cannot start: a warning with the first line of stderr; the work goes on.
Every run becomes a `HookResult` event, so front ends can show blocks and failures.

Matching: for tool events the matcher is Claude Code's: empty or `*` matches every tool,
tool names joined by `|` (`Edit|Write`) match exactly, anything else is a regular
expression searched in the tool name (`Notebook.*`). For `SessionStart` it is tested the
same way against the source (`startup`, `resume`, `clear`, `compact`), for `PreCompact`
against the trigger (`auto`, `manual`), for `SubagentStart`/`SubagentStop` against the
sub-agent's type (`general`, `explore`, …), for `Notification` against its type
(`permission_prompt`, `idle_prompt`). For `TaskCreated`/`TaskCompleted` it is always a
regular expression searched in the task's subject. `UserPromptSubmit` and `Stop` ignore it.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..events import Event, HookResult, Notice
from ..tools.context import HIDDEN_ENV
from .process import Finished, run_command
from .spec import HookEvent, HookSpec

PLAIN_STDOUT_IS_CONTEXT = ("SessionStart", "UserPromptSubmit")
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "SubagentStart")
"""Events whose `additionalContext` reaches the model (SubagentStart's: the sub-agent)."""
UNBLOCKABLE = ("SessionStart", "SubagentStart", "Notification")

BLOCK_EXIT = 2

MAX_CONTEXT_CHARS = 10_000
"""Per hook: context beyond this is cut (a hook printing a whole log must not flood the model)."""


# --- running one command (core/hooks/process.py) ----------------------------------------


@dataclass(frozen=True)
class HookRun:
    """One hook's command, and what its process did."""

    spec: HookSpec
    process: Finished


async def run_hook(spec: HookSpec, payload: bytes, cwd: Path, env: Mapping[str, str]) -> HookRun:
    """Run one hook command to its end, its timeout, or a cancellation (which kills its group)."""
    return HookRun(spec, await run_command(spec.command, spec.timeout, payload, cwd, env))


# --- what the runs add up to -----------------------------------------------------------


Status = Literal["ok", "blocked", "failed", "timeout"]


@dataclass(frozen=True)
class HookOutcome:
    """All hooks of one event, folded into what the caller acts on."""

    blocked: bool = False
    reason: str = ""
    """Why it was blocked: the blocking hooks' stderr (or JSON `reason`), for the model
    (or, for `UserPromptSubmit`, the person)."""
    context: tuple[str, ...] = ()
    """Text for the model (stdout of SessionStart/UserPromptSubmit, `additionalContext`)."""
    events: tuple[Event, ...] = ()
    """For the person: one `HookResult` per run, plus any `systemMessage` notices."""

    @property
    def context_text(self) -> str:
        return "\n\n".join(self.context)


@dataclass
class _Verdict:
    status: Status = "ok"
    reason: str = ""
    context: str = ""
    system_message: str = ""
    message: str = ""


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _cap(text: str) -> str:
    text = text.strip()
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    return text[:MAX_CONTEXT_CHARS] + f"\n… [hook output cut at {MAX_CONTEXT_CHARS} characters]"


def _json_object(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _from_json(event: HookEvent, data: dict[str, Any], verdict: _Verdict) -> None:
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    if isinstance(data.get("systemMessage"), str):
        verdict.system_message = data["systemMessage"].strip()
    extra = specific.get("additionalContext")
    if isinstance(extra, str) and event in CONTEXT_EVENTS:
        verdict.context = extra
    if event in UNBLOCKABLE:
        return
    reason = data.get("reason")
    if data.get("decision") == "block":
        verdict.status, verdict.reason = "blocked", reason if isinstance(reason, str) else ""
    elif specific.get("permissionDecision") == "deny" and event == "PreToolUse":
        why = specific.get("permissionDecisionReason")
        verdict.status, verdict.reason = "blocked", why if isinstance(why, str) else ""


def judge(event: HookEvent, run: HookRun) -> _Verdict:
    """What one run means, by Claude Code's rules (module docstring)."""
    verdict, done = _Verdict(), run.process
    if done.start_error:
        verdict.status, verdict.message = "failed", done.start_error
    elif done.timed_out:
        verdict.status = "timeout"
        verdict.message = f"timed out after {run.spec.timeout:g} s; it and everything it started were killed"
    elif done.exit_code == BLOCK_EXIT and event not in UNBLOCKABLE:
        verdict.status, verdict.reason = "blocked", done.stderr.strip()
    elif done.exit_code != 0:
        verdict.status = "failed"
        verdict.message = _first_line(done.stderr) or "(no output on stderr)"
    elif (data := _json_object(done.stdout)) is not None:
        _from_json(event, data, verdict)
    elif event in PLAIN_STDOUT_IS_CONTEXT:
        verdict.context = done.stdout
    if verdict.status == "blocked":
        verdict.reason = verdict.reason.strip() or f"blocked by the {event} hook `{run.spec.command}` (no reason given)"
        verdict.message = _first_line(verdict.reason)
    verdict.context = _cap(verdict.context) if verdict.context.strip() else ""
    return verdict


def fold(event: HookEvent, runs: Iterable[HookRun]) -> HookOutcome:
    reasons: list[str] = []
    context: list[str] = []
    events: list[Event] = []
    for run in runs:
        verdict = judge(event, run)
        events.append(
            HookResult(
                hook_event=event,
                command=run.spec.command,
                status=verdict.status,
                exit_code=run.process.exit_code,
                message=verdict.message,
                elapsed=run.process.elapsed,
                source=run.spec.source,
            )
        )
        if verdict.system_message:
            events.append(Notice(f"{event} hook: {verdict.system_message}", "warning"))
        if verdict.status == "blocked":
            reasons.append(verdict.reason)
        if verdict.context:
            context.append(verdict.context)
    return HookOutcome(bool(reasons), "\n".join(reasons), tuple(context), tuple(events))


# --- the runner ------------------------------------------------------------------------


def hook_environment(
    workspace: Path, secret_names: Iterable[str] = (), base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment hooks run with: ours, minus the API key variables, plus the project
    directory under Claude Code's name (scripts written for it use `$CLAUDE_PROJECT_DIR`)."""
    drop = {*HIDDEN_ENV, *secret_names}  # as for Bash: the key is not a command's business
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in drop}
    env["CLAUDE_PROJECT_DIR"] = env["TODO_AGENT_PROJECT_DIR"] = str(workspace)
    return env


@dataclass
class HookRunner:
    """Runs the configured hooks of an event and folds their results."""

    specs: Sequence[HookSpec]
    workspace: Path
    env: Mapping[str, str] = field(default_factory=dict)
    common: Callable[[], dict[str, Any]] = field(default=dict)
    """Fields every input carries that change over time (session id, permission mode)."""
    vet: Callable[[list[HookSpec]], Awaitable[tuple[list[HookSpec], list[Event]]]] | None = None
    # (`core/hooks/code.py` makes the one the runtime uses)
    """Asked before each run: which of the matching hooks may run now, and what to tell
    the person (a project hook whose script changed since it was accepted does not run)."""

    def matching(self, event: HookEvent, target: str | tuple[str, ...] | None = None) -> list[HookSpec]:
        """The specs of `event` whose matcher matches `target` (any of several: a task's
        subject before and after the call)."""
        targets = target if isinstance(target, tuple) else (target,)
        return [spec for spec in self.specs if spec.event == event and any(spec.matches(t) for t in targets)]

    def payload(self, event: HookEvent, fields: Mapping[str, Any]) -> dict[str, Any]:
        return {"cwd": str(self.workspace), **self.common(), "hook_event_name": event, **fields}

    async def run(
        self, event: HookEvent, fields: Mapping[str, Any], target: str | tuple[str, ...] | None = None
    ) -> HookOutcome:
        """Run every matching hook of `event` concurrently. Cancelling kills them all."""
        specs = self.matching(event, target)
        said: list[Event] = []
        if specs and self.vet is not None:
            specs, said = await self.vet(specs)
        if not specs:
            return HookOutcome(events=tuple(said))
        data = json.dumps(self.payload(event, fields), ensure_ascii=False, default=str).encode()
        runs = await asyncio.gather(*(run_hook(spec, data, self.workspace, self.env) for spec in specs))
        outcome = fold(event, runs)
        return replace(outcome, events=(*said, *outcome.events)) if said else outcome
