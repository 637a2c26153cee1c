"""The task system end to end: `todo-agent -p --tasks v2` against a local OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_openai import run_in_thread
from test_headless_e2e import POSTS, tc, todo_agent

from todo_agent.core.session.directory import list_sessions
from todo_agent.core.tasks.render import LEGEND

REMINDER = "<system-reminder>"


def tool_replies(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def reminders(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user" and m["content"].startswith(REMINDER)]


def tasks_file(workspace: Path) -> list[dict[str, Any]]:
    session = list_sessions(workspace)[0]
    data = json.loads(session.path.with_name(f"{session.id}.tasks.json").read_text())
    return list(data["tasks"])


def _transcript(workspace: Path) -> list[dict[str, Any]]:
    """Every message the session file holds, compacted ones included."""
    path = list_sessions(workspace)[0].path
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r["message"] for r in records if r.get("type") == "message"]


def step(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(calls)}


def test_the_seeds_pagination_flow(workspace: Path) -> None:
    (workspace / "posts.py").write_text(POSTS)
    new = "def list_posts(posts, page=1, page_size=20):\n    return posts[(page - 1) * page_size : page * page_size]\n"
    responses = [
        {
            "text": "Three steps; a task list first.",
            "tool_calls": [
                tc("TaskCreate", subject="Read posts", activeForm="Reading posts"),
                tc("TaskCreate", subject="Add page/page_size to list_posts", activeForm="Adding pagination"),
                tc("TaskCreate", subject="Run the check", activeForm="Running the check"),
            ],
        },
        {"tool_calls": [tc("TaskUpdate", taskId="1", status="in_progress")]},
        {"tool_calls": [tc("Read", file_path="posts.py")]},
        {
            "tool_calls": [
                tc("TaskUpdate", taskId="1", status="completed"),
                tc("TaskUpdate", taskId="2", status="in_progress"),
            ]
        },
        {"tool_calls": [tc("Edit", file_path="posts.py", old_string=POSTS, new_string=new)]},
        {
            "tool_calls": [
                tc("TaskUpdate", taskId="2", status="completed"),
                tc("TaskUpdate", taskId="3", status="in_progress"),
            ]
        },
        {
            "tool_calls": [
                tc("Bash", command="python3 -c 'import posts; print(posts.list_posts(list(range(50)), 2)[0])'")
            ]
        },
        {"tool_calls": [tc("TaskUpdate", taskId="3", status="completed")]},
        {"text": "Pagination added; page 2 starts at 20."},
    ]
    with run_in_thread(responses) as server:
        result = todo_agent(
            workspace, server.base_url, "-p", "paginate", "--tasks", "v2", "--permission-mode", "bypassPermissions"
        )
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    replies = tool_replies(requests[-1])
    assert replies[:3] == ["#1 created · 1 open: #1", "#2 created · 2 open: #1 #2", "#3 created · 3 open: #1 #2 #3"]
    assert replies[3] == "#1 → in_progress · 3 open: #1 #2 #3"
    assert replies[5] == "#1 → completed · 2 open: #2 #3"
    assert "has been updated" in replies[7] and replies[10].strip() == "20"
    assert replies[-1].startswith("#3 → completed") and replies[-1].endswith("all 3 completed")
    assert all(reminders(r) == [] for r in requests)
    saved = tasks_file(workspace)
    assert [(t["id"], t["status"]) for t in saved] == [("1", "completed"), ("2", "completed"), ("3", "completed")]
    assert "☒ #3 Run the check" in result.stderr  # the list as it changed, on stderr in text mode


def test_a_lazy_model_is_reminded_on_the_seventh_request_and_continued_once(workspace: Path) -> None:
    """The seeds' interval, as it is with the stale-task rule off (with it on, a task in
    progress is named after `stale_after_calls` calls instead: `tests/test_reminders_work.py`)."""
    (workspace / "a.txt").write_text("a\n")
    (workspace / ".todo-agent").mkdir()
    (workspace / ".todo-agent" / "settings.toml").write_text("stale_after_calls = 0\n")
    # Not six identical calls: that would be a loop (the repeated-call guard stops it at 5).
    reads = [{"tool_calls": [tc("Read", file_path="a.txt", limit=n + 1)]} for n in range(6)]
    responses = [
        {"tool_calls": [tc("TaskCreate", subject="Look around"), tc("TaskCreate", subject="Report")]},
        {"tool_calls": [tc("TaskUpdate", taskId="1", status="in_progress")]},
        *reads,
        {"text": "Stopping here."},  # ends the turn with #1 in progress
        {"text": "Still stopping."},  # the one continuation; no second one
    ]
    with run_in_thread(responses) as server:
        result = todo_agent(workspace, server.base_url, "-p", "look", "--tasks", "v2")
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Still stopping."
    # TaskUpdate answered in response 2: requests 3..8 carry no reminder, request 9 does.
    counts = [len(reminders(r)) for r in requests]
    assert counts[:8] == [0] * 8
    assert "You have not updated the task list in the last 6 steps" in reminders(requests[8])[0]
    assert "You still have unfinished tasks" in reminders(requests[9])[-1]
    assert len(requests) == 10


def test_the_reminder_interval_setting_sets_when_the_reminder_comes(workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    settings = workspace / ".todo-agent" / "settings.toml"
    settings.parent.mkdir()
    settings.write_text("reminder_interval = 2\nstale_after_calls = 0\n")
    responses = [
        {"tool_calls": [tc("TaskCreate", subject="Look around"), tc("TaskUpdate", taskId="1", status="in_progress")]},
        *({"tool_calls": [tc("Read", file_path="a.txt")]} for _ in range(3)),
        {"tool_calls": [tc("TaskUpdate", taskId="1", status="completed")]},
        {"text": "Done."},
    ]
    with run_in_thread(responses) as server:
        result = todo_agent(workspace, server.base_url, "-p", "look", "--tasks", "v2")
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    # Task tools in response 1: requests 2 and 3 carry no reminder, request 4 does (not 8).
    assert [len(reminders(r)) for r in requests[:3]] == [0, 0, 0]
    assert "You have not updated the task list in the last 2 steps" in reminders(requests[3])[0]


def test_hostile_task_input_gets_clear_tool_errors(workspace: Path) -> None:
    responses = [
        {"tool_calls": [tc("TaskCreate", subject="Real task")]},
        {
            "tool_calls": [
                tc("TaskUpdate", taskId="99", status="completed"),
                tc("TaskUpdate", taskId="1", status="done"),
                {"name": "TaskCreate", "arguments": '{"subject": "broken'},
                tc("TaskDestroy", taskId="1"),
                {"name": "TaskCreate", "arguments": json.dumps(json.dumps({"subject": "double encoded"}))},
            ]
        },
        {"text": "Handled."},
    ]
    with run_in_thread(responses) as server:
        result = todo_agent(workspace, server.base_url, "-p", "go", "--tasks", "v2")
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    replies = tool_replies(requests[-1])[1:]
    assert replies[0].startswith("Error: no task #99")
    assert replies[1].startswith("Error: invalid status 'done'")
    assert replies[2].startswith("Error: invalid JSON in tool arguments")
    assert replies[3].startswith("Error: unknown tool 'TaskDestroy'")
    assert replies[4] == "#2 created · 2 open: #1 #2"
    assert result.stdout.strip() == "Handled."


# --- a plan the window can hold ------------------------------------------------------------


def test_a_one_megabyte_subject_is_refused_and_the_session_resumes(workspace: Path, tmp_path: Path) -> None:
    """A model that creates a 1 MB task was obeyed: the subject went into every result and
    reminder, and the next request overflowed (the scripted run ended compacting in vain)."""
    huge = "x" * 1_048_576
    calls = [
        tc("TaskCreate", subject=huge),
        tc("TaskCreate", subject="Fix the parser", description="d" * 4_001),
        tc("TaskCreate", subject="Fix the parser", activeForm="a" * 201),
        tc("TaskCreate", subject="Fix the parser", description="What breaks, and the test that shows it."),
        tc("TaskUpdate", taskId="1", subject="y" * 201),
        tc("TaskList"),
    ]
    # The model's own 1 MB call is kept in the history cut (the tool got it whole), so the
    # next request is not compacted first: it carried the megabyte once, and then always.
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": calls}, "done"]))
    result = todo_agent(workspace, None, "-p", "plan", "--model", f"script:{script}", "--tasks", "v2")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "compacted" not in result.stderr
    assert result.stdout.strip() == "done"
    (asked,) = [m for m in _transcript(workspace) if m["role"] == "assistant" and m.get("tool_calls")]
    kept = asked["tool_calls"][0]["function"]["arguments"]
    assert len(kept) < 100_000 and "characters not kept in the history" in json.loads(kept)["subject"]
    replies = [m["content"] for m in _transcript(workspace) if m["role"] == "tool"]
    title = "(keep it a short title and put detail in description)"
    assert replies == [
        f"Error: subject is 1,048,576 characters; the limit is 200 {title}",
        "Error: description is 4,001 characters; the limit is 4,000 "
        "(put long material in a file and name the file here)",
        "Error: activeForm is 201 characters; the limit is 200 (shorten it)",
        "#1 created · 1 open: #1",
        f"Error: subject is 201 characters; the limit is 200 {title}",
        f"☐ #1 Fix the parser\n({LEGEND})\n1 open: #1",
    ]
    assert [t["subject"] for t in tasks_file(workspace)] == ["Fix the parser"]
    script.write_text(json.dumps(["resumed"]))
    again = todo_agent(workspace, None, "-p", "go on", "--continue", "--model", f"script:{script}")
    assert again.returncode == 0 and again.stdout.strip() == "resumed", again.stderr[-2000:]


def test_a_session_file_holding_an_oversized_task_loads_cut_with_a_notice(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [tc("TaskCreate", subject="Fix the parser")]}, "planned"]))
    first = todo_agent(workspace, None, "-p", "plan", "--model", f"script:{script}", "--tasks", "v2")
    assert first.returncode == 0, first.stderr
    session = list_sessions(workspace)[0]
    path = session.path.with_name(f"{session.id}.tasks.json")
    data = json.loads(path.read_text())
    data["tasks"][0] |= {"subject": "s" * 1_048_576, "description": "d" * 10_000}  # as an older version saved it
    path.write_text(json.dumps(data))
    answers = [
        {"tool_calls": [tc("TaskList"), tc("TaskUpdate", taskId="1", owner="me")]},
        {"text": "carrying on"},
    ]
    with run_in_thread(answers) as server:
        resumed = todo_agent(workspace, server.base_url, "-p", "go on", "--continue", "--tasks", "v2")
        requests = list(server.requests)
    assert resumed.returncode == 0 and resumed.stdout.strip() == "carrying on", resumed.stderr[-2000:]
    assert (
        "todo-agent: The task list held text longer than its limits, cut to them: #1 subject (1,048,576 characters), "
        "#1 description (10,000 characters). The full text stays in the transcript."
    ) in resumed.stderr
    listing = tool_replies(requests[-1])[-2]  # TaskList, then TaskUpdate
    assert listing == "☐ #1 " + "s" * 199 + f"…\n({LEGEND})\n1 open: #1"
    assert all(len(json.dumps(r)) < 50_000 for r in requests)  # no request carries the megabyte
    assert [len(t["subject"]) for t in tasks_file(workspace)] == [200]  # saved cut at the next change
