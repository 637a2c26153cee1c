"""Everything the core tells the outside world, as small frozen dataclasses.

A turn (`Agent.run_turn`) is an async generator of `Event`. The TUI and headless mode
render these; nothing in the core draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from .tasks.model import Task


@dataclass(frozen=True)
class TextDelta:
    """A piece of assistant text, streamed as it arrives."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning (its thought before the answer), streamed as it
    arrives. Untrusted text like the answer's; kept on the assistant message's record."""

    text: str


@dataclass(frozen=True)
class AssistantMessage:
    """The model finished one response; `content` is its whole text."""

    content: str


@dataclass(frozen=True)
class ResponseDiscarded:
    """A streamed response failed part-way; text shown so far is void and a retry follows."""

    reason: str
    attempt: int


@dataclass(frozen=True)
class Retrying:
    """A request failed in a way that may pass (a server busy or restarting, a dropped
    connection): the turn waits `delay` seconds, then asks again. Interrupting stops the wait."""

    reason: str
    """A few words for the status line: `server busy (503)`, `connection lost`."""
    message: str
    """The whole failure, one line: `server busy (HTTP 503): loading model`."""
    delay: float
    retry: int
    """Which retry comes after the wait, from 1."""
    retries: int
    """How many retries a request may take (`request_retries`)."""

    def countdown(self, left: float | None = None) -> str:
        """`retrying in 8 s (3 of 6)`, with `left` seconds to go (default: the whole wait)."""
        seconds = math.ceil(self.delay if left is None else max(left, 0.0))
        when = f"in {seconds} s" if seconds > 0 else "now"
        return f"retrying {when} ({self.retry} of {self.retries})"

    def describe(self) -> str:
        """One line for a notice: `server busy (HTTP 503): loading model — retrying in 8 s (3 of 6)`."""
        return f"{self.message} — {self.countdown()}"


@dataclass(frozen=True)
class ToolStarted:
    """A tool call is about to run (after any approval)."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    summary: str
    """Short human form of the arguments, e.g. `posts.py` or the command."""


@dataclass(frozen=True)
class ToolOutput:
    """What a running call printed since its last `ToolOutput` (a command's output, shown
    live; the whole of it, capped, is its `ToolFinished.output`). Untrusted text."""

    call_id: str
    text: str


@dataclass(frozen=True)
class ToolFinished:
    """A tool call produced its result (errors, denials and cancellations included)."""

    call_id: str
    name: str
    output: str
    is_error: bool = False
    status: Literal["ok", "error", "denied", "cancelled"] = "ok"
    elapsed: float = 0.0
    summary: str = ""
    """As in `ToolStarted`: a call cancelled before it started has had no start event."""


@dataclass(frozen=True)
class Attached:
    """A file or folder the person mentioned with `@` went with the prompt, or could not."""

    path: str
    """Workspace-relative; a folder's ends with `/`."""
    summary: str = ""
    """`42 lines`, `lines 10-40 of 242`, `12 entries`."""
    content: str = ""
    """What the model got."""
    note: str = ""
    """Non-empty: nothing was attached, and this says why (binary, too big, outside…)."""
    mime: str = ""
    """An image's type (`image/png`): it went to the model as an image, `summary` says its
    size (`1280×720 · 210 KB`) and `content` is empty."""


@dataclass(frozen=True)
class Steered:
    """A message the person sent while the turn ran (`alt+enter`) reached the model, with
    the turn's next request: after the tool batch that was running, never inside it."""

    text: str
    """What the person typed."""


@dataclass(frozen=True)
class CommandExpanded:
    """A custom slash command became the prompt the model gets."""

    name: str
    """`/review`."""
    source: str
    """The file it came from, as the person names it: `.claude/commands/review.md`."""
    text: str
    """The prompt it made (arguments in, its shell commands' output in)."""


@dataclass(frozen=True)
class TasksUpdated:
    """The task list changed; `tasks` is its full, final state after a tool batch."""

    tasks: tuple[Task, ...]


@dataclass(frozen=True)
class Notice:
    """A one-line system notice: instructions loaded, date, retries, reminders."""

    text: str
    level: Literal["info", "warning", "error"] = "info"


@dataclass(frozen=True)
class Reminded:
    """The harness put a `<system-reminder>` before the model's next request (the task list
    not in view, work off the plan, a task left in progress…): shown as one dim folded line."""

    text: str
    """What the model got, without the tags; its first line says why."""

    @property
    def headline(self) -> str:
        return self.text.split("\n", 1)[0]


COMMAND_WIDTH = 60
"""Characters of a hook's command a one-line description keeps."""


@dataclass(frozen=True)
class HookResult:
    """A shell hook from settings ran (every run, so `stream-json` shows them all)."""

    hook_event: str
    """The hook event, e.g. `PreToolUse`."""
    command: str
    status: Literal["ok", "blocked", "failed", "timeout"]
    """`blocked`: exit 2 or a JSON block; `failed`: any other exit code, or it could not start."""
    exit_code: int | None
    """None when it timed out (and was killed) or could not start."""
    message: str = ""
    """First line of the reason (blocked) or of stderr (failed); why it timed out."""
    elapsed: float = 0.0
    source: Literal["user", "project"] = "user"
    """The settings file it came from."""

    @property
    def noteworthy(self) -> bool:
        """Worth telling the person: it blocked something or went wrong."""
        return self.status != "ok"

    def describe(self) -> str:
        """One line for a notice: event, what happened, command, exit code, first line."""
        what = {"blocked": "blocked", "failed": "failed", "timeout": "timed out", "ok": "ran"}[self.status]
        code = f" (exit {self.exit_code})" if self.exit_code is not None else ""
        detail = f": {self.message}" if self.message else ""
        command = " ".join(self.command.split())  # one line, whatever the settings file holds
        if len(command) > COMMAND_WIDTH:
            command = command[: COMMAND_WIDTH - 1] + "…"
        return f"{self.hook_event} hook {what}: {command}{code}{detail}"


@dataclass(frozen=True)
class Usage:
    """Token use of one model response (estimated when the server sends none)."""

    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False
    cached_tokens: int = 0
    """Of the prompt, what the server had cached (it says so: OpenAI, vLLM, llama.cpp)."""
    reasoning_tokens: int = 0
    """Of the completion, what went into reasoning (reasoning models that count it)."""
    plan_tokens: int = 0
    """Of the prompt, what the plan took: the task tools' schemas, reminders, task calls
    and their results (`core/window/breakdown.py`)."""


@dataclass(frozen=True)
class Compacting:
    """A compaction started: the model is summarising the older history (it takes a while)."""

    trigger: Literal["auto", "manual", "overflow"]
    tokens: int
    """The estimated prompt size that made it necessary."""


@dataclass(frozen=True)
class Compacted:
    """The older history was replaced by a summary; the recent messages stay verbatim."""

    tokens_before: int
    tokens_after: int
    trigger: Literal["auto", "manual", "overflow"]
    """`auto`: the prompt passed the threshold; `manual`: `/compact`; `overflow`: the server
    refused the request as too long (it is retried once)."""
    summarised: int
    """Messages folded into the summary."""
    kept: int
    """Recent messages kept verbatim."""


@dataclass(frozen=True)
class Error:
    """The turn could not go on (network, auth, bad model). History stays valid."""

    message: str


AgentStatus = Literal["completed", "partial", "failed", "cancelled", "unverified"]


@dataclass(frozen=True)
class AgentStarted:
    """A sub-agent an `Agent` call started: first while it waits for a free slot
    (`waiting`), then again when it runs."""

    agent_id: str
    """Its name, e.g. `explore-2`: its type and a number unique in the session."""
    agent_type: str
    description: str
    call_id: str
    """The `Agent` call of the parent that runs it."""
    task_id: str | None
    """The task it claimed, if any."""
    transcript: str
    """Where its own transcript is written."""
    waiting: bool = False
    prompt: str = ""
    """Its first message (the brief and its task), once it runs."""


@dataclass(frozen=True)
class AgentEvent:
    """One event of a sub-agent's own turn (its text, tool calls, usage, notices), as it happens."""

    agent_id: str
    call_id: str
    event: Event


@dataclass(frozen=True)
class AgentFinished:
    """A sub-agent ended; what its `Agent` call returns, measured by the harness."""

    agent_id: str
    call_id: str
    task_id: str | None
    status: AgentStatus
    """`completed` only when the run ended cleanly (and marked its task completed)."""
    reason: str
    """Why it ended as it did, in a few words (`max_turns`, `stopped by you`, …)."""
    summary: str
    files: tuple[str, ...]
    """`path  +A −R` per file it changed, from its task's change record."""
    tools: int
    turns: int
    """Model requests it made."""
    tokens: int
    """Prompt and completion tokens of all its requests."""
    elapsed: float


@dataclass(frozen=True)
class TurnEnd:
    """The turn is over. `reason` tells why.

    `max_turns`: the model made `max_turns` requests in this turn; `length`: the answer was
    cut at the output limit; `loop`: the model repeated the same tool call and was stopped;
    `blocked`: a `UserPromptSubmit` hook kept the prompt from being sent; `goal`: a goal's
    budget (`goal_max_turns`, `goal_max_tokens`, `goal_max_minutes`) ran out before it was reached.
    """

    reason: EndReason
    final_text: str = ""


EndReason = Literal[
    "done", "interrupted", "rejected", "blocked", "error", "max_turns", "length", "loop", "goal", "budget"
]


@dataclass(frozen=True)
class GoalProgress:
    """Where a goal (`/goal`, `--goal`) stands: sent when it starts, as its numbers change,
    and when it ends (`state`). `verified` counts completed tasks whose check passed;
    `unchecked`, completed tasks without a check (completed, not verified)."""

    goal: str
    total: int
    completed: int
    verified: int
    unchecked: int
    requests: int
    tokens: int
    seconds: float
    state: Literal["running", "reached", "stopped"] = "running"

    def label(self) -> str:
        """`goal 3/5 verified · 12 min · 210k tok` (the status line; `2 without a check` when some are)."""
        tokens = f"{self.tokens / 1000:.0f}k" if self.tokens >= 1000 else str(self.tokens)
        unchecked = f" · {self.unchecked} without a check" if self.unchecked else ""
        minutes = f"{self.seconds / 60:.0f} min"
        return f"goal {self.verified}/{self.total} verified{unchecked} · {minutes} · {tokens} tok"


Event = (
    TextDelta
    | ReasoningDelta
    | AssistantMessage
    | ResponseDiscarded
    | Retrying
    | ToolStarted
    | ToolOutput
    | ToolFinished
    | Attached
    | CommandExpanded
    | Steered
    | TasksUpdated
    | Notice
    | Reminded
    | HookResult
    | Usage
    | Compacting
    | Compacted
    | Error
    | TurnEnd
    | GoalProgress
    | AgentStarted
    | AgentEvent
    | AgentFinished
)

# Events that a tool batch may emit several times; only the last of each kind matters.
COALESCED_KINDS: tuple[type, ...] = (TasksUpdated,)
