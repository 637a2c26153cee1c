"""OpenAI's Responses API over real HTTP (a local fake that streams its typed events), the
switch to it that `wire_api = "auto"` makes on a 404 and remembers, reasoning effort, what
a server refuses (asked again once without it, said in one line, remembered in the session
so `--continue` does not ask again), and usage that tells cached and reasoning tokens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import aclosing
from pathlib import Path
from typing import Any

from fake_openai import FakeOpenAIServer, run_in_thread

from todo_agent.core.events import Event, Notice, ReasoningDelta, TextDelta, TurnEnd, Usage
from todo_agent.core.model.base import ContextOverflowError, ModelError, ModelResponse, Reasoning
from todo_agent.core.model.openai_chat import OpenAIChatModel
from todo_agent.core.model.openai_responses import OpenAIResponsesModel, function_tool, request_input
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config

READ = {"name": "Read", "arguments": {"file_path": "notes.txt"}, "id": "call_r1"}


async def run(runtime: Runtime, prompt: str) -> list[Event]:
    async with aclosing(runtime.turn.run(prompt)) as turn:
        return [event async for event in turn]


def config(workspace: Path, base_url: str, **overrides: Any) -> Config:
    return Config(workspace=workspace, model="gpt-5-codex", base_url=base_url, api_key="k", **overrides)


async def test_a_tool_using_turn_over_the_responses_api_keeps_the_encrypted_thought(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hi\n")
    items = [
        {"reasoning": "Read the notes first.", "encrypted": "gAAAA-secret", "tool_calls": [READ]},
        {"reasoning": "They say hi.", "text": "The notes say hi."},
    ]
    async with FakeOpenAIServer(items) as server:
        runtime = Runtime.create(config(workspace, server.base_url, wire_api="responses", reasoning_effort="low"))
        events = await run(runtime, "what do the notes say?")
        server.assert_clean()
        first, second = server.requests
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "done"
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] and "".join(
        e.text for e in events if isinstance(e, TextDelta)
    ) == ("The notes say hi.")
    # Nothing kept on the server; the thought asked for encrypted; effort where Responses wants it.
    assert first["store"] is False and first["include"] == ["reasoning.encrypted_content"]
    assert first["reasoning"] == {"summary": "auto", "effort": "low"}
    assert "You are" in first["instructions"] and first["input"][0]["role"] == "user"
    assert {t["name"] for t in first["tools"]} >= {"Read", "Bash"} and "function" not in first["tools"][0]
    kinds = [item.get("type", "message") for item in second["input"]]
    assert kinds[1:4] == ["reasoning", "function_call", "function_call_output"]
    assert second["input"][1]["encrypted_content"] == "gAAAA-secret"  # the thought goes back with its call
    assert second["input"][3]["output"].strip().endswith("hi")
    kept = [m for m in runtime.sessions.history if m["role"] == "assistant"]
    assert kept[0]["reasoning_content"] == "Read the notes first." and kept[0]["reasoning_items"][0]["id"] == "rs_0"


async def test_the_stream_in_pieces_incomplete_failed_and_error_events() -> None:
    cut = {"text": "Half an ans", "incomplete": True}
    failed = {
        "raw_events": [
            json.dumps({"type": "response.failed", "response": {"error": {"code": "server_error", "message": "boom"}}})
        ]
    }
    overflow = {"raw_events": [json.dumps({"type": "error", "code": "context_length_exceeded", "message": "too long"})]}
    async with FakeOpenAIServer([cut, failed, overflow]) as server:
        model = OpenAIResponsesModel(model="m", base_url=server.base_url, api_key=None)
        items = [i async for i in model.stream([{"role": "user", "content": "go"}], [], max_tokens=5)]
        assert isinstance(items[-1], ModelResponse) and items[-1].finish_reason == "length"  # as chat's `length`
        assert server.requests[0]["max_output_tokens"] == 5
        try:
            [i async for i in model.stream([{"role": "user", "content": "go"}], [])]
        except ModelError as exc:
            assert exc.retryable and "boom" in exc.message and not isinstance(exc, ContextOverflowError)
        else:
            raise AssertionError("a failed response was taken")
        try:
            [i async for i in model.stream([{"role": "user", "content": "go"}], [])]
        except ContextOverflowError as exc:
            assert "too long" in exc.message
        else:
            raise AssertionError("an overflow was not reported as one")
        await model.aclose()


async def test_auto_switches_a_model_served_only_over_responses_and_remembers_it(workspace: Path) -> None:
    async with FakeOpenAIServer([{"text": "Hello."}, {"text": "Again."}], responses_only=True) as server:
        runtime = Runtime.create(config(workspace, server.base_url))
        events = await run(runtime, "hi")
        assert server.refused_chat == 1
        notices = [e.text for e in events if isinstance(e, Notice)]
        assert any("served only over the Responses API" in n for n in notices)
        assert isinstance(events[-1], TurnEnd) and events[-1].reason == "done"
        runtime.session.close()
        resumed = Runtime.create(config(workspace, server.base_url), continue_latest=True)
        again = await run(resumed, "again")
        assert server.refused_chat == 1  # `--continue` went straight to /v1/responses
        assert not any(isinstance(e, Notice) and "Responses" in e.text for e in again)
        server.assert_clean()


async def test_wire_api_chat_never_switches(workspace: Path) -> None:
    async with FakeOpenAIServer([], responses_only=True, check_unused=False) as server:
        runtime = Runtime.create(config(workspace, server.base_url, wire_api="chat"))
        events = await run(runtime, "hi")
    assert server.refused_chat == 1 and isinstance(events[-1], TurnEnd) and events[-1].reason == "error"


async def test_a_refused_include_is_dropped_said_and_remembered(workspace: Path) -> None:
    refusal = {"http_error": 400, "message": "Unknown parameter: 'include'."}
    async with FakeOpenAIServer([refusal, {"text": "ok"}, {"text": "ok again"}]) as server:
        runtime = Runtime.create(config(workspace, server.base_url, wire_api="responses"))
        events = await run(runtime, "hi")
        assert "include" in server.requests[0] and "include" not in server.requests[1]
        assert any(isinstance(e, Notice) and "include" in e.text for e in events)
        runtime.session.close()
        resumed = Runtime.create(config(workspace, server.base_url, wire_api="responses"), continue_latest=True)
        await run(resumed, "again")
        assert "include" not in server.requests[2]  # remembered: not asked the refused way again
        server.assert_clean()


async def test_deepseek_completes_a_tool_using_turn(workspace: Path) -> None:
    """DeepSeek's thinking mode refuses a tool-calling message sent back without its thought."""
    (workspace / "notes.txt").write_text("hi\n")
    read = json.dumps(
        {
            "index": 0,
            "id": "call_a",
            "type": "function",
            "function": {"name": "Read", "arguments": '{"file_path": "notes.txt"}'},
        }
    )

    def delta(**fields: Any) -> str:
        return json.dumps({"choices": [{"index": 0, "delta": fields, "finish_reason": None}]})

    done = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    stop = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    tool_step = {
        "raw_events": [
            delta(reasoning_content="Read it."),
            f'{{"choices": [{{"index": 0, "delta": {{"tool_calls": [{read}]}}}}]}}',
            done,
            "[DONE]",
        ]
    }
    answer = {"raw_events": [delta(reasoning_content="Done."), delta(content="It says hi."), stop, "[DONE]"]}
    async with FakeOpenAIServer([tool_step, answer], deepseek=True) as server:
        runtime = Runtime.create(
            Config(workspace=workspace, model="deepseek-reasoner", base_url=server.base_url, api_key="k")
        )
        events = await run(runtime, "what does notes.txt say?")
        server.assert_clean()
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "done"


async def test_reasoning_effort_is_sent_and_a_server_that_refuses_it_is_asked_without() -> None:
    refusal = {"http_error": 400, "message": "Unrecognized request argument supplied: reasoning_effort"}
    async with FakeOpenAIServer([{"text": "a"}, refusal, {"text": "b"}]) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url, api_key=None, reasoning_effort="high")
        first = [i async for i in model.stream([{"role": "user", "content": "go"}], [])]
        assert server.requests[0]["reasoning_effort"] == "high" and not first[-1].notices  # type: ignore[union-attr]
        model.set_effort("minimal")
        second = [i async for i in model.stream([{"role": "user", "content": "go"}], [])]
        assert server.requests[1]["reasoning_effort"] == "minimal" and "reasoning_effort" not in server.requests[2]
        (notice,) = second[-1].notices  # type: ignore[union-attr]
        assert "reasoning_effort" in notice and model.learned() == {"effort": False}
        await model.aclose()


async def test_usage_tells_cached_and_reasoning_tokens() -> None:
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 300,
        "prompt_tokens_details": {"cached_tokens": 1024},
        "completion_tokens_details": {"reasoning_tokens": 250},
    }
    responses_usage = {
        "input_tokens": 90,
        "output_tokens": 40,
        "input_tokens_details": {"cached_tokens": 64},
        "output_tokens_details": {"reasoning_tokens": 32},
    }
    async with FakeOpenAIServer([{"text": "a", "usage": usage}, {"text": "b", "usage": responses_usage}]) as server:
        chat = OpenAIChatModel(model="m", base_url=server.base_url, api_key=None)
        answer = [i async for i in chat.stream([{"role": "user", "content": "go"}], [])][-1]
        responses = OpenAIResponsesModel(model="m", base_url=server.base_url, api_key=None)
        other = [i async for i in responses.stream([{"role": "user", "content": "go"}], [])][-1]
        await chat.aclose()
        await responses.aclose()
    assert isinstance(answer, ModelResponse) and answer.usage is not None
    assert (answer.usage.cached_tokens, answer.usage.reasoning_tokens) == (1024, 250)
    assert isinstance(other, ModelResponse) and other.usage is not None
    assert (other.usage.prompt_tokens, other.usage.cached_tokens, other.usage.reasoning_tokens) == (90, 64, 32)


def test_headless_json_reports_reasoning_and_cached_tokens(workspace: Path) -> None:
    usage = {"input_tokens": 50, "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 12}}
    with run_in_thread([{"reasoning": "hm", "text": "Hi.", "usage": usage}]) as server:
        env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        command = [sys.executable, "-m", "todo_agent.frontends.cli", "--base-url", server.base_url, "--model", "m"]
        result = subprocess.run(
            [*command, "--wire-api", "responses", "-p", "hi", "--output-format", "json"],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["result"] == "Hi." and data["usage"]["reasoning_tokens"] == 12 and data["usage"]["cached_tokens"] == 0


def test_the_history_as_responses_input() -> None:
    history = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:x"}}],
        },
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "thinking",
            "reasoning_items": [{"type": "reasoning", "id": "rs_1", "encrypted_content": "e"}],
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "file"},
        {"role": "assistant", "content": "Done.", "reasoning_items": [{"type": "reasoning", "id": "rs_2"}]},
    ]
    instructions, items = request_input(history)
    assert instructions == "Be brief."
    assert items[0]["content"] == [
        {"type": "input_text", "text": "see"},
        {"type": "input_image", "image_url": "data:x"},
    ]
    assert [i.get("type", "message") for i in items[1:]] == [
        "reasoning",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert items[-1] == {"role": "assistant", "content": "Done."}  # a plain answer's thought is not sent again
    assert request_input(history, replay=False)[1][1]["type"] == "function_call"
    schema = {
        "type": "function",
        "function": {"name": "Read", "description": "Read a file", "parameters": {"type": "object"}},
    }
    assert function_tool(schema) == {
        "type": "function",
        "name": "Read",
        "parameters": {"type": "object"},
        "description": "Read a file",
    }
    assert Reasoning("x") == Reasoning("x") and Usage(1, 2).cached_tokens == 0
