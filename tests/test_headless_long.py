"""Long work through the real `todo-agent -p` subprocess and the real openai client, against
a local server that enforces a small context window: overflow recovery, compaction, the plan
surviving it, the turn limits and their exit statuses, and what the server says about itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import run_in_thread
from test_headless_e2e import tc, todo_agent
from test_tasks_e2e import tasks_file, tool_replies

from todo_agent.core.settings import user_settings_path
from todo_agent.core.tasks.reminders import NOT_VISIBLE

SUMMARY = {"text": "## Goal\nWork through the three tasks.\n## Remaining\nThe unfinished tasks on the list."}
BIG = "".join(f"{n:04d} a line of the module under review, long enough to count\n" for n in range(70))  # ~4.3k chars


def write_big(workspace: Path) -> None:
    (workspace / "module.txt").write_text(BIG)


def agent_requests(server: Any) -> list[tuple[int, dict[str, Any]]]:
    """(index, body) of the requests the agent made (with tools), refused ones included."""
    return [(i, r) for i, r in enumerate(server.requests) if r.get("tools")]


def compaction_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("todo-agent: compacted the conversation")]


@pytest.mark.parametrize("shape", ["openai", "llama"])
def test_an_overflow_is_compacted_and_retried(workspace: Path, shape: str) -> None:
    write_big(workspace)
    responses = [
        {"tool_calls": [tc("Read", file_path="module.txt")]},
        {"tool_calls": [tc("Read", file_path="module.txt", offset=2)]},
        {"text": "Reviewed."},
    ]
    with run_in_thread(responses, context_limit=5000, overflow_shape=shape, without_tools=SUMMARY) as server:
        result = todo_agent(workspace, server.base_url, "-p", "review module.txt")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Reviewed."
    assert server.refused >= 1
    assert any("(overflow)" in line for line in compaction_lines(result.stderr))
    assert "does not fit" not in result.stderr


def test_a_three_task_plan_survives_forty_requests_and_repeated_compaction(workspace: Path) -> None:
    """The issue's "Done when", as a test: 40+ requests with a three-task plan against a server
    that refuses anything over 6,000 tokens; compaction at least twice, the current list on the
    request after each, all three completed, and `--continue` resumes the compacted history."""
    write_big(workspace)

    def todo(*statuses: str) -> dict[str, Any]:
        names = ("Review the module", "Fix what the review found", "Check the fixes")
        items = [{"content": n, "status": s, "activeForm": f"{n}ing"} for n, s in zip(names, statuses, strict=True)]
        return {"tool_calls": [tc("TodoWrite", todos=items)]}

    def reading(task: int) -> list[dict[str, Any]]:
        return [{"tool_calls": [tc("Read", file_path="module.txt", offset=1 + (task * 12 + n) % 9)]} for n in range(12)]

    responses = [
        todo("in_progress", "pending", "pending"),
        *reading(0),
        todo("completed", "in_progress", "pending"),
        *reading(1),
        todo("completed", "completed", "in_progress"),
        *reading(2),
        todo("completed", "completed", "completed"),
        {"text": "All three tasks are done."},
    ]
    with run_in_thread(responses, context_limit=6000, without_tools=SUMMARY) as server:
        result = todo_agent(workspace, server.base_url, "-p", "review, fix and check module.txt")
        requests = list(server.requests)
        refused = set(server.refused_requests)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "All three tasks are done."
    agent = [(i, r) for i, r in enumerate(requests) if r.get("tools")]
    assert len(agent) - len(refused) == len(responses) >= 40
    assert len(compaction_lines(result.stderr)) >= 2

    # After each compaction (its summary requests carry no tools), the next request carries
    # the current list; between compactions every request extends the one before it.
    answered = 0
    previous: list[Any] | None = None
    after_summary = False
    carried = 0
    for index, body in enumerate(requests):
        if not body.get("tools"):
            after_summary = True
            continue
        messages = body["messages"]
        expected = (
            [item["status"] for item in json.loads(_latest_todo(responses[:answered]))["todos"]]
            if after_summary
            else []
        )
        if after_summary and set(expected) == {"completed"}:
            # Nothing unfinished, nothing to carry (where compactions fall depends on the size
            # of the fixed prompt, so one may come after the last task is done).
            assert not any(NOT_VISIBLE in str(m.get("content")) for m in messages[-2:])
        elif after_summary:
            last = messages[-1]["content"]
            assert NOT_VISIBLE in last, f"request {index} after a compaction does not carry the list"
            marks = {"☐": "pending", "◼": "in_progress", "☒": "completed", "☑": "completed"}
            statuses = [marks[line[0]] for line in last.splitlines() if line[:1] in marks and line[1:3] == " #"]
            assert statuses == expected
            carried += 1
        elif previous is not None:
            assert messages[: len(previous)] == previous, f"request {index} does not extend the one before"
        if index not in refused:
            answered += 1
            previous = messages
        after_summary = False
    assert carried >= 2

    assert [t["status"] for t in tasks_file(workspace)] == ["completed"] * 3

    with run_in_thread([{"text": "Nothing is left."}], context_limit=6000, without_tools=SUMMARY) as server:
        again = todo_agent(workspace, server.base_url, "-p", "anything left?", "--continue")
        resumed = server.requests[0]["messages"]
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "Nothing is left."
    assert resumed[1]["content"].startswith("<system-reminder>\nThis conversation was compacted")
    assert resumed[-1] == {"role": "user", "content": "anything left?"}


def _latest_todo(responses: list[dict[str, Any]]) -> str:
    for response in reversed(responses):
        for call in response.get("tool_calls") or []:
            if call["name"] == "TodoWrite":
                return json.dumps(call["arguments"])
    raise AssertionError("no TodoWrite yet")


# --- limits of a turn and their exit statuses -------------------------------------------------


def test_an_answer_cut_at_the_output_limit_exits_4(workspace: Path) -> None:
    with run_in_thread([{"text": "The first step is", "finish_reason": "length"}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "explain", "--output-format", "json")
        sent = server.requests[0]
    assert result.returncode == 4, result.stderr
    report = json.loads(result.stdout)
    assert (report["reason"], report["is_error"], report["result"]) == ("length", True, "The first step is")
    assert "cut at the output limit" in result.stderr
    assert sent["max_tokens"] == 8192  # a quarter of the assumed 32k window, at most 8192


def test_max_turns_ends_the_turn_cleanly_with_exit_3(workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    responses = [{"tool_calls": [tc("Read", file_path="a.txt", limit=n + 1)]} for n in range(3)]
    with run_in_thread(responses) as server:
        result = todo_agent(workspace, server.base_url, "-p", "loop", "--max-turns", "3")
    assert result.returncode == 3, result.stderr
    assert "stopped after 3 model requests" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_repeated_call_guard_exits_5_and_a_setting_turns_it_off(workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    same = [{"tool_calls": [tc("Read", file_path="a.txt")]} for _ in range(6)]
    with run_in_thread(same) as server:
        guarded = todo_agent(workspace, server.base_url, "-p", "loop", "--output-format", "json")
    assert guarded.returncode == 5, guarded.stderr
    assert json.loads(guarded.stdout)["reason"] == "loop"
    assert "the same call 6 times in a row, with the same result: Read(a.txt)" in guarded.stderr

    settings = user_settings_path()
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("max_repeated_calls = 0\nmax_turns = 8\n")
    with run_in_thread([{"tool_calls": [tc("Read", file_path="a.txt")]} for _ in range(8)]) as server:
        unguarded = todo_agent(workspace, server.base_url, "-p", "loop")
    assert unguarded.returncode == 3, unguarded.stderr
    assert "stopped after 8 model requests" in unguarded.stderr


def test_json_output_reports_the_share_of_the_window(workspace: Path) -> None:
    with run_in_thread([{"text": "hi", "usage": {"prompt_tokens": 3000, "completion_tokens": 277}}]) as server:
        result = todo_agent(
            workspace, server.base_url, "-p", "hi", "--output-format", "json", "--context-window", "32768"
        )
    usage = json.loads(result.stdout)["usage"]
    context, plan = usage.pop("context"), usage.pop("plan_tokens")
    assert usage == {
        "prompt_tokens": 3000,
        "completion_tokens": 277,
        "cached_tokens": 0,
        "reasoning_tokens": 0,
        "plan_share": round(plan / 3000, 4),
        "context_tokens": 3277,
        "context_window": 32768,
        "context_share": 0.1,
    }
    # The next request by part: the server's count of this one plus the answer, shared out.
    assert context["measured"] is True and sum(context["parts"].values()) == context["total"] == 3277
    assert context["free_before_compaction"] == int(32768 * 0.8) - 3277
    assert 0 < plan < 3000 and 0 < context["parts"]["plan"] < 3277


# --- what the server says about itself -----------------------------------------------------------


def test_a_window_too_small_for_the_fixed_prompt_is_said_at_start(workspace: Path) -> None:
    props = {"default_generation_settings": {"n_ctx": 2048}}
    with run_in_thread([], props=props, check_unused=False) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hi")
        assert server.requests == []  # no request that could only fail
    assert result.returncode == 2
    assert "context window (2,048 tokens) cannot hold todo-agent's fixed prompt" in result.stderr
    flag = todo_agent(workspace, "http://127.0.0.1:9/v1", "-p", "hi", "--context-window", "1024")
    assert flag.returncode == 2 and "(1,024 tokens) cannot hold" in flag.stderr


def test_a_base_url_without_a_model_uses_the_servers_model(workspace: Path) -> None:
    props = {"chat_template_caps": {"supports_tool_calls": False}}
    with run_in_thread([{"text": "hello"}], models=["SmolLM2-135M"], props=props) as server:
        result = todo_agent(workspace, server.base_url, "-p", "hi")
        model = server.requests[0]["model"]
    assert result.returncode == 0, result.stderr
    assert model == "SmolLM2-135M"
    assert "chat template cannot call tools" in result.stderr


def test_polling_is_not_a_loop_but_the_same_answer_six_times_is(workspace: Path) -> None:
    """Polling while something changes repeats a call whose result changes: a command's
    output, or a Read of a file changed in between (here a PostToolUse hook appends to it).
    Only a call that keeps getting the same result is stopped, and the stop names it."""
    (workspace / "build.log").write_text("step 0\n")
    hook = workspace.parent / "append.sh"
    hook.write_text("#!/bin/sh\ncat > /dev/null\necho step >> build.log\n")
    hook.chmod(0o755)
    settings = user_settings_path()
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(f'[[hooks.PostToolUse]]\nmatcher = "Read"\ncommand = "{hook}"\n')
    polls = [{"tool_calls": [tc("Bash", command="date +%s%N")]} for _ in range(8)]
    reads = [{"tool_calls": [tc("Read", file_path="build.log")]} for _ in range(8)]
    with run_in_thread([*polls, *reads, {"text": "the build is done"}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "wait for it", "--permission-mode", "bypassPermissions")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "the build is done"
    settings.unlink()
    same = [{"tool_calls": [tc("Bash", command="echo still building")]} for _ in range(6)]
    with run_in_thread(same) as server:
        stuck = todo_agent(workspace, server.base_url, "-p", "wait", "--permission-mode", "bypassPermissions")
        refused = tool_replies(server.requests[-1])[-1]
    assert stuck.returncode == 5, stuck.stderr
    assert refused.startswith("Error: not run: the last 4 Bash calls had the same arguments and got the same result")
    assert stuck.stderr.strip() == (
        "todo-agent: stopped: the model made the same call 6 times in a row, with the same result: "
        "Bash(echo still building) (the repeated-call guard; max_repeated_calls = 0 turns it off)"
    )
