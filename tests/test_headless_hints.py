"""Headless denials say what would allow that very call, and what they say is true: the
rule or mode they name, given to the gate, allows the call."""

from __future__ import annotations

import json
import re
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from gate import TOOL

from todo_agent.core.engine.batch import NO_APPROVER
from todo_agent.core.engine.loop import Agent, AgentOptions
from todo_agent.core.events import ToolFinished
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.permissions.modes import PermissionMode
from todo_agent.core.permissions.policy import PermissionPolicy
from todo_agent.core.tools.base import Tool, parse_arguments
from todo_agent.core.tools.context import ToolContext


async def _never(args: dict[str, Any], ctx: ToolContext) -> str:
    raise AssertionError("a denied call never runs")


ISSUE = Tool(name="mcp__github__create_issue", description="", parameters={"type": "object"}, run=_never)
TOOLS = [*TOOL.values(), ISSUE]


async def denial(workspace: Path, mode: PermissionMode, name: str, args: dict[str, Any], deny: tuple[str, ...]) -> str:
    model = ScriptedModel.from_data([{"tool_calls": [{"name": name, "arguments": args}]}, {"text": "ok"}])
    gate = PermissionPolicy.from_strings(workspace, mode, (), deny, TOOLS)
    agent = Agent(model, TOOLS, workspace, gate, "test", options=AgentOptions(retry_delay=0))
    async with aclosing(agent.run_turn("go")) as events:
        finished = [e async for e in events if isinstance(e, ToolFinished)]
    assert [e.status for e in finished] == ["denied"]
    assert finished[0].output.startswith(NO_APPROVER)
    return finished[0].output.split("What would allow it: ", 1)[1]


def quoted_rules(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


CASES = [
    # (mode, tool, arguments, deny rules, what the hint must say, what it must not)
    ("acceptEdits", ISSUE.name, {"title": "x"}, (), ["mcp__github__create_issue", "mcp__github"], "acceptEdits"),
    ("acceptEdits", "Bash", {"command": "touch made.txt"}, (), ["Bash(touch:*)", "bypassPermissions"], "acceptEdits"),
    ("default", "Write", {"file_path": "x.txt", "content": "hi"}, (), ["acceptEdits", "Write(x.txt)"], None),
    ("default", "Read", {"file_path": "/etc/hostname"}, (), ["Read(/etc/**)", "absolute"], "acceptEdits"),
    ("acceptEdits", "Write", {"file_path": ".git/hooks/pre-commit", "content": "x"}, (), ["no rule"], "a rule"),
    ("default", "Bash", {"command": 'eval "$CMD"'}, ("Bash(rm:*)",), ["exactly this command"], "acceptEdits"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[1]}-{c[0]}" for c in CASES])
async def test_the_hint_names_what_allows_this_call(workspace: Path, case: tuple[Any, ...]) -> None:
    mode: PermissionMode = case[0]
    name: str = case[1]
    args: dict[str, Any] = case[2]
    deny: tuple[str, ...] = case[3]
    says: list[str] = case[4]
    never: str | None = case[5]
    hint = await denial(workspace, mode, name, args, deny)
    for words in says:
        assert words in hint, hint
    if never is not None:
        assert never not in hint, hint
    tool = next(t for t in TOOLS if t.name == name)
    checked = tool.check(parse_arguments(json.dumps(args)))
    # What it names allows the call: each rule it quotes, and acceptEdits when it names that mode.
    for rule in quoted_rules(hint):
        allowed = PermissionPolicy.from_strings(workspace, mode, (rule,), deny, TOOLS).decide(tool, checked)
        assert allowed.verdict == "allow", (rule, allowed)
    if "--permission-mode acceptEdits" in hint:
        allowed = PermissionPolicy.from_strings(workspace, "acceptEdits", (), deny, TOOLS).decide(tool, checked)
        assert allowed.verdict == "allow"
