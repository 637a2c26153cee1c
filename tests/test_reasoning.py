"""Reasoning models over real HTTP (a local fake server in each shape servers send):
DeepSeek's and llama.cpp's `reasoning_content`, vLLM's `reasoning`, a configured field, a
`<think>` left in the content; the thought streamed as `ReasoningDelta`, kept on the
assistant message's record, sent back with a tool-calling message only, and dropped for a
server that refuses the field."""

from __future__ import annotations

import json
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAIServer

from todo_agent.core.events import Event, ReasoningDelta, TextDelta, TurnEnd
from todo_agent.core.model.base import Message, ModelResponse, Reasoning
from todo_agent.core.model.openai_chat import OpenAIChatModel
from todo_agent.core.model.thinking import ThinkSplitter
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config
from todo_agent.core.window.tokens import TokenCounter, message_chars


def chunk(**delta: Any) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})


def finish(reason: str = "stop") -> str:
    return json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})


def call_chunk(call_id: str, name: str, arguments: str) -> str:
    piece = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return chunk(tool_calls=[piece])


def thinking(field: str, thought: list[str], answer: list[str]) -> dict[str, Any]:
    events = [chunk(**{field: piece}) for piece in thought] + [chunk(content=piece) for piece in answer]
    return {"raw_events": [*events, finish(), "[DONE]"]}


async def streamed(model: OpenAIChatModel, text: str = "hi") -> tuple[list[object], ModelResponse]:
    items = [item async for item in model.stream([{"role": "user", "content": text}], [])]
    response = items.pop()
    assert isinstance(response, ModelResponse)
    return items, response


@pytest.mark.parametrize(
    ("field", "configured"),
    [("reasoning_content", ""), ("reasoning", ""), ("thoughts", "thoughts")],
    ids=["deepseek-llama.cpp", "vllm", "configured"],
)
async def test_reasoning_streams_from_the_field_the_server_uses(field: str, configured: str) -> None:
    async with FakeOpenAIServer([thinking(field, ["Let me ", "see."], ["The ", "answer."])]) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url, api_key=None, reasoning_field=configured)
        items, response = await streamed(model)
        await model.aclose()
    assert items == [Reasoning("Let me "), Reasoning("see."), "The ", "answer."]
    assert (response.content, response.reasoning, response.reasoning_field) == ("The answer.", "Let me see.", field)


async def test_an_unknown_field_is_not_reasoning_unless_configured() -> None:
    async with FakeOpenAIServer([thinking("thoughts", ["hidden"], ["Shown."])]) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url, api_key=None)
        items, response = await streamed(model)
        await model.aclose()
    assert items == ["Shown."] and response.reasoning == ""


async def test_a_think_tag_left_in_the_content_is_the_reasoning() -> None:
    pieces = ["<th", "ink>\nPlan: ", "read it.</th", "ink>\n\nIt is ", "fine. <think> stays"]
    async with FakeOpenAIServer([{"raw_events": [*(chunk(content=p) for p in pieces), finish(), "[DONE]"]}]) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url, api_key=None)
        items, response = await streamed(model)
        await model.aclose()
    assert "".join(i.text for i in items if isinstance(i, Reasoning)) == "\nPlan: read it."
    assert "".join(i for i in items if isinstance(i, str)) == "It is fine. <think> stays"
    assert (response.content, response.reasoning, response.reasoning_field) == (
        "It is fine. <think> stays",
        "\nPlan: read it.",
        "",
    )


def test_the_think_reader_holds_whatever_cuts_the_chunks() -> None:
    text = "  <think>a</think>b"
    for cut in range(len(text) + 1):
        for second in range(cut, len(text) + 1):
            splitter = ThinkSplitter()
            parts = [splitter.feed(text[:cut]), splitter.feed(text[cut:second]), splitter.feed(text[second:])]
            parts.append(splitter.close())
            assert ("".join(p[0] for p in parts), "".join(p[1] for p in parts)) == ("a", "b"), (cut, second)
    splitter = ThinkSplitter()
    assert splitter.feed("<think>cut at the output li") == ("cut at the output li", "")
    assert splitter.close() == ("", "")  # a thought never closed stays thought


# --- in a turn: kept, sent back with tool calls, never with a plain answer ---------------------


def deepseek_turn() -> list[dict[str, Any]]:
    read = call_chunk("call_a", "Read", json.dumps({"file_path": "notes.txt"}))
    tool_step = {"raw_events": [chunk(reasoning_content="I should read it."), read, finish("tool_calls"), "[DONE]"]}
    return [tool_step, thinking("reasoning_content", ["It says hi."], ["It says hi."])]


async def run(runtime: Runtime, prompt: str) -> list[Event]:
    async with aclosing(runtime.turn.run(prompt)) as turn:
        return [event async for event in turn]


async def test_a_tool_calling_messages_reasoning_goes_back_and_a_plain_answers_does_not(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hi\n")
    items = [*deepseek_turn(), {"text": "Yes."}]
    async with FakeOpenAIServer(items) as server:
        config = Config(workspace=workspace, model="deepseek-reasoner", base_url=server.base_url, api_key="k")
        runtime = Runtime.create(config)
        events = await run(runtime, "what does notes.txt say?")
        again = await run(runtime, "sure?")
        server.assert_clean()
        bodies = server.requests
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["I should read it.", "It says hi."]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "It says hi."
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "done" and isinstance(again[-1], TurnEnd)
    calling = next(m for m in bodies[1]["messages"] if m.get("tool_calls"))
    assert calling["reasoning_content"] == "I should read it."  # DeepSeek refuses the request without it
    answered = [m for m in bodies[2]["messages"] if m["role"] == "assistant" and not m.get("tool_calls")]
    assert answered and all("reasoning_content" not in m for m in answered)  # a plain answer's is not sent
    kept = [m for m in runtime.sessions.history if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in kept] == ["I should read it.", "It says hi.", None]
    resumed = Runtime.create(Config(workspace=workspace, model="m", base_url=server.base_url, api_key="k"))
    assert resumed.session.id != runtime.session.id  # a new session; the old one's file holds the thought:
    saved = [json.loads(line) for line in runtime.session.path.read_text().splitlines()]
    thoughts = [r["message"].get("reasoning_content") for r in saved if r.get("message", {}).get("role") == "assistant"]
    assert thoughts == ["I should read it.", "It says hi.", None]


async def test_a_server_that_refuses_the_field_is_asked_again_without_it(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hi\n")
    refusal = {"http_error": 400, "message": "Unrecognized field 'reasoning_content' in messages[2]"}
    first, second = deepseek_turn()
    async with FakeOpenAIServer([first, refusal, second]) as server:
        config = Config(workspace=workspace, model="m", base_url=server.base_url, api_key="k")
        runtime = Runtime.create(config)
        events = await run(runtime, "read notes.txt")
        server.assert_clean()
        bodies = server.requests
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "done"
    refused, retried = bodies[1]["messages"], bodies[2]["messages"]
    assert any("reasoning_content" in m for m in refused)
    assert not any("reasoning_content" in m for m in retried)
    assert runtime.sessions.history[1]["reasoning_content"] == "I should read it."  # still kept in the record


def test_stream_json_shows_the_reasoning_and_text_mode_only_the_answer(workspace: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"reasoning": "Thinking about <b>it</b>.", "text": "Done."}]))
    argv = [sys.executable, "-m", "todo_agent.frontends.cli", "--model", f"script:{script}", "-p", "go"]
    streamed_run = subprocess.run(
        [*argv, "--output-format", "stream-json"], cwd=workspace, capture_output=True, text=True, check=False
    )
    lines = [json.loads(line) for line in streamed_run.stdout.splitlines()]
    thought = "".join(line["text"] for line in lines if line["type"] == "ReasoningDelta")
    assert thought == "Thinking about <b>it</b>."
    plain = subprocess.run([*argv], cwd=workspace, capture_output=True, text=True, check=False)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip() == "Done."


def test_the_reasoning_field_setting_is_a_field_name(workspace: Path) -> None:
    from todo_agent.core.settings import load_config, user_settings_path

    path = user_settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('reasoning_field = "thoughts"\n')
    assert load_config(workspace, env={}).reasoning_field == "thoughts"
    path.write_text('reasoning_field = "not a field"\n')
    config = load_config(workspace, env={})  # ignored with a warning, as any bad value is
    assert config.reasoning_field == ""
    assert any("'reasoning_field' must be a field name" in w for w in config.warnings)


async def test_the_status_line_counts_the_reasoning_until_the_answer_starts(workspace: Path) -> None:
    from tui_helpers import SIZE, main_screen, make_app, screen_text, send, turn_done, wait_until

    from todo_agent.core.model.scripted import ScriptedModel

    model = ScriptedModel.from_data({"steps": [{"reasoning": "x" * 40, "text": "The answer."}], "chunk_delay": 0.05})
    app = make_app(workspace, model)
    async with app.run_test(size=SIZE) as pilot:
        status = main_screen(app).status
        await send(pilot, "think first")
        await wait_until(pilot, lambda: "reasoning" in status._current_activity())
        await turn_done(pilot)
        assert "The answer." in screen_text(app)
        assert "reasoning" not in status._current_activity()
        assert "x" * 40 not in screen_text(app)  # the thought is kept, not drawn (yet)


async def test_a_thought_that_ends_in_half_a_surrogate_pair_keeps_it_as_a_replacement() -> None:
    events = [chunk(reasoning_content="almost *\ud83d"), chunk(content="ok"), finish(), "[DONE]"]
    async with FakeOpenAIServer([{"raw_events": events}]) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url, api_key=None)
        _, response = await streamed(model)
        await model.aclose()
    assert response.reasoning == "almost *\ufffd" and response.content == "ok"


def test_the_window_estimate_counts_the_reasoning_a_call_is_sent_back_with() -> None:
    """Compaction's estimate covers what a request really carries: a tool-calling message's
    reasoning goes back with it; a plain answer's never does."""
    thought = "x" * 40_000
    call = {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "a"}'}}
    calling: Message = {"role": "assistant", "content": "", "tool_calls": [call]}
    answer: Message = {"role": "assistant", "content": "done"}
    for field in ("reasoning_content", "reasoning"):
        assert message_chars({**calling, field: thought}) == message_chars(calling) + len(thought)  # type: ignore[misc]
        assert message_chars({**answer, field: thought}) == message_chars(answer)  # type: ignore[misc]
    counter = TokenCounter()
    assert counter.estimate([{**calling, "reasoning_content": thought}]) > counter.estimate([calling]) + 5_000  # type: ignore[list-item]
