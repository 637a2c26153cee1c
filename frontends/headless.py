"""Headless mode (`todo-agent -p PROMPT`): one turn, the answer on stdout.

Output formats:
- `text`: the final answer only; notices and errors go to stderr.
- `json`: one object at the end (`result`, `is_error`, `reason`, `session_id`, `usage`
  with the context's share of the window, `tasks`, each with the `files` it changed).
- `stream-json`: every event as one JSON line while it happens, then the result object.
Nobody can answer an approval here, so calls that would ask are denied and the tool
result says how to allow them. A compaction prints one line to stderr, and so does each
`@path` that could not be attached. `@path` mentions and custom slash commands
(`-p "/review posts.py"`) work as in the app; a project command's `` !`cmd` `` lines run
only when an allow rule covers them (or the file was approved in the app).
Text that reaches a terminal (the answer, errors, notices, hook output) is sanitised like
the TUI's: escape sequences from the model, the server or a hook are removed, never run;
JSON output carries the text exactly, with every control character escaped.

Exit status (`reason`): 0 done; 1 error (or a rejected call, or a prompt a
`UserPromptSubmit` hook blocked: `blocked`); 3 `max_turns` (stopped after `--max-turns`
model requests); 4 `length` (the answer was cut at the output limit); 5 `loop` (the
repeated-call guard stopped the model); 6 `goal` (with `--goal`: a goal budget ran out before
every task was completed and every check passed); 130 interrupted; 141 the reader of stdout went
away. (2 is a usage or configuration error, and 129/143 a SIGHUP/SIGTERM that stopped
the run, from `frontends/cli.py`.)

MCP servers: started before the turn, which waits for them at most their
`startup_timeout_sec` (default 30 s); a server that is not up by then (failed, or a
project server not accepted: `--allow-project-mcp`) is one line on stderr, and the json
result's `mcp_servers` lists every server with its state. All of them, and their process
groups, are stopped when the run ends, however it ends.

Sub-agents: every call they would ask about is denied, as the main agent's are, so none
waits for an answer. In text mode each one's start and end is a line on stderr; in
`stream-json` each of its events is a line carrying its `agent_id` and `parent_call_id`
(the main agent's `Agent` call that runs it); its tool events keep their own `call_id`
(unique per `agent_id`, not across agents); the `json` result lists them (`agents`), and `usage`
counts their tokens too.

A request that fails in a way that may pass (a server busy, restarting or rate limiting,
a dropped connection) is retried after a wait, each wait one line on stderr
(`todo-agent: server busy (HTTP 503): loading model — retrying in 8 s (3 of 6)`).

Hooks: the SessionStart hooks run before the turn. A hook that blocks or fails prints
one line on stderr (`todo-agent: PreToolUse hook blocked: ./guard.sh (exit 2): …`);
`stream-json` carries every hook run as a `HookResult` event. Project hooks that the
person has not trusted do not run, and a warning says how to run them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from todo_agent.core.events import (
    AgentEvent,
    AgentFinished,
    AgentStarted,
    Attached,
    Compacted,
    Error,
    Event,
    GoalProgress,
    HookResult,
    Notice,
    Retrying,
    TasksUpdated,
    TurnEnd,
    Usage,
)
from todo_agent.core.runtime import Runtime
from todo_agent.core.tasks.model import Task
from todo_agent.core.tasks.render import render_tasks
from todo_agent.core.terminal import json_safe, sanitize

OutputFormat = Literal["text", "json", "stream-json"]
EXIT_CODES = {"done": 0, "max_turns": 3, "length": 4, "loop": 5, "goal": 6, "budget": 6, "interrupted": 130}


def event_to_json(event: Event) -> dict[str, Any]:
    if isinstance(event, AgentEvent):
        # A sub-agent's own event, named as it is (its own `call_id` for its tool calls),
        # tagged with who runs it and the main agent's `Agent` call that started it.
        return {**event_to_json(event.event), "agent_id": event.agent_id, "parent_call_id": event.call_id}
    data = dataclasses.asdict(event)
    return {"type": type(event).__name__, **data}


@dataclass
class _Tally:
    """What the run adds up to, fed one event at a time; warnings go to stderr as they happen."""

    err: TextIO
    print_tasks: bool
    end: TurnEnd | None = None
    errors: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    plan_tokens: int = 0
    last_listing: str = ""
    goal: GoalProgress | None = None

    def feed(self, event: Event) -> None:
        if isinstance(event, AgentEvent):
            self._feed_agent(event)
        elif isinstance(event, AgentStarted | AgentFinished):
            self._agent_line(event)
        elif isinstance(event, Error):
            self.errors.append(event.message)
            print(f"todo-agent: error: {sanitize(event.message)}", file=self.err)
        elif isinstance(event, Notice) and (event.level != "info" or event.text.startswith("goal ")):
            # A goal's own notices too: `goal not reached (1/3 verified): the model is sent back to work (2)`.
            print(f"todo-agent: {sanitize(event.text)}", file=self.err)
        elif (isinstance(event, HookResult) and event.noteworthy) or isinstance(event, Retrying):
            # `todo-agent: server busy (HTTP 503): loading model — retrying in 8 s (3 of 6)`
            print(f"todo-agent: {sanitize(event.describe())}", file=self.err)
        elif isinstance(event, Attached) and event.note:  # `@path` that could not go with the prompt
            print(f"todo-agent: @{sanitize(event.path)}: {sanitize(event.note)}", file=self.err)
        elif isinstance(event, Usage | TurnEnd | GoalProgress):
            self._record(event)
        elif isinstance(event, Compacted):
            print(
                f"todo-agent: compacted the conversation ({event.trigger}): "
                f"{event.tokens_before:,} → {event.tokens_after:,} tokens",
                file=self.err,
            )
        elif isinstance(event, TasksUpdated) and self.print_tasks:
            listing = render_tasks(event.tasks, spend=False)
            if listing != self.last_listing:  # per-call attribution updates change no line here
                print(sanitize(listing), file=self.err)
                self.last_listing = listing

    def _record(self, event: Usage | TurnEnd | GoalProgress) -> None:
        if isinstance(event, Usage):
            self.count(event)
        elif isinstance(event, TurnEnd):
            self.end = event
        else:
            self.goal = event

    def count(self, usage: Usage) -> None:
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cached_tokens += usage.cached_tokens
        self.reasoning_tokens += usage.reasoning_tokens
        self.plan_tokens += usage.plan_tokens

    def _feed_agent(self, wrapped: AgentEvent) -> None:
        """A sub-agent's event: its tokens count, its plan changes print; its text does not."""
        event = wrapped.event
        if isinstance(event, Usage):
            self.count(event)
        elif isinstance(event, TasksUpdated):
            self.feed(event)
        elif isinstance(event, Error):
            print(f"todo-agent: {wrapped.agent_id}: error: {sanitize(event.message)}", file=self.err)
        elif isinstance(event, Notice) and event.level != "info":
            print(f"todo-agent: {wrapped.agent_id}: {sanitize(event.text)}", file=self.err)
        elif (isinstance(event, HookResult) and event.noteworthy) or isinstance(event, Retrying):
            print(f"todo-agent: {wrapped.agent_id}: {sanitize(event.describe())}", file=self.err)

    def _agent_line(self, event: AgentStarted | AgentFinished) -> None:
        if isinstance(event, AgentStarted):
            if not event.waiting:
                task = f" on task #{event.task_id}" if event.task_id else ""
                print(f"todo-agent: {event.agent_id} started{task}: {sanitize(event.description)}", file=self.err)
            return
        print(f"todo-agent: {event.agent_id} {event.status} ({sanitize(event.reason)})", file=self.err)


PIPE_CLOSED = 141
"""Exit status when the reader of stdout went away (128 + SIGPIPE, as shells report it)."""


@dataclass
class _Output:
    """stdout that notices when its reader leaves (`… | head -1`) instead of raising."""

    stream: TextIO
    closed: bool = False

    def write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            self.closed = True

    def json(self, data: dict[str, Any]) -> None:
        self.write(json_safe(json.dumps(data, ensure_ascii=False)) + "\n")


async def run_headless(
    runtime: Runtime, prompt: str, output_format: OutputFormat, out: TextIO, err: TextIO, *, goal: bool = False
) -> int:
    """`goal`: the prompt is a goal (`--goal`): turns until the plan is proven (`core/goal.py`)."""
    try:
        return await _run(runtime, prompt, output_format, out, err, goal=goal)
    finally:  # however the run ends (SIGTERM, ctrl+c included): no server or background command is left running
        await asyncio.shield(runtime.stop_background())


async def _connect_mcp(runtime: Runtime, err: TextIO) -> None:
    for server in await runtime.mcp.connect():
        why = server.reason
        if server.state == "untrusted":
            why = "a project server: accept it in the app once, or pass --allow-project-mcp"
        elif server.state == "starting":
            why = "still not up after its startup_timeout_sec"
        tail = server.stderr.tail(3)
        last = f" (stderr: {' | '.join(tail)})" if tail and server.state == "failed" else ""
        print(sanitize(f"todo-agent: MCP server {server.name} is not available: {why}{last}"), file=err)


async def _run(
    runtime: Runtime, prompt: str, output_format: OutputFormat, out: TextIO, err: TextIO, *, goal: bool
) -> int:
    streaming = output_format == "stream-json"
    output = _Output(out)
    tally = _Tally(err, print_tasks=output_format == "text")
    hooks_notice = runtime.trust.hooks_notice()
    for notice in [*runtime.startup_notices(), *([hooks_notice] if hooks_notice else [])]:
        if notice.level != "info":
            print(f"todo-agent: {sanitize(notice.text)}", file=err)
        if streaming:
            output.json(event_to_json(notice))
    if runtime.mcp.configured:
        await _connect_mcp(runtime, err)
    for event in await runtime.sessions.start("resume" if runtime.sessions.history else "startup"):
        if streaming:
            output.json(event_to_json(event))
        tally.feed(event)
    async with aclosing(runtime.turn.run_goal(prompt) if goal else runtime.turn.run(prompt)) as events:
        async for event in events:
            if streaming:
                output.json(event_to_json(event))
                if output.closed:
                    runtime.turn.interrupt()  # nobody reads on: stop spending tokens, end cleanly
            tally.feed(event)
    reason = tally.end.reason if tally.end else "error"
    code = EXIT_CODES.get(reason, 1)
    final = tally.end.final_text if tally.end else ""
    if output_format == "text":
        if final:
            output.write(sanitize(final) + "\n")
    else:
        output.json(
            {
                "type": "result",
                "result": final,
                "is_error": code != 0,
                "reason": reason,
                "errors": tally.errors,
                "session_id": runtime.sessions.id,
                "usage": _usage(runtime, tally),
                "mcp_servers": runtime.mcp.report(),
                # Each task with the files it changed (path, created/modified/deleted, lines +/−),
                # whether its check verified it, and its check's last run (None: never ran).
                "tasks": [_task_result(runtime, t) for t in runtime.plan.tasks()],
                # Each sub-agent of the session: how it ended, what it changed, what it cost.
                "agents": runtime.team.results(),
                # `--goal`: where it ended (verified, completed, requests, tokens, seconds, state).
                **({"goal": dataclasses.asdict(tally.goal)} if tally.goal is not None else {}),
            }
        )
    return PIPE_CLOSED if output.closed else code


def _task_result(runtime: Runtime, task: Task) -> dict[str, Any]:
    last = task.last_check
    return {
        **dataclasses.asdict(task),
        "verified": task.verified,
        "last_check": dataclasses.asdict(last) | {"passed": last.passed} if last is not None else None,
        "files": runtime.plan.files_changed(task.id),
    }


def _usage(runtime: Runtime, tally: _Tally) -> dict[str, Any]:
    """Tokens the run spent, and how full the context is now (share of the window, 0–1)."""
    used, window = runtime.turn.context_usage()
    return {
        "prompt_tokens": tally.prompt_tokens,
        "completion_tokens": tally.completion_tokens,
        "cached_tokens": tally.cached_tokens,
        "reasoning_tokens": tally.reasoning_tokens,
        "plan_tokens": tally.plan_tokens,
        "plan_share": round(tally.plan_tokens / tally.prompt_tokens, 4) if tally.prompt_tokens else 0.0,
        "context_tokens": used,
        "context_window": window,
        "context_share": round(used / window, 3) if window else None,
        "context": runtime.turn.context_breakdown().as_json(),
    }
