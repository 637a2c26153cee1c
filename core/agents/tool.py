"""The `Agent` tool: Claude Code's name and parameters, so prompts and agent files carry over.

Its description lists the agent types there are (they come from files in the project and
the user's config), so one is declared per runtime (`agent_tool`). It is a fan-out tool:
several calls in one response run side by side (`core/engine/batch.py`), each starting one
sub-agent through the team (`team.py`). Its kind is `task`: starting a sub-agent needs no
approval, every call the sub-agent makes is asked about like the main agent's; a
`deny = ["Agent"]` rule turns sub-agents off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..tools.agent_call import AgentArgs
from ..tools.base import Tool, declare, load_description, parse_as, short
from ..tools.context import ToolContext
from ..tools.results import ToolError, ToolResult
from .definitions import AgentType, describe
from .team import AgentCall, Team


def _check(args: AgentArgs) -> AgentCall:
    if len(args.description) > 200:
        raise ToolError("description is a few words (at most 200 characters); put the brief in prompt")
    return AgentCall(args.description.strip(), args.prompt, args.subagent_type, args.task_id, args.max_turns)


def _summary(args: dict[str, Any]) -> str:
    try:
        parsed = parse_as(AgentArgs, args)
    except ToolError:
        return short(str(args.get("description") or ""))
    task = f" · #{parsed.task_id}" if parsed.task_id else ""
    kind = f"{parsed.subagent_type}: " if parsed.subagent_type else ""
    return short(f"{kind}{parsed.description}{task}")


def agent_tool(team: Callable[[], Team], types: Mapping[str, AgentType], *, parallel: int, max_turns: int) -> Tool:
    """The `Agent` tool of one runtime; `team` gives the current session's team."""

    async def run(args: AgentArgs, ctx: ToolContext) -> ToolResult:
        return await team().run(_check(args), ctx)

    text = load_description("todo_agent.core.agents", "agent.md")
    description = text.format(types=describe(dict(types)), parallel=parallel, max_turns=max_turns)
    return declare("Agent", AgentArgs, run, kind="task", summarize=_summary, description=description, fan_out=True)
