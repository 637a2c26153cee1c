"""Rebuilding the conversation from history, summaries, and the slash-command table."""

from __future__ import annotations

import json

from todo_agent.core.export.blocks import output_summary
from todo_agent.tui.commands import SLASH_COMMANDS, complete, parse
from todo_agent.tui.transcript import (
    AssistantEntry,
    NoticeEntry,
    ReminderEntry,
    ToolEntry,
    UserEntry,
    entries_from_history,
    guess_status,
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
    entries = entries_from_history(history, show_reminders=True)
    assert entries == [
        UserEntry("add pagination"),
        ReminderEntry("reminder", "This is the current task list", "This is the current task list\n☐ #1 x"),
        AssistantEntry("Three steps."),
        ToolEntry("a", "Read", "posts.py", "ok", "     1\tdef list_posts():"),
        ToolEntry("b", "TaskUpdate", "#1 → completed", "error", "Error: unknown task id '1'"),
        ToolEntry("c", "Bash", "sleep 100", "cancelled", ""),
        AssistantEntry("Done."),
    ]
    assert entries_from_history(history) == [e for e in entries if not isinstance(e, NoticeEntry)]  # the default


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
    assert output_summary("first\nsecond", "ok") == "first  …(+1 line)"
    assert output_summary("", "ok") == "(no output)"
    assert output_summary("", "denied") == "denied"


def test_a_narrow_summary_cuts_the_first_line_and_keeps_the_count() -> None:
    output = "The file posts.py has been updated (1 replacement). Snippet:\n" + "line\n" * 12
    summary = output_summary(output, "ok", limit=40)
    assert len(summary) <= 40
    assert summary.startswith("The file posts.py")
    assert summary.endswith("…(+12 lines)")


def test_slash_command_completion_and_parsing() -> None:
    assert [c.name for c in complete("/mo")] == ["/mode", "/model"]
    assert [c.name for c in complete("/")] == [c.name for c in SLASH_COMMANDS]
    assert complete("/mode plan") == []
    assert complete("hello") == []
    parsed = parse("/mode  plan ")
    assert parsed is not None and parsed[0].name == "/mode" and parsed[1] == "plan"
    assert parse("/nope") is None
    assert "/compact" in {c.name for c in SLASH_COMMANDS}
    parsed = parse("/compact keep the API names")
    assert parsed is not None and parsed[1] == "keep the API names"


def _one_call(output: str) -> list[dict[str, object]]:
    return [
        {"role": "assistant", "content": None, "tool_calls": [call("t", "Bash", command="make")]},
        {"role": "tool", "tool_call_id": "t", "content": output},
    ]


def test_a_recorded_status_wins_over_the_wording() -> None:
    (entry,) = entries_from_history(_one_call("all fine"), status_of={"t": "error"}.get)
    assert isinstance(entry, ToolEntry) and entry.status == "error"
    (entry,) = entries_from_history(_one_call("Error: looks bad but was fine"), status_of={"t": "ok"}.get)
    assert isinstance(entry, ToolEntry) and entry.status == "ok"
    # Nothing recorded (a session saved before statuses were kept): the wording decides.
    (entry,) = entries_from_history(_one_call("The user rejected this tool call."), status_of={}.get)
    assert isinstance(entry, ToolEntry) and entry.status == "denied"


def test_old_sessions_read_the_cores_wording() -> None:
    assert guess_status("Error: unknown tool 'X'") == "error"
    assert guess_status("denied: this call needs approval") == "denied"
    assert guess_status("cancelled: the turn was interrupted before this call finished") == "cancelled"
    assert guess_status("The user rejected this tool call and stopped the turn.") == "denied"
    assert guess_status("The user rejected this tool call with feedback: use ./tmp") == "denied"
    assert guess_status("compiling\nfailed\nExit code 2") == "error"
    assert guess_status("Exit code 1") == "error"
    assert guess_status("started\nExit code -9 (killed by SIGKILL)") == "error"
    assert guess_status("partial\nCommand timed out after 120 s; it and everything it started were killed.") == "error"
    # Output that merely mentions failure is a call that worked.
    assert guess_status("error: this line is from a log file") == "ok"
    assert guess_status("     1\tError: disk quota exceeded") == "ok"
    assert guess_status("rejected patches: 0") == "ok"
    assert guess_status("(no output)") == "ok"


def test_a_tool_line_fits_its_width_with_the_count_and_the_time() -> None:
    from todo_agent.tui.widgets.blocks import tool_line

    output = "The file posts.py has been updated (1 replacement). Snippet:\n" + "line\n" * 12
    entry = ToolEntry(call_id="c1", name="Edit", summary="posts.py", status="ok", output=output, elapsed=2.5)
    under = tool_line(entry, waiting=False, width=60).plain.split("\n")[1]
    assert len(under) <= 60
    assert under.endswith("…(+12 lines) · 2.5s")
