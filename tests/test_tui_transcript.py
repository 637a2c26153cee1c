"""Rebuilding the conversation from history, summaries, and the slash-command table."""

from __future__ import annotations

import json

from todo_agent.tui.commands import SLASH_COMMANDS, complete, parse
from todo_agent.tui.transcript import (
    AssistantEntry,
    NoticeEntry,
    ToolEntry,
    UserEntry,
    entries_from_history,
    output_summary,
    summarize_arguments,
)


def call(call_id: str, name: str, **arguments: object) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_history_becomes_prompts_text_and_paired_tool_calls() -> None:
    history = [
        {"role": "system", "content": "you are an agent"},
        {"role": "user", "content": "add pagination"},
        {"role": "user", "content": "<system-reminder>\nThis is the current task list\n☐ #1 x\n</system-reminder>"},
        {
            "role": "assistant",
            "content": "Three steps.",
            "tool_calls": [
                call("a", "Read", file_path="posts.py"),
                call("b", "TaskUpdate", taskId="1", status="completed"),
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "     1\tdef list_posts():"},
        {"role": "tool", "tool_call_id": "b", "content": "Error: unknown task id '1'"},
        {"role": "assistant", "content": None, "tool_calls": [call("c", "Bash", command="sleep 100")]},
        {"role": "assistant", "content": "Done."},
    ]
    entries = entries_from_history(history)
    assert entries == [
        UserEntry("add pagination"),
        NoticeEntry("reminder: This is the current task list", "dim"),
        AssistantEntry("Three steps."),
        ToolEntry("a", "Read", "posts.py", "ok", "     1\tdef list_posts():"),
        ToolEntry("b", "TaskUpdate", "#1 → completed", "error", "Error: unknown task id '1'"),
        ToolEntry("c", "Bash", "sleep 100", "cancelled", ""),
        AssistantEntry("Done."),
    ]
    assert not any(isinstance(e, NoticeEntry) for e in entries_from_history(history, show_reminders=False))


def test_content_given_as_parts_and_broken_arguments() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "hello "}, {"type": "text", "text": "there"}]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "x", "function": {"name": "Glob", "arguments": "{oops"}}],
        },
    ]
    assert entries_from_history(history) == [UserEntry("hello there"), ToolEntry("x", "Glob", "", "cancelled")]


def test_argument_summaries() -> None:
    assert summarize_arguments("Edit", {"file_path": "src/a.py", "old_string": "x"}) == "src/a.py"
    assert summarize_arguments("TaskCreate", {"subject": "Read the code"}) == "Read the code"
    assert summarize_arguments("TodoWrite", {"todos": [{}, {}]}) == "2 items"
    assert summarize_arguments("Bash", {"command": "x" * 200}).endswith("…")
    assert summarize_arguments("TaskList", {}) == ""


def test_output_summary() -> None:
    assert output_summary("ok", "ok") == "ok"
    assert output_summary("\nfirst\nsecond\nthird", "ok") == "first  …(+2 lines)"
    assert output_summary("", "ok") == "(no output)"
    assert output_summary("", "denied") == "denied"


def test_slash_command_completion_and_parsing() -> None:
    assert [c.name for c in complete("/mo")] == ["/mode", "/model"]
    assert [c.name for c in complete("/")] == [c.name for c in SLASH_COMMANDS]
    assert complete("/mode plan") == []
    assert complete("hello") == []
    parsed = parse("/mode  plan ")
    assert parsed is not None and parsed[0].name == "/mode" and parsed[1] == "plan"
    assert parse("/nope") is None
    assert "/compact" not in {c.name for c in SLASH_COMMANDS}
