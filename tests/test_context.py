"""What a request holds, by part (`/context`, `-p` json `usage.context`), and the plan's
cost metered per request and for the session (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_openai import count_tokens, run_in_thread
from test_headless_e2e import tc, todo_agent
from test_mcp_headless import user_settings

from todo_agent.core.model.base import Message, ModelUsage
from todo_agent.core.tasks.reminders import reminder_message
from todo_agent.core.window.breakdown import Breakdown, Part, Shape, Spend, breakdown, plan_tokens, render_breakdown
from todo_agent.core.window.tokens import ContextBudget, TokenCounter

PLAN_LINE = "Plan work of three or more steps with the task tools."
INSTRUCTIONS = "Run the tests with pytest -q before you say a task is done."


def schema(name: str, description: str = "d" * 200) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def request() -> tuple[list[Message], list[dict[str, Any]]]:
    system = f"You are an agent. {PLAN_LINE}\n\nInstructions from AGENTS.md:\n<instructions>\n{INSTRUCTIONS}\n"
    attached = '<attachments>\n<attachment path="a.py">' + "x = 1\n" * 200 + "</attachment>\n</attachments>"
    calls = [call("t1", "TaskCreate", '{"subject": "Add it"}'), call("r1", "Read", '{"file_path": "a.py"}')]
    messages: list[Message] = [
        {"role": "system", "content": system + "</instructions>"},
        {"role": "user", "content": "add pagination"},
        {"role": "user", "content": attached},
        {"role": "assistant", "content": "Planning.", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "t1", "content": "#1 created · 1 open: #1"},
        {"role": "tool", "tool_call_id": "r1", "content": "     1\tx = 1\n" * 100},
        reminder_message("This is the current task list for this session. Continue.\n\n☐ #1 Add it"),
        {"role": "assistant", "content": "Done."},
    ]  # fmt: skip
    schemas = [schema("Read"), schema("Bash"), schema("TaskCreate"), schema("mcp__git__log"), schema("mcp__git__diff")]
    return messages, schemas


SHAPE = Shape(
    instructions=[INSTRUCTIONS],
    plan_line=PLAN_LINE,
    attachment=lambda m: str(m.get("content")).startswith("<attachments>\n"),
    server_of=lambda name: name.split("__")[1] if name.startswith("mcp__") else None,
)


def test_each_message_and_schema_goes_to_its_part_and_the_parts_add_up() -> None:
    messages, schemas = request()
    counter, budget = TokenCounter(chars_per_token=4.0), ContextBudget(window=32_768, threshold=0.8)

    found = breakdown(messages, schemas, counter, budget, SHAPE)

    assert [part.key for part in found.parts] == [
        "system", "instructions", "tools", "mcp:git", "plan", "attachments", "conversation",
    ]  # fmt: skip
    assert found.total == sum(p.tokens for p in found.parts)
    assert abs(found.total - counter.estimate(messages, schemas)) <= len(found.parts)  # rounding per part only
    assert found.tokens("instructions") == counter.tokens(len(INSTRUCTIONS))
    assert found.tokens("attachments") == counter.tokens(len(str(messages[2]["content"])) + 8)
    tools = counter.tokens(len(json.dumps(schemas[:2])))
    assert found.tokens("tools") == tools and found.tokens("mcp:git") == counter.tokens(len(json.dumps(schemas[3:])))
    # The plan: its schema, its line, the task call (not the Read beside it), its result, the reminder.
    plan_chars = len(json.dumps([schemas[2]])) + len(PLAN_LINE) + 24 + len("TaskCreate") + len('{"subject": "Add it"}')
    plan_chars += len("#1 created · 1 open: #1") + 8 + len(str(messages[6]["content"])) + 8
    assert found.tokens("plan") == counter.tokens(plan_chars)
    assert found.free == budget.trigger - found.total and not found.measured


def test_the_servers_count_is_shared_out_over_the_parts() -> None:
    messages, schemas = request()
    counter = TokenCounter(chars_per_token=4.0)
    counter.observe(messages[:-1], schemas, ModelUsage(prompt_tokens=5_000, completion_tokens=40))

    found = breakdown(messages, schemas, counter, ContextBudget(window=32_768), SHAPE)

    assert found.measured and found.total == counter.prompt_tokens(messages, schemas) == 5_040
    assert all(part.tokens > 0 for part in found.parts)
    share = found.tokens("plan") / found.total
    assert abs(share - plan_tokens(messages, schemas, 5_040, PLAN_LINE) / 5_040) < 0.01


def test_a_request_without_a_plan_has_no_plan_part_and_costs_the_plan_nothing() -> None:
    messages: list[Message] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    found = breakdown(messages, [schema("Read")], TokenCounter(), ContextBudget())
    assert "plan" not in [p.key for p in found.parts]
    assert plan_tokens(messages, [schema("Read")], 100) == 0


def test_the_spend_survives_a_garbled_record_and_says_its_share() -> None:
    assert Spend.from_record({"type": "spend", "prompt": "x", "plan": 1, "requests": 1}) == Spend()
    assert Spend.from_record({"type": "spend", "prompt": 10, "plan": 99, "requests": 1}) == Spend(10, 10, 1)
    assert Spend.from_record(None) == Spend()
    spend = Spend()
    spend.add(40_000, 800)
    spend.add(60_000, 1_300)
    assert spend.line() == "the plan has cost 2.1% of this session's prompt tokens (2,100 of 100,000, 2 requests)"


def test_the_report_draws_a_bar_of_the_window_and_a_row_per_part() -> None:
    found = Breakdown((Part("system", 1_000), Part("plan", 500), Part("conversation", 3_500)), 10_000, 8_000, True)
    text = render_breakdown(found, Spend(20_000, 400, 3), width=20)
    lines = text.splitlines()
    assert lines[0] == "5,000 / 10,000 tokens (50%) · compacts at 8,000 · measured"
    assert lines[1] == "[" + "██" + "◼" + "▪" * 7 + "·" * 6 + " " * 4 + "]"
    assert lines[2].split() == ["█", "system", "prompt", "1,000", "10.0%"]
    assert lines[-2].split()[-2:] == ["3,000", "30.0%"] and "free before compaction" in lines[-2]
    assert lines[-1] == "The plan: 500 tokens of this request (10.0%); 2.0% of this session's prompt tokens so far."


def test_headless_json_adds_up_the_request_the_server_received(workspace: Path, notes: Path) -> None:
    """A real run over HTTP with an MCP server (14 tools), an `@` file and a plan: the json's
    parts are the next request's, which is the last one the server got plus the answer."""
    user_settings(notes)
    (workspace / "notes.md").write_text("the quick brown fox\n" * 150)
    steps = [
        {"tool_calls": [tc("TaskCreate", subject="Summarise the notes")]},
        {"tool_calls": [tc("TaskUpdate", taskId="1", status="completed")]},
        {"text": "The notes are about a fox."},
    ]
    with run_in_thread(steps) as server:
        result = todo_agent(workspace, server.base_url, "-p", "summarise @notes.md", "--tasks", "v2",
                            "--output-format", "json", "--permission-mode", "bypassPermissions")  # fmt: skip
        bodies = list(server.requests)
    assert result.returncode == 0, result.stderr
    usage = json.loads(result.stdout)["usage"]
    parts, last = usage["context"]["parts"], bodies[-1]
    assert set(parts) == {"system", "tools", "mcp:t", "plan", "attachments", "conversation"}
    answer = len("The notes are about a fox.") // 4
    assert abs(sum(parts.values()) - (count_tokens(last) + answer)) <= 0.1 * count_tokens(last)
    mcp = [t for t in last["tools"] if t["function"]["name"].startswith("mcp__t__")]
    assert len(mcp) == 14 and abs(parts["mcp:t"] - len(json.dumps(mcp)) / 4) <= 0.2 * parts["mcp:t"]
    attached = [m for m in last["messages"] if str(m.get("content")).startswith("<attachments>")]
    assert abs(parts["attachments"] - len(attached[0]["content"]) / 4) <= 0.2 * parts["attachments"]
    # Metered per request: the plan's tokens over all three requests, a share of their prompts.
    assert usage["prompt_tokens"] == sum(count_tokens(b) for b in bodies)
    assert 0 < usage["plan_tokens"] < usage["prompt_tokens"] and usage["plan_share"] > 0
    assert usage["plan_share"] == round(usage["plan_tokens"] / usage["prompt_tokens"], 4)
