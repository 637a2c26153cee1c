"""Hostile input never crashes a session: lone surrogates, bytes that are not UTF-8,
arguments nested too deep, transcript lines of the wrong shape. Each ends in a clear
message (or a tool error the model reads), and the session stays loadable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_openai import run_in_thread
from test_headless_e2e import todo_agent

from todo_agent.core.session.directory import latest_session, list_sessions
from todo_agent.core.session.transcript import Session


def _loadable(workspace: Path) -> Session:
    path = latest_session(workspace)
    assert path is not None
    session = Session.open(path)
    session.close()
    assert not session.warnings, session.warnings
    return session


def _tool_outputs(requests: list[Any]) -> list[str]:
    return [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]


# --- 8: lone surrogates and bytes that are not UTF-8 ------------------------------------


def test_a_lone_surrogate_in_model_text(workspace: Path) -> None:
    with run_in_thread([{"text": "hi \ud83d there"}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hello")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.strip() == "hi \ufffd there"
    assert _loadable(workspace).messages[-1]["content"] == "hi \ufffd there"


def test_a_lone_surrogate_in_tool_arguments(workspace: Path) -> None:
    calls = [
        {"name": "Read", "arguments": {"file_path": "x\ud83d.txt"}},
        {"name": "Write", "arguments": {"file_path": "y.txt", "content": "a\ud83d"}},
        {"name": "Bash", "arguments": {"command": "echo \ud83d"}},
    ]
    with run_in_thread([{"tool_calls": calls}, {"text": "done"}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "go", "--permission-mode", "bypassPermissions")
        outputs = _tool_outputs(server.requests)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert len(outputs) == 3
    assert all("surrogate" in output for output in outputs), outputs
    assert not (workspace / "y.txt").exists()
    _loadable(workspace)


def test_a_prompt_that_is_not_utf8(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["answered"]))
    command = [os.fsencode(Path(sys.executable).with_name("todo-agent")), b"-p", b"hi \xff there"]
    result = subprocess.run(
        [*command, b"--model", os.fsencode(f"script:{script}")],
        cwd=workspace,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stderr and b"not valid UTF-8" in result.stderr
    assert _loadable(workspace).messages[0]["content"] == "hi \ufffd there"


def test_a_stream_that_is_not_utf8(workspace: Path) -> None:
    event = '{"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": '
    event += '[{"index": 0, "delta": {"content": "caf\xe9"}, "finish_reason": null}]}'
    items = [{"raw_events": [event, "[DONE]"], "encoding": "latin-1"}] * 4
    with run_in_thread(items, check_unused=False) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hello")
    assert result.returncode == 1
    assert "not UTF-8" in result.stderr
    assert "Traceback" not in result.stderr


# --- 9: arguments nested too deep ---------------------------------------------------------


def _nested(depth: int) -> str:
    return '{"subject": "x", "description": ' + '{"a":' * depth + "1" + "}" * depth + "}"


@pytest.mark.parametrize("output_format", ["text", "json", "stream-json"])
def test_arguments_nested_too_deep_are_a_tool_error(workspace: Path, tmp_path: Path, output_format: str) -> None:
    calls = [
        {"name": "TaskCreate", "arguments": _nested(600)},
        {"name": "TaskCreate", "arguments": _nested(5000)},
        {"name": "Read", "arguments": '{"file_path": ' + "[" * 100_000 + "]" * 100_000 + "}"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "survived"}]}))
    result = todo_agent(workspace, None, "-p", "x", "--model", f"script:{script}", "--output-format", output_format)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "RecursionError" not in result.stderr
    assert "survived" in result.stdout
    session = _loadable(workspace)
    replies = [m["content"] for m in session.messages if m["role"] == "tool"]
    assert len(replies) == 3 and all(r.startswith("Error:") for r in replies), replies


# --- 10: transcript lines of the wrong shape ----------------------------------------------

BAD_LINES = [
    '{"type": "message", "message": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "[" * 100_000 + "]" * 100_000,
    '{"type": "message", "message": {"role": 5}}',
    '{"type": "message", "message": {"role": "assistant", "content": null, "tool_calls": "x"}}',
    '{"type": "message", "message": {"role": "assistant", "content": null, "tool_calls": [{"id": 1}]}}',
    '{"type": "message", "message": {"role": "tool", "tool_call_id": ["x"], "content": "r"}}',
    '{"type": "message", "message": {"role": "user", "content": {"a": 1}}}',
    '{"type": "message", "message": {"role": "user", "content": "kept"}, "status": ["x"]}',
    "[1, 2]",
    '"just a string"',
]


def test_wrong_shaped_transcript_lines_are_skipped_with_a_warning(workspace: Path, tmp_path: Path) -> None:
    session = Session.create(workspace)
    session.append({"role": "user", "content": "first"})
    session.append({"role": "assistant", "content": "reply"})
    session.close()
    with session.path.open("a", encoding="utf-8") as f:
        for line in BAD_LINES:
            f.write(line + "\n")
    assert [s.id for s in list_sessions(workspace)] == [session.id]  # the /resume picker lists it
    reopened = Session.open(session.path)
    reopened.close()
    assert [m["content"] for m in reopened.messages] == ["first", "reply", "kept"]
    assert sum("skipped" in w for w in reopened.warnings) >= len(BAD_LINES) - 1
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["continued"]))
    result = todo_agent(workspace, None, "-p", "again", "--continue", "--model", f"script:{script}")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "continued"
    assert "Traceback" not in result.stderr


# --- 14: a 5,000-digit task id -----------------------------------------------------------


def test_a_five_thousand_digit_task_id_is_no_such_task(workspace: Path, tmp_path: Path) -> None:
    big = "9" * 5000
    calls = [
        {"name": "TaskCreate", "arguments": {"subject": "real"}},
        {"name": "TaskGet", "arguments": {"taskId": big}},
        {"name": "TaskUpdate", "arguments": '{"taskId": ' + big + ', "status": "completed"}'},
        {"name": "TaskUpdate", "arguments": {"taskId": "1", "addBlockedBy": [big]}},
        {"name": "Read", "arguments": '{"file_path": "x", "offset": ' + big + "}"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "ok"}]}))
    result = todo_agent(workspace, None, "-p", "x", "--model", f"script:{script}", "--tasks", "v2")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    replies = [m["content"] for m in _loadable(workspace).messages if m["role"] == "tool"]
    assert replies[0].startswith("Task #1 created")
    assert all(r.startswith("Error: no task #9999") for r in replies[1:4]), replies
    assert replies[4].startswith("Error: parameter 'offset'"), replies[4]
    assert all(len(r) < 300 for r in replies)
