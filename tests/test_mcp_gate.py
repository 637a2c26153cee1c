"""MCP tool names, and the permission gate's part: rules, modes, approvals' answers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from gate import TOOL as BUILTIN

from todo_agent.core.mcp.names import tool_name, unique_parts, unique_tool_names
from todo_agent.core.permissions.modes import PermissionMode
from todo_agent.core.permissions.policy import PermissionPolicy
from todo_agent.core.permissions.rules import Rule, mcp_server
from todo_agent.core.tools.base import Tool
from todo_agent.core.tools.context import ToolContext

VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def test_names_are_claude_codes_form() -> None:
    assert tool_name("github", "create_issue") == "mcp__github__create_issue"
    assert tool_name("my.server", "get-item") == "mcp__my_server__get-item"
    assert tool_name("a__b", "t") == "mcp__a_b__t"  # the server's part never holds the separator
    assert mcp_server("mcp__a_b__t") == "a_b" and mcp_server("Bash") is None


@pytest.mark.parametrize(
    ("server", "tool"),
    [
        ("github", "x" * 80),
        ("a-very-long-server-name-from-some-vendor-that-goes-on", "list_all_the_repositories_of_the_organisation"),
        ("ünïcødé server", "tööl/with spaces"),
        ("s", ""),
    ],
)
def test_names_fit_openais_limit_and_stay_apart(server: str, tool: str) -> None:
    name = tool_name(server, tool)
    assert VALID.fullmatch(name), name
    assert name.startswith("mcp__") and mcp_server(name)
    assert tool_name(server, tool + "2") != name or len(f"mcp__{server}__{tool}") <= 64


def test_long_names_differ_by_hash() -> None:
    one, two = tool_name("s", "a" * 70 + "1"), tool_name("s", "a" * 70 + "2")
    assert len(one) == len(two) == 64 and one != two


def test_names_that_clean_to_the_same_stay_apart() -> None:
    parts = unique_parts(["a.b", "a_b", "c"])
    assert parts["a.b"] == "a_b" and parts["a_b"] != "a_b" and parts["c"] == "c"
    named = unique_tool_names("s", "s", ["get.item", "get_item"])
    assert sorted(named.values()) == ["get.item", "get_item"] and len(named) == 2
    assert all(VALID.fullmatch(n) for n in named)


@pytest.mark.parametrize("rule", ["mcp__github", "mcp__github__*", "mcp__github__create_issue"])
def test_rules_name_a_server_or_one_tool(rule: str) -> None:
    parsed = Rule.parse(rule)
    assert parsed.names_tool("mcp__github__create_issue")
    assert not parsed.names_tool("mcp__gitlab__create_issue")
    assert not parsed.names_tool("mcp__github_enterprise__create_issue")
    assert parsed.names_tool("mcp__github__list_prs") == (rule != "mcp__github__create_issue")


@pytest.mark.parametrize("rule", ["mcp__*", "mcp__a__b__*", "mcp__a*"])
def test_wider_wildcards_are_not_rules(rule: str) -> None:
    with pytest.raises(ValueError, match="not a permission rule"):
        Rule.parse(rule)


def mcp(name: str) -> Tool:
    """A tool as `core/mcp/tools.py` builds one: `execute`, no path."""

    async def never(args: dict[str, Any], ctx: ToolContext) -> str:
        raise AssertionError("the gate never runs a tool")

    return Tool(name=name, description="", parameters={"type": "object"}, run=never)


TOOL = "mcp__github__create_issue"
ISSUE = mcp(TOOL)


def policy(
    workspace: Path, mode: PermissionMode = "default", allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()
) -> PermissionPolicy:
    return PermissionPolicy.from_strings(workspace, mode, allow, deny)


def test_every_mcp_call_asks_in_default_and_accept_edits(workspace: Path) -> None:
    modes: tuple[PermissionMode, ...] = ("default", "acceptEdits")
    for mode in modes:
        decision = policy(workspace, mode).decide(ISSUE, {"title": "x"})
        assert decision.verdict == "ask" and "MCP server github" in decision.reason
    assert policy(workspace, "bypassPermissions").decide(ISSUE, {}).verdict == "allow"


def test_plan_mode_denies_mcp_unless_an_allow_rule_names_it(workspace: Path) -> None:
    assert policy(workspace, "plan").decide(ISSUE, {}).verdict == "deny"
    for rule in ("mcp__github", "mcp__github__*", TOOL):
        assert policy(workspace, "plan", allow=(rule,)).decide(ISSUE, {}).verdict == "allow"
    assert policy(workspace, "plan", allow=("mcp__gitlab",)).decide(ISSUE, {}).verdict == "deny"
    assert policy(workspace, "plan", allow=("Bash",)).decide(BUILTIN["Bash"], {"command": "ls"}).verdict == "deny"


def test_allow_and_deny_rules(workspace: Path) -> None:
    assert policy(workspace, allow=("mcp__github",)).decide(ISSUE, {}).verdict == "allow"
    gate = policy(workspace, "bypassPermissions", allow=("mcp__github",), deny=("mcp__github__create_issue",))
    decision = gate.decide(ISSUE, {})
    assert decision.verdict == "deny" and "mcp__github__create_issue" in decision.reason
    assert gate.hides(TOOL) and not gate.hides("mcp__github__list_prs")
    assert policy(workspace, deny=("mcp__github__*",)).hides("mcp__github__list_prs")


def test_the_answers_rules(workspace: Path) -> None:
    gate = policy(workspace)
    assert gate.suggest_rule(ISSUE, {"title": "x"}) == TOOL
    assert gate.server_rule(TOOL) == "mcp__github" and gate.server_rule("Bash") == ""
    gate.add_session_rule(gate.server_rule(TOOL))
    assert gate.decide(mcp("mcp__github__list_prs"), {}).verdict == "allow"
    assert gate.decide(mcp("mcp__gitlab__list_prs"), {}).verdict == "ask"


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        ({"type": "object"}, {"type": "object", "properties": {}}),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "ghost", 3]},
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        ),
        ({"type": "array"}, None),
        ({"type": "object", "properties": ["a"]}, None),
        ({"type": "object", "properties": {"a": "string"}}, None),
        ({"type": "object", "properties": {f"p{i}": {"description": "x" * 100} for i in range(600)}}, None),
    ],
)
def test_a_servers_schema_is_made_safe_to_send(given: dict[str, object], sent: dict[str, object] | None) -> None:
    """One schema the API refuses fails the whole request, every request after it too."""
    from todo_agent.core.mcp.remote import RemoteTool
    from todo_agent.core.mcp.tools import OPEN_SCHEMA, _description, _schema

    tool = RemoteTool("t", "Does t.", given)
    assert _schema(tool) == (sent if sent is not None else OPEN_SCHEMA)
    assert ("could not be used" in _description(type("S", (), {"name": "s"})(), tool)) == (sent is None)  # type: ignore[arg-type]


def test_tools_that_join_after_a_measured_request_count_in_the_next_estimate() -> None:
    """An MCP server that comes up between requests adds its schemas to the next prompt."""
    from todo_agent.core.model.base import ModelUsage
    from todo_agent.core.window.tokens import TokenCounter

    counter = TokenCounter()
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    builtin = [{"type": "function", "function": {"name": "Read", "parameters": {}}}]
    counter.observe(messages, builtin, ModelUsage(prompt_tokens=1000, completion_tokens=10))
    after = [*messages, {"role": "assistant", "content": "hello"}]
    before = counter.prompt_tokens(after, builtin)
    mcp = [{"type": "function", "function": {"name": f"mcp__s__t{i}", "description": "x" * 350}} for i in range(10)]
    grown = counter.prompt_tokens(after, [*builtin, *mcp])
    assert grown - before >= 1000  # ~3,700 characters of schemas, at 3.5 characters a token or less
