"""The real `todo-agent -p` command, as a subprocess, against a local OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_openai import run_in_thread

from todo_agent.core.settings import user_settings_path

POSTS = "def list_posts(posts):\n    return posts\n"


def todo_agent(workspace: Path, base_url: str | None, *args: str, env: dict[str, str] | None = None) -> Any:
    """Run the installed console script the way a user would."""
    script = Path(sys.executable).with_name("todo-agent")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "todo_agent.frontends.cli"]
    full_env = {**os.environ, **(env or {})}
    full_env.pop("OPENAI_API_KEY", None)
    if base_url:
        command += ["--base-url", base_url]
    return subprocess.run(
        [*command, *args], cwd=workspace, env=full_env, capture_output=True, text=True, timeout=60, check=False
    )


def tc(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def test_read_edit_glob_bash_grep_with_one_server_error(workspace: Path) -> None:
    (workspace / "posts.py").write_text(POSTS)
    absolute = str(workspace / "posts.py")
    new = "def list_posts(posts, page=1, page_size=20):\n    start = (page - 1) * page_size\n"
    new += "    return posts[start : start + page_size]\n"
    responses = [
        {"text": "Reading first.", "tool_calls": [tc("Read", file_path="posts.py")]},
        {"http_error": 500, "message": "injected failure"},
        {
            "tool_calls": [
                tc("Edit", file_path=absolute, old_string=POSTS, new_string=new),
                tc("Glob", pattern="*.py"),
            ],
            "interleave": True,
            "chunk_size": 2,
        },
        {
            "tool_calls": [
                tc("Bash", command="python3 -c 'import posts; print(len(posts.list_posts(list(range(50)), 2)))'"),
                tc("Grep", pattern="page_size", path="."),
            ],
            "tool_delta_content": "",
        },
        {"text": "Done: list_posts now paginates (20 per page); the check printed 20."},
    ]
    with run_in_thread(responses) as server:
        result = todo_agent(
            workspace, server.base_url, "-p", "paginate list_posts", "--permission-mode", "bypassPermissions"
        )
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Done: list_posts now paginates (20 per page); the check printed 20."
    assert "page_size" in (workspace / "posts.py").read_text()
    # One request per model step, plus the one retried after the injected 500.
    assert len(requests) == 5
    last = requests[-1]["messages"]
    tool_replies = [m["content"] for m in last if m["role"] == "tool"]
    assert len(tool_replies) == 5
    assert "has been updated (1 replacement)" in tool_replies[1]
    assert "posts.py" in tool_replies[2]
    assert tool_replies[3].strip() == "20"
    assert "posts.py:1:" in tool_replies[4]
    assert last[0]["role"] == "system" and "Today's date is" in last[0]["content"]


def test_headless_denies_edits_without_a_permissive_mode(workspace: Path) -> None:
    (workspace / "posts.py").write_text(POSTS)
    responses = [
        {"tool_calls": [tc("Write", file_path="posts.py", content="x = 1\n")]},
        {"text": "I could not write the file."},
    ]
    with run_in_thread(responses) as server:
        result = todo_agent(workspace, server.base_url, "-p", "overwrite it")
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    assert (workspace / "posts.py").read_text() == POSTS
    denial = requests[-1]["messages"][-1]
    assert denial["role"] == "tool" and "nobody can be asked in headless mode" in denial["content"]


def test_json_output_and_continue_resumes_the_session(workspace: Path) -> None:
    with run_in_thread([{"text": "first answer"}, {"text": "second answer"}]) as server:
        first = todo_agent(workspace, server.base_url, "-p", "one", "--output-format", "json")
        second = todo_agent(workspace, server.base_url, "-p", "two", "--continue", "--output-format", "stream-json")
        requests = list(server.requests)
    data = json.loads(first.stdout)
    assert data["result"] == "first answer" and data["is_error"] is False
    lines = [json.loads(line) for line in second.stdout.splitlines()]
    assert lines[-1]["type"] == "result" and lines[-1]["session_id"] == data["session_id"]
    assert any(line["type"] == "TextDelta" for line in lines)
    assert [m["content"] for m in requests[1]["messages"] if m["role"] == "user"] == ["one", "two"]


def test_configuration_errors_are_one_line_without_traceback(workspace: Path, tmp_path: Path) -> None:
    no_model = todo_agent(workspace, None, "-p", "hi")
    assert no_model.returncode == 2 and "no model configured" in no_model.stderr
    # A closed port: nothing listens there (a server restarting, or a wrong port). Retried
    # with backoff (here 2 retries, not 6 over a minute), each wait said, not silent.
    settings = user_settings_path()
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("request_retries = 2\n")
    unreachable = todo_agent(workspace, "http://127.0.0.1:9/v1", "-p", "hi")
    refused = "todo-agent: cannot reach http://127.0.0.1:9/v1: Connection refused"
    lines = unreachable.stderr.splitlines()
    assert unreachable.returncode == 1 and len(lines) == 3, unreachable.stderr
    assert re.fullmatch(re.escape(refused) + r" — retrying in [12] s \(1 of 2\)", lines[0]), lines
    assert re.fullmatch(re.escape(refused) + r" — retrying in [23] s \(2 of 2\)", lines[1]), lines
    assert re.fullmatch(
        r"todo-agent: error: cannot reach .*: Connection refused \(gave up after 2 retries in \d s\)", lines[2]
    )
    settings.unlink()
    with run_in_thread([{"http_error": 401, "message": "bad key"}], check_unused=False) as server:
        auth = todo_agent(workspace, server.base_url, "-p", "hi")
    assert auth.returncode == 1 and "authentication failed" in auth.stderr
    with run_in_thread([], models=["real-model"], check_unused=False, check_violations=False) as server:
        unknown = todo_agent(workspace, server.base_url, "-p", "hi", "--model", "nope")
    assert unknown.returncode == 1 and "not found" in unknown.stderr
    missing_script = todo_agent(workspace, None, "-p", "hi", "--model", f"script:{tmp_path / 'none.json'}")
    assert missing_script.returncode == 2 and "cannot read script" in missing_script.stderr
    bad_url = todo_agent(workspace, "http://[::1", "-p", "hi")
    assert bad_url.returncode == 2 and "cannot use base URL" in bad_url.stderr
    assert "Traceback" not in unreachable.stderr
    for result in (no_model, auth, unknown, missing_script, bad_url):
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_version(workspace: Path) -> None:
    from todo_agent.core import __version__

    result = todo_agent(workspace, None, "--version")
    assert result.returncode == 0 and result.stdout.strip() == f"todo-agent {__version__}"


def test_a_stream_cut_off_mid_answer_is_retried_and_never_taken_as_complete(workspace: Path) -> None:
    responses = [
        {"cut_off": True, "text": "The answer is forty"},
        {"text": "The answer is 42.", "usage": None},
    ]
    with run_in_thread(responses) as server:
        result = todo_agent(workspace, server.base_url, "-p", "what is it?", "--output-format", "stream-json")
        requests = list(server.requests)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [line["type"] for line in lines]
    assert result.returncode == 0, result.stderr
    assert "ResponseDiscarded" in kinds and kinds.index("ResponseDiscarded") < kinds.index("AssistantMessage")
    assert lines[-1]["result"] == "The answer is 42."
    assert len(requests) == 2
    # The cut-off text never entered history: the retry asked the same question again.
    assert requests[1]["messages"] == requests[0]["messages"]
    usage = next(line for line in lines if line["type"] == "Usage")
    assert usage["estimated"] is True  # the server sent none


def _shell(command: str, workspace: Path, base_url: str) -> Any:
    env = {**os.environ, "OPENAI_BASE_URL": base_url}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        command, shell=True, cwd=workspace, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_undecodable_stdin_and_nan_arguments(workspace: Path) -> None:
    script = Path(sys.executable).with_name("todo-agent")
    responses = [
        {"tool_calls": [{"name": "Glob", "arguments": '{"pattern": "*", "path": NaN}'}]},
        {"text": "done"},
    ]
    with run_in_thread(responses) as server:
        result = _shell(f"printf 'hi \\377 there' | '{script}' -p - --output-format json", workspace, server.base_url)
        requests = list(server.requests)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert json.loads(result.stdout)["result"] == "done"
    first_prompt = next(m["content"] for m in requests[0]["messages"] if m["role"] == "user")
    assert first_prompt == "hi \ufffd there"
    stored = requests[1]["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert stored == "{}"  # NaN is not JSON: never replayed
    assert "not valid JSON" in requests[1]["messages"][3]["content"]


def test_a_reader_that_leaves_early_is_no_traceback(workspace: Path) -> None:
    script = Path(sys.executable).with_name("todo-agent")
    with run_in_thread([{"text": "a long answer " * 50}], check_unused=False) as server:
        result = _shell(f"'{script}' -p hi --output-format stream-json | head -1", workspace, server.base_url)
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr
    json.loads(result.stdout)


def test_resume_with_an_unknown_id_says_so_and_offers_the_nearest(workspace: Path) -> None:
    result = todo_agent(workspace, None, "--model", "script:none.json", "--resume", "nosuchid")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("todo-agent: no session has the id 'nosuchid'")
    assert "Traceback" not in result.stderr


# --- waiting out a server that is busy, restarting or rate limiting -------------------------


def test_a_server_busy_four_times_is_waited_out_and_the_wait_is_said(workspace: Path) -> None:
    """A local server loading its model answers 503 four times, then the answer: the run
    completes, each wait is one line on stderr, and every attempt was exactly one request
    (the OpenAI client's own retries never multiply the loop's)."""
    busy = {"http_error": 503, "message": "Loading model", "headers": {"retry-after": "1"}}
    with run_in_thread([busy, busy, busy, busy, {"text": "ready now"}], retry_after_ms=None) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hi")
        requests = len(server.requests)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ready now"
    assert result.stderr.splitlines() == [
        f"todo-agent: server busy (HTTP 503): Loading model — retrying in 1 s ({n} of 6)" for n in range(1, 5)
    ]
    assert requests == 5


def test_a_wait_longer_than_the_cap_is_not_waited(workspace: Path) -> None:
    settings = user_settings_path()
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("request_retry_wait = 5\n")
    limited = {"http_error": 429, "message": "slow down", "headers": {"retry-after": "120"}}
    with run_in_thread([limited], retry_after_ms=None) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hi")
        requests = len(server.requests)
    assert result.returncode == 1 and requests == 1
    assert result.stderr.strip() == (
        "todo-agent: error: rate limited (HTTP 429): slow down "
        "(the server asks to wait 120 s, more than the 5 s request_retry_wait leaves)"
    )


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_a_request_the_server_refuses_is_not_retried(workspace: Path, status: int) -> None:
    with run_in_thread([{"http_error": status}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hi")
        requests = len(server.requests)
    assert result.returncode == 1 and requests == 1
    assert "retrying" not in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
