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
from todo_agent.core.settings import user_settings_path


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


HOOK = """#!/bin/sh
cat > /dev/null
printf '{"systemMessage": "hook \\\\ud83d", "hookSpecificOutput": {"additionalContext": "checked \\\\udcff"}}'
"""


def _surrogate_sources(workspace: Path, source: str) -> list[dict[str, Any]]:
    """The script for one way a lone surrogate reaches the history; sets up the workspace."""
    if source == "server text":
        return [{"text": "hi \ud83d there"}]
    if source == "server tool arguments":  # the raw character, streamed as the escape
        return [{"tool_calls": [{"name": "Glob", "arguments": '{"pattern": "*\ud83d"}'}]}, {"text": "done"}]
    if source == "a tool result":  # a PostToolUse hook's JSON adds context to the result
        hook = workspace.parent / "hook.sh"
        hook.write_text(HOOK)
        hook.chmod(0o755)
        settings = user_settings_path()
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(f'[[hooks.PostToolUse]]\ncommand = "{hook}"\n')
        (workspace / "a.txt").write_text("a\n")
        return [{"tool_calls": [{"name": "Read", "arguments": {"file_path": "a.txt"}}]}, {"text": "done"}]
    # A file whose name is not UTF-8: Python spells it with a lone surrogate.
    (workspace / os.fsdecode(b"caf\xe9.txt")).write_text("coffee\n")
    calls = [
        {"name": "Glob", "arguments": {"pattern": "*.txt"}},
        {"name": "Read", "arguments": '{"file_path": "caf\udce9.txt"}'},
        {"name": "Read", "arguments": {"file_path": "caf\ufffd.txt"}},
    ]
    return [{"tool_calls": calls}, {"text": "done"}]


@pytest.mark.parametrize("source", ["server text", "server tool arguments", "a tool result", "a file name"])
def test_a_lone_surrogate_from_any_source_is_sent_and_kept_as_u_fffd(workspace: Path, source: str) -> None:
    """Whatever put a lone surrogate in the history, the next request is valid UTF-8 (the
    OpenAI client's encoder cannot write one: it raised, and `-p` printed a traceback), the
    session file holds what was sent, and the session resumes."""
    items = _surrogate_sources(workspace, source)
    with run_in_thread(items) as server:
        result = todo_agent(
            workspace,
            server.base_url,
            "-p",
            "go",
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "stream-json",
        )
        sent = server.requests[-1]["messages"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    session = _loadable(workspace)
    for line in session.path.read_bytes().decode("utf-8").splitlines():  # strict: valid UTF-8
        json.dumps(json.loads(line), ensure_ascii=False).encode("utf-8")  # no \\ud83d escape either
    with run_in_thread([{"text": "resumed"}]) as server:
        again = todo_agent(workspace, server.base_url, "-p", "again", "--continue")
        resumed = server.requests[0]["messages"]
    assert again.returncode == 0 and again.stdout.strip() == "resumed", again.stderr[-2000:]
    # The resumed request carries exactly what the first run sent (then its answer and the new prompt).
    assert resumed[1 : len(sent)] == sent[1:]
    assert "\ufffd" in json.dumps(resumed, ensure_ascii=False)  # the surrogate was sent, replaced


def test_a_character_split_in_utf16_halves_across_chunks_is_joined(workspace: Path) -> None:
    text = "ok 😀 and 🎉🎉 done, then a lone half: \ud83d"
    with run_in_thread([{"text": text, "utf16": True, "chunk_size": 1}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok 😀 and 🎉🎉 done, then a lone half: \ufffd"
    assert _loadable(workspace).messages[-1]["content"] == result.stdout.strip()


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
        requests = len(server.requests)
    assert result.returncode == 1
    assert "not UTF-8" in result.stderr
    assert requests == 1  # a server's encoding does not change on a retry
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
    assert replies[0].startswith("#1 created")
    assert all(r.startswith("Error: no task #9999") for r in replies[1:4]), replies
    assert replies[4].startswith("Error: parameter 'offset'"), replies[4]
    assert all(len(r) < 300 for r in replies)
