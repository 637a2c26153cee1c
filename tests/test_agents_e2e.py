"""Sub-agents through the real `todo-agent` command: headless runs, kill -9, two processes on
one shared list, and three sub-agents streaming at once from an OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fake_openai import run_in_thread
from test_headless_e2e import todo_agent

from todo_agent.core.tasks.store import TaskStore


def tc(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def write_script(path: Path, script: dict[str, Any]) -> str:
    path.write_text(json.dumps(script), encoding="utf-8")
    return f"script:{path}"


def command() -> list[str]:
    script = Path(sys.executable).with_name("todo-agent")
    return [str(script)] if script.exists() else [sys.executable, "-m", "todo_agent.frontends.cli"]


def wait_for(condition: Any, limit: float = 30.0) -> None:
    """Until `condition()` holds: another process's state, read from its files."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def session_tasks(home: Path) -> Path:
    (found,) = [p for p in (home / "todo-agent" / "sessions").glob("*/*.tasks.json")]
    return found


def test_p_with_children_asking_never_hangs_and_the_json_lists_them(workspace: Path, tmp_path: Path) -> None:
    script = {
        "steps": [
            {"tool_calls": [tc("TaskCreate", subject="Write notes")]},
            {"tool_calls": [tc("Agent", description="Write notes", prompt="write notes.txt", task_id="1")]},
            {"text": "the sub-agent could not write"},
        ],
        "agents": [
            {
                "match": "write notes",
                "steps": [
                    {"tool_calls": [tc("Write", file_path="notes.txt", content="n\n")]},
                    {"tool_calls": [tc("Bash", command="touch made-by-bash")]},
                    {"text": "neither was allowed"},
                    {"text": "so the task is not done"},
                ],
            }
        ],
    }
    model = write_script(tmp_path / "s.json", script)
    started = time.monotonic()
    result = todo_agent(workspace, None, "-p", "go", "--model", model, "--tasks", "v2", "--output-format", "json")
    assert time.monotonic() - started < 30
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    (child,) = out["agents"]
    assert (child["agent_id"], child["status"], child["task_id"]) == ("general-1", "partial", "1")
    assert child["files"] == [] and child["tools"] == 2
    assert not (workspace / "notes.txt").exists() and not (workspace / "made-by-bash").exists()
    assert out["tasks"][0]["status"] == "pending"
    assert out["tasks"][0]["attempts"][0]["outcome"] == "partial"
    assert out["usage"]["prompt_tokens"] > child["tokens"] // 2  # its tokens are in the session's usage
    assert "todo-agent: general-1 started on task #1: Write notes" in result.stderr
    assert "todo-agent: general-1 partial (it ended without marking its task completed)" in result.stderr


def test_stream_json_events_carry_the_agent_id(workspace: Path, tmp_path: Path) -> None:
    script = {
        "steps": [{"tool_calls": [tc("Agent", description="Say hi", prompt="say hi")]}, {"text": "done"}],
        "agents": [
            {
                "match": "say hi",
                "steps": [{"tool_calls": [{"id": "child_read", "name": "Glob", "arguments": {"pattern": "*"}}]}, "hi"],
            }
        ],
    }
    model = write_script(tmp_path / "s.json", script)
    result = todo_agent(workspace, None, "-p", "go", "--model", model, "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    theirs = [line for line in lines if line.get("agent_id") == "general-1"]
    assert {"AgentStarted", "AssistantMessage", "TurnEnd", "AgentFinished"} <= {line["type"] for line in theirs}
    # AgentStarted/AgentFinished are the main agent's Agent call's: its call_id; the rest say whose child.
    assert {line["call_id"] for line in theirs if line["type"].startswith("Agent")} == {"call_1_1"}
    theirs = [line for line in theirs if not line["type"].startswith("Agent")]
    assert all(line["parent_call_id"] == "call_1_1" for line in theirs)
    message = next(line for line in theirs if line["type"] == "AssistantMessage" and line["content"])
    assert message == {
        "type": "AssistantMessage",
        "content": "hi",
        "agent_id": "general-1",
        "parent_call_id": "call_1_1",
    }
    # Its tool events keep the sub-agent's own call id: a reader can pair its start and end.
    tools = [(line["type"], line["call_id"]) for line in theirs if line["type"] in ("ToolStarted", "ToolFinished")]
    assert tools == [("ToolStarted", "child_read"), ("ToolFinished", "child_read")]
    assert all(line["agent_id"] == "general-1" for line in theirs if line["type"] == "ToolStarted")


def test_kill_9_mid_child_then_continue_releases_the_claim(
    workspace: Path, tmp_path: Path, isolated_home: Path
) -> None:
    script = {
        "steps": [
            {"tool_calls": [tc("TaskCreate", subject="Long job")]},
            {"tool_calls": [tc("Agent", description="Long job", prompt="run the long job", task_id="1")]},
        ],
        "agents": [
            {
                "match": "long job",
                "steps": [
                    {"tool_calls": [tc("Write", file_path="half.txt", content="half\n")]},
                    {"tool_calls": [tc("Bash", command="echo $$ > pid; exec sleep 60")]},
                ],
            }
        ],
    }
    model = write_script(tmp_path / "s.json", script)
    process = subprocess.Popen(
        [*command(), "-p", "go", "--model", model, "--tasks", "v2", "--permission-mode", "bypassPermissions"],
        cwd=workspace,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: (workspace / "pid").exists() and (workspace / "pid").read_text().strip())
        tasks = session_tasks(isolated_home)
        assert '"claim"' in tasks.read_text()
    finally:
        process.kill()  # SIGKILL: nothing of it runs after this
        process.wait()
    os.kill(int((workspace / "pid").read_text()), signal.SIGKILL)  # its orphaned command

    after = write_script(tmp_path / "after.json", {"steps": [{"text": "resumed"}]})
    result = todo_agent(workspace, None, "-p", "status", "--continue", "--model", after, "--output-format", "json")
    assert result.returncode == 0, result.stderr
    assert '#1 "Long job" was being worked on by general-1 when its process ended' in result.stderr
    task = json.loads(result.stdout)["tasks"][0]
    assert (task["status"], task["owner"], task.get("claim")) == ("pending", "", None)
    (attempt,) = task["attempts"]
    assert (attempt["agent"], attempt["outcome"], attempt["files"]) == ("general-1", "lost", ["half.txt  +1 −0"])


def test_two_processes_on_one_task_list_claim_through_the_same_lock(workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    plan = write_script(
        tmp_path / "plan.json",
        {"steps": [{"tool_calls": [tc("TaskCreate", subject="Shared job")]}, {"text": "planned"}]},
    )
    first = todo_agent(workspace, None, "-p", "plan", "--model", plan, "--tasks", "v2", "--task-list", "team")
    assert first.returncode == 0, first.stderr
    holder = write_script(
        tmp_path / "holder.json",
        {
            "steps": [{"tool_calls": [tc("Agent", description="Hold it", prompt="hold the job", task_id="1")]}],
            "agents": [
                {
                    "match": "hold the job",
                    "steps": [{"tool_calls": [tc("Bash", command="echo $$ > pid; exec sleep 60")]}],
                }
            ],
        },
    )
    process = subprocess.Popen(
        [*command(), "-p", "work", "--model", holder, "--task-list", "team", "--permission-mode", "bypassPermissions"],
        cwd=workspace,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: (workspace / "pid").exists() and (workspace / "pid").read_text().strip())
        taker = write_script(
            tmp_path / "taker.json",
            {
                "steps": [
                    {"tool_calls": [tc("TaskList")]},
                    {"tool_calls": [tc("Agent", description="Take it", prompt="take the job", task_id="1")]},
                    {"text": "it is taken"},
                ]
            },
        )
        second = todo_agent(
            other,
            None,
            "-p",
            "take",
            "--model",
            taker,
            "--tasks",
            "v2",
            "--task-list",
            "team",
            "--output-format",
            "stream-json",
        )
        assert second.returncode == 0, second.stderr
        outputs = [json.loads(line) for line in second.stdout.splitlines()]
        listing, refusal = (line["output"] for line in outputs if line["type"] == "ToolFinished")
        assert "◼ #1 Shared job (sub-agent general-1 is working on it)" in listing
        assert refusal == "Error: no sub-agent started: task #1 is already being worked on by general-1"
    finally:
        process.kill()
        process.wait()
        os.kill(int((workspace / "pid").read_text()), signal.SIGKILL)
    # The first process is gone: the next session that opens the list gives its claim back.
    resume = write_script(tmp_path / "resume.json", {"steps": [{"text": "ok"}]})
    third = todo_agent(other, None, "-p", "look", "--model", resume, "--task-list", "team", "--output-format", "json")
    assert json.loads(third.stdout)["tasks"][0]["status"] == "pending"
    data_root = Path(os.environ["TODO_AGENT_HOME"])
    assert TaskStore.load(data_root / "task-lists" / "team.tasks.json").snapshot()[0].attempts[0].outcome == "lost"


def test_three_children_stream_at_once_from_an_openai_compatible_server(workspace: Path) -> None:
    briefs = ("look at alpha", "look at beta", "look at gamma")
    responses: list[dict[str, Any]] = [
        {"tool_calls": [tc("Agent", description=f"Look {n}", prompt=brief) for n, brief in enumerate(briefs)]},
        *(
            {
                "match": brief,
                "text": f"{brief}: " + "found nothing to change. " * 12,
                "chunk_size": 4,
                "chunk_delay": 0.01,
            }
            for brief in briefs
        ),
        {"text": "all three looked"},
    ]
    with run_in_thread(responses) as server:
        result = todo_agent(workspace, server.base_url, "-p", "look around", "--output-format", "json")
        most = server.max_streaming
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == "all three looked"
    assert sorted((a["agent_id"], a["status"]) for a in out["agents"]) == [
        ("general-1", "completed"),
        ("general-2", "completed"),
        ("general-3", "completed"),
    ]
    assert most == 3  # three answers streaming at the same moment
    summaries = {a["agent_id"]: a["summary"] for a in out["agents"]}
    assert summaries["general-2"].startswith("look at beta: found nothing")
