"""What a request holds, by part: `/context`, the `-p` json `usage.context`, the plan's cost.

Each part is counted the way the window counts everything (`tokens.py`: characters over
the characters-per-token ratio the server's counts keep re-measuring), then, when the
server has reported a prompt's size, scaled so the parts add up to the counter's anchored
figure (the server's last count plus estimates of what came since). So the shares are
estimates, the total is the server's own where it gave one.

The parts:
- `system`: the system prompt, less the project instructions and the plan's line in it;
- `instructions`: the project's `AGENTS.md`/`CLAUDE.md` blocks in the system prompt;
- `tools`: the built-in tools' schemas (not the task tools);
- `mcp:<server>`: each MCP server's tool schemas (`MCPSearch` counts as built in);
- `plan`: the task tools' schemas, the plan's line in the system prompt, the task
  reminders (`core/tasks/reminders.py`: a `<system-reminder>` with a task header), the
  assistant messages' task-tool calls and the results answering them;
- `attachments`: messages that carry `@` files or an MCP tool's images;
- `conversation`: everything else (prompts, answers, other calls and results, a
  compaction's summary, the team's note).
The free space is what is left before compaction starts (`ContextBudget.trigger`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..model.base import Message
from ..session.directory import SPEND_RECORD
from ..tasks.reminders import TASK_TOOL_NAMES, is_task_reminder
from .tokens import CALL_OVERHEAD, ContextBudget, TokenCounter, message_chars

ORDER = ("system", "instructions", "tools", "mcp", "plan", "attachments", "conversation")
LABELS = {
    "system": "system prompt",
    "instructions": "project instructions",
    "tools": "built-in tools",
    "plan": "the plan",
    "attachments": "attachments",
    "conversation": "conversation",
}


@dataclass(frozen=True)
class Part:
    key: str
    """One of `ORDER`, or `mcp:<server>`."""
    tokens: int

    @property
    def label(self) -> str:
        if self.key.startswith("mcp:"):
            return f"MCP · {self.key[4:]}"
        return LABELS.get(self.key, self.key)


@dataclass(frozen=True)
class Breakdown:
    parts: tuple[Part, ...]
    window: int
    trigger: int
    """Tokens at which the conversation is compacted."""
    measured: bool
    """The total rests on the server's count (else on the estimate alone)."""

    @property
    def total(self) -> int:
        return sum(part.tokens for part in self.parts)

    @property
    def free(self) -> int:
        """What the conversation may still grow by before it is compacted."""
        return max(0, self.trigger - self.total)

    def tokens(self, key: str) -> int:
        return sum(part.tokens for part in self.parts if part.key == key)

    def as_json(self) -> dict[str, Any]:
        return {
            "parts": {part.key: part.tokens for part in self.parts},
            "total": self.total,
            "free_before_compaction": self.free,
            "window": self.window,
            "measured": self.measured,
        }


@dataclass(frozen=True)
class Shape:
    """What the caller knows that the messages do not say: which text in the system prompt
    is the project's instructions and which is the plan's line, and which user messages
    are attachments."""

    instructions: Sequence[str] = ()
    plan_line: str = ""
    attachment: Callable[[Message], bool] = lambda message: False
    server_of: Callable[[str], str | None] = lambda name: None
    """An MCP tool's server, from its name (`core/mcp/names.py`); None for any other tool."""

    def tool_key(self, name: str) -> str:
        if name in TASK_TOOL_NAMES:
            return "plan"
        server = self.server_of(name)
        return f"mcp:{server}" if server else "tools"


def _chars(messages: Sequence[Message], schemas: Sequence[dict[str, Any]], shape: Shape) -> dict[str, int]:
    """Characters per part, in the units `TokenCounter` counts."""
    chars: dict[str, int] = {}

    def add(key: str, n: int) -> None:
        chars[key] = chars.get(key, 0) + n

    by_tool: dict[str, list[dict[str, Any]]] = {}
    for schema in schemas:
        function = schema.get("function") if isinstance(schema, dict) else None
        name = str(function.get("name", "")) if isinstance(function, dict) else ""
        by_tool.setdefault(shape.tool_key(name), []).append(schema)
    for key, group in by_tool.items():
        add(key, len(json.dumps(group)))
    plan_calls: set[str] = set()
    for message in messages:
        whole = message_chars(message)
        role = message.get("role")
        if role == "system":
            content = str(message.get("content") or "")
            inside = sum(len(text) for text in shape.instructions if text and text in content)
            line = len(shape.plan_line) if shape.plan_line and shape.plan_line in content else 0
            add("instructions", inside)
            add("plan", line)
            add("system", whole - inside - line)
        elif role == "user" and is_task_reminder(message):
            add("plan", whole)
        elif role == "user" and shape.attachment(message):
            add("attachments", whole)
        elif role == "assistant" and message.get("tool_calls"):
            task = 0
            for call in message.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and function.get("name") in TASK_TOOL_NAMES:
                    plan_calls.add(str(call.get("id")))
                    task += CALL_OVERHEAD + len(str(function["name"])) + len(str(function.get("arguments") or ""))
            add("plan", task)
            add("conversation", whole - task)
        elif role == "tool" and str(message.get("tool_call_id")) in plan_calls:
            add("plan", whole)
        else:
            add("conversation", whole)
    return chars


def _order(key: str) -> tuple[int, str]:
    return (ORDER.index("mcp") if key.startswith("mcp:") else ORDER.index(key), key)


def breakdown(
    messages: Sequence[Message],
    schemas: Sequence[dict[str, Any]],
    counter: TokenCounter,
    budget: ContextBudget,
    shape: Shape | None = None,
) -> Breakdown:
    """What the request `messages` (system message first) with `schemas` holds, by part."""
    chars = _chars(messages, schemas, shape or Shape())
    estimates = {key: counter.tokens(n) for key, n in chars.items() if n > 0}
    total = counter.prompt_tokens(messages, schemas)
    estimated = sum(estimates.values())
    if counter.anchored and estimated > 0 and total != estimated:  # the server's count, shared out
        scaled = {key: round(n * total / estimated) for key, n in estimates.items()}
        largest = max(scaled, key=lambda key: scaled[key])
        scaled[largest] += total - sum(scaled.values())
        estimates = scaled
    parts = tuple(Part(key, estimates[key]) for key in sorted(estimates, key=_order))
    return Breakdown(parts, budget.window, budget.trigger, counter.anchored)


def plan_tokens(
    messages: Sequence[Message], schemas: Sequence[dict[str, Any]], prompt_tokens: int, plan_line: str = ""
) -> int:
    """Of a request of `prompt_tokens` (as the server counted it, or the estimate), the
    tokens the plan took: its share of the characters, times the count."""
    chars = _chars(messages, schemas, Shape(plan_line=plan_line))
    whole = sum(chars.values())
    return round(prompt_tokens * chars.get("plan", 0) / whole) if whole else 0


@dataclass
class Spend:
    """The prompt tokens a session's requests took (the main agent's), and the plan's part."""

    prompt: int = 0
    plan: int = 0
    requests: int = 0

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> Spend:
        """From a session's latest `spend` line; zero for a missing or garbled one."""
        numbers = [(record or {}).get(key) for key in ("prompt", "plan", "requests")]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
            return cls()
        prompt, plan, requests = (int(n) for n in numbers)  # type: ignore[arg-type]
        return cls(prompt, min(plan, prompt), requests)

    def add(self, prompt: int, plan: int) -> None:
        self.prompt += prompt
        self.plan += plan
        self.requests += 1

    @property
    def share(self) -> float:
        return self.plan / self.prompt if self.prompt else 0.0

    def record(self) -> dict[str, Any]:
        return {"type": SPEND_RECORD, "prompt": self.prompt, "plan": self.plan, "requests": self.requests}

    def line(self) -> str:
        """`/todos`'s words: `the plan has cost 2.1% of this session's prompt tokens (1,234 of 58,900)`."""
        if not self.prompt:
            return "the plan has cost nothing yet: no request has been made"
        return (
            f"the plan has cost {self.share:.1%} of this session's prompt tokens "
            f"({self.plan:,} of {self.prompt:,}, {self.requests:,} request{'' if self.requests == 1 else 's'})"
        )


GLYPHS = {
    "system": "█",
    "instructions": "▓",
    "tools": "▒",
    "mcp": "░",
    "plan": "◼",
    "attachments": "▚",
    "conversation": "▪",
}
FREE_GLYPH = "·"
"""Room before compaction; past it, to the end of the window, blank."""


def _glyph(key: str) -> str:
    return GLYPHS["mcp" if key.startswith("mcp:") else key]


def _cells(tokens: int, window: int, width: int) -> int:
    return max(1, round(tokens * width / window)) if tokens > 0 else 0


def render_breakdown(found: Breakdown, spend: Spend, width: int = 40) -> str:
    """`/context`: a bar of the window (a glyph per part, `·` the room before compaction)
    and a table of tokens and shares of the window, then the plan's cost. The bar's 40
    cells (2.5% of the window each) fit the conversation beside the panel at 80 columns."""
    window = max(1, found.window)
    bar = "".join(_glyph(part.key) * _cells(part.tokens, window, width) for part in found.parts)[:width]
    room = max(0, min(width, round(found.trigger * width / window)) - len(bar))
    bar = (bar + FREE_GLYPH * room).ljust(width)
    source = "measured" if found.measured else "estimated"
    lines = [
        f"{found.total:,} / {found.window:,} tokens ({found.total / window:.0%}) · "
        f"compacts at {found.trigger:,} · {source}",
        f"[{bar}]",
    ]
    rows = [(_glyph(part.key), part.label, part.tokens) for part in found.parts]
    rows.append((FREE_GLYPH, "free before compaction", found.free))
    label_width = max(len(label) for _, label, _ in rows)
    lines += [f"{glyph} {label:<{label_width}} {n:>9,}  {n / window:>6.1%}" for glyph, label, n in rows]
    plan = found.tokens("plan")
    if found.total:
        so_far = f"{spend.share:.1%} of this session's prompt tokens so far" if spend.prompt else "no request yet"
        lines.append(f"The plan: {plan:,} tokens of this request ({plan / found.total:.1%}); {so_far}.")
    return "\n".join(lines)
