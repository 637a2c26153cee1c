"""OpenAIChatModel against a real HTTP server that speaks like OpenAI and llama.cpp."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, cast

import openai
import pytest
from fake_openai import FakeOpenAIServer, run_in_thread, validate_request

from todo_agent.core.model.base import (
    ContextOverflowError,
    Message,
    ModelError,
    ModelResponse,
    ModelUsage,
    StreamItem,
    ToolCall,
)
from todo_agent.core.model.openai_chat import OpenAIChatModel

USER: list[Message] = [{"role": "user", "content": "hi"}]
READ_TOOL = {
    "type": "function",
    "function": {"name": "Read", "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
}

MakeModel = Callable[..., OpenAIChatModel]


@pytest.fixture(autouse=True)
def _instant_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK backs off 0.5–8 s between retries; the retries themselves stay real."""
    monkeypatch.setattr(openai.AsyncOpenAI, "_calculate_retry_timeout", lambda *args, **kwargs: 0.0)


@pytest.fixture
async def make_model() -> AsyncIterator[MakeModel]:
    models: list[OpenAIChatModel] = []

    def make(base_url: str, **options: Any) -> OpenAIChatModel:
        model = OpenAIChatModel(
            model=options.pop("model", "fake-model"), base_url=base_url, api_key="sk-test", **options
        )
        models.append(model)
        return model

    yield make
    for model in models:
        await model.aclose()


async def collect(
    model: OpenAIChatModel, messages: Sequence[Message] = USER, tools: Sequence[dict[str, Any]] = ()
) -> tuple[list[str], ModelResponse]:
    items: list[StreamItem] = [item async for item in model.stream(messages, tools)]
    *deltas, last = items
    assert all(isinstance(d, str) for d in deltas), items
    assert isinstance(last, ModelResponse), items
    return [d for d in deltas if isinstance(d, str)], last


async def failure(model: OpenAIChatModel) -> tuple[list[StreamItem], ModelError]:
    """Run a stream that must fail; return what it yielded before failing and the error."""
    items: list[StreamItem] = []
    with pytest.raises(ModelError) as caught:
        async for item in model.stream(USER, []):
            items.append(item)
    assert not any(isinstance(i, ModelResponse) for i in items), "a broken stream built a response"
    assert "\n" not in caught.value.message
    return items, caught.value


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# --- streaming ------------------------------------------------------------------------


async def test_text_streams_as_deltas_then_one_response(make_model: MakeModel) -> None:
    text = "Hello there, this arrives in pieces."
    async with FakeOpenAIServer([{"text": text, "chunk_size": 4}]) as server:
        model = make_model(server.base_url)
        deltas, response = await collect(model)
    assert len(deltas) == 9
    assert "".join(deltas) == text
    assert response == ModelResponse(content=text, finish_reason="stop", usage=response.usage)
    assert model.name == "fake-model"
    body = server.requests[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == USER
    assert "tools" not in body  # an empty tools list is omitted, not sent as []


async def test_tools_are_sent_when_given(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"text": "ok"}]) as server:
        await collect(make_model(server.base_url), tools=[READ_TOOL])
    assert server.requests[0]["tools"] == [READ_TOOL]


async def test_tool_call_arguments_split_in_many_chunks_reassemble_exactly(make_model: MakeModel) -> None:
    raw = '{ "file_path" :  "src/a b.py",\n  "offset": 10, "note": "é ✔ \\" }" }'
    call = {"id": "call_abc-123", "name": "TaskUpdate", "arguments": raw}
    async with FakeOpenAIServer([{"tool_calls": [call], "chunk_size": 2, "split_name": True}]) as server:
        deltas, response = await collect(make_model(server.base_url))
    assert deltas == []
    assert response.tool_calls == (ToolCall(id="call_abc-123", name="TaskUpdate", arguments=raw),)
    assert response.finish_reason == "tool_calls"
    assert response.content == ""


async def test_text_then_tool_call(make_model: MakeModel) -> None:
    item = {"text": "Let me look.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "a.py"}}]}
    async with FakeOpenAIServer([item]) as server:
        deltas, response = await collect(make_model(server.base_url))
    assert "".join(deltas) == response.content == "Let me look."
    assert [(c.name, json.loads(c.arguments)) for c in response.tool_calls] == [("Read", {"file_path": "a.py"})]


PARALLEL = [
    {"id": "call_1", "name": "Read", "arguments": {"file_path": "one.py"}},
    {"id": "call_2", "name": "Grep", "arguments": {"pattern": "def two", "path": "src"}},
]


@pytest.mark.parametrize(
    "options",
    [{}, {"interleave": True}, {"reuse_index": True}, {"reuse_index": True, "split_name": True}],
    ids=["sequential", "interleaved", "index-0-reused", "index-0-reused-split-names"],
)
async def test_parallel_tool_calls(make_model: MakeModel, options: dict[str, Any]) -> None:
    async with FakeOpenAIServer([{"tool_calls": PARALLEL, "chunk_size": 5, **options}]) as server:
        _, response = await collect(make_model(server.base_url))
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        (c["id"], c["name"], c["arguments"]) for c in PARALLEL
    ]


async def test_a_name_repeated_on_every_delta_is_not_doubled(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"tool_calls": PARALLEL, "repeat_name": True}]) as server:
        _, response = await collect(make_model(server.base_url))
    assert [c.name for c in response.tool_calls] == ["Read", "Grep"]
    assert [json.loads(c.arguments) for c in response.tool_calls] == [c["arguments"] for c in PARALLEL]


async def test_single_call_without_index(make_model: MakeModel) -> None:
    args = '{"command": "ls -la"}'
    item = {"tool_calls": [{"id": "x1", "name": "Bash", "arguments": args}], "omit_index": True, "chunk_size": 1}
    async with FakeOpenAIServer([item]) as server:
        _, response = await collect(make_model(server.base_url))
    assert response.tool_calls == (ToolCall(id="x1", name="Bash", arguments=args),)


async def test_calls_without_ids_get_unique_generated_ids(make_model: MakeModel) -> None:
    calls = [{"name": "Read", "arguments": {}}, {"name": "Glob", "arguments": {}}]
    script = [{"tool_calls": calls, "omit_ids": True}, {"tool_calls": calls[:1], "omit_ids": True}]
    async with FakeOpenAIServer(script) as server:
        model = make_model(server.base_url)
        _, first = await collect(model)
        _, second = await collect(model)
    ids = [c.id for c in (*first.tool_calls, *second.tool_calls)]
    assert ids == ["call_1", "call_2", "call_3"]


@pytest.mark.parametrize("content", ["", None], ids=["empty-string", "null"])
async def test_content_on_tool_call_deltas_like_llama_cpp(make_model: MakeModel, content: str | None) -> None:
    item = {"tool_calls": PARALLEL, "tool_delta_content": content}
    async with FakeOpenAIServer([item]) as server:
        deltas, response = await collect(make_model(server.base_url))
    assert deltas == []
    assert response.content == ""
    assert len(response.tool_calls) == 2


async def test_length_finish_is_a_complete_response(make_model: MakeModel) -> None:
    item = {"tool_calls": [{"name": "Write", "arguments": '{"content": "unfinis'}], "finish_reason": "length"}
    async with FakeOpenAIServer([item]) as server:
        _, response = await collect(make_model(server.base_url))
    assert response.finish_reason == "length"
    assert response.tool_calls[0].arguments == '{"content": "unfinis'


# --- usage ----------------------------------------------------------------------------


async def test_usage_from_the_final_chunk_with_empty_choices(make_model: MakeModel) -> None:
    item = {"text": "hi", "usage": {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127}}
    async with FakeOpenAIServer([item]) as server:
        _, response = await collect(make_model(server.base_url))
    assert response.usage == ModelUsage(prompt_tokens=120, completion_tokens=7)


async def test_usage_on_the_finish_chunk(make_model: MakeModel) -> None:
    item = {"text": "hi", "usage": {"prompt_tokens": 5, "completion_tokens": 2}, "usage_in_finish_chunk": True}
    async with FakeOpenAIServer([item]) as server:
        _, response = await collect(make_model(server.base_url))
    assert response.usage == ModelUsage(prompt_tokens=5, completion_tokens=2)


async def test_missing_usage_is_none(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"text": "hi", "usage": None}]) as server:
        _, response = await collect(make_model(server.base_url))
    assert response.usage is None
    assert response.content == "hi"


@pytest.mark.parametrize("status", [400, 422])
async def test_server_rejecting_stream_options_is_asked_again_without_them(make_model: MakeModel, status: int) -> None:
    rejection = {"http_error": status, "message": "Unrecognized request argument supplied: stream_options"}
    async with FakeOpenAIServer([rejection, {"text": "one"}, {"text": "two"}]) as server:
        model = make_model(server.base_url)
        _, first = await collect(model)
        _, second = await collect(model)
    assert (first.content, second.content) == ("one", "two")
    assert [("stream_options" in body) for body in server.requests] == [True, False, False]
    assert first.usage is None  # the fake, like OpenAI, only sends usage when asked


# --- failures -------------------------------------------------------------------------


async def test_a_server_error_is_left_to_the_loop_to_retry_where_it_shows(make_model: MakeModel) -> None:
    # Retried by the agent loop, which says so ("… — retrying in 1 s (1 of 6)"), not silently by the SDK.
    headers = {"retry-after": "7"}
    item = {"http_error": 503, "message": "loading model", "headers": headers}
    async with FakeOpenAIServer([item], retry_after_ms=None) as server:
        _, error = await failure(make_model(server.base_url))
    assert error.message == "server busy (HTTP 503): loading model"
    assert (error.retryable, error.reason, error.retry_after) == (True, "server busy (503)", 7.0)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "retryable", "reason"),
    [
        (408, True, "request timed out (408)"),
        (409, True, "conflict (409)"),
        (429, True, "rate limited (429)"),
        (500, True, "server error (500)"),
        (502, True, "bad gateway (502)"),
        (503, True, "server busy (503)"),
        (504, True, "gateway timeout (504)"),
        (529, True, "server busy (529)"),
        (400, False, "HTTP error (400)"),
        (401, False, "HTTP error (401)"),
        (403, False, "HTTP error (403)"),
        (404, False, "HTTP error (404)"),
        (501, False, "server error (501)"),
    ],
)
async def test_which_statuses_are_worth_waiting_for(
    make_model: MakeModel, status: int, retryable: bool, reason: str
) -> None:
    async with FakeOpenAIServer([{"http_error": status}], retry_after_ms=None) as server:
        _, error = await failure(make_model(server.base_url))
    assert (error.retryable, error.reason, error.retry_after) == (retryable, reason, None)
    assert len(server.requests) == 1  # the SDK never retries on its own


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "12"}, 12.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "2500"}, 2.5),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date gone by: at once
    ],
)
async def test_retry_after_in_every_form(make_model: MakeModel, headers: dict[str, str], seconds: float) -> None:
    async with FakeOpenAIServer([{"http_error": 429, "headers": headers}], retry_after_ms=None) as server:
        _, error = await failure(make_model(server.base_url))
    assert error.retry_after == seconds


async def test_a_closed_kept_alive_connection_is_retried_at_once_and_silently(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"drop": True}, {"text": "hello"}]) as server:
        _, response = await collect(make_model(server.base_url))
    assert response.content == "hello" and len(server.requests) == 2


async def test_llama_cpp_without_jinja_is_explained_not_retried(make_model: MakeModel) -> None:
    # llama-server's real answer when started with --no-jinja (older builds: without --jinja).
    script = [{"http_error": 500, "message": "tools param requires --jinja flag"}]
    async with FakeOpenAIServer(script) as server:
        model = make_model(server.base_url)
        with pytest.raises(ModelError) as caught:
            async for _ in model.stream(USER, [READ_TOOL]):
                pass
    error = caught.value
    assert error.message.startswith("the server cannot use tools: start llama-server with --jinja")
    assert "tools param requires --jinja flag" in error.message
    assert not error.retryable and len(server.requests) == 1


async def test_a_web_server_that_is_not_an_openai_api_gets_a_hint(make_model: MakeModel) -> None:
    import http.server
    import threading

    # `python -m http.server`: answers POST with 501 and an HTML page.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        _, error = await failure(make_model(url))
    finally:
        server.shutdown()
        server.server_close()
    assert error.message.startswith(f"{url} answered with a web page (HTTP 501), not the OpenAI API")
    assert "OpenAI-compatible endpoint, usually ending in /v1" in error.message
    assert "<!DOCTYPE" not in error.message and not error.retryable


@pytest.mark.parametrize("clean", [False, True], ids=["connection-dropped", "body-ended"])
async def test_a_cut_off_stream_raises_retryable(make_model: MakeModel, clean: bool) -> None:
    async with FakeOpenAIServer([{"cut_off": True, "clean": clean, "text": "half an answ"}]) as server:
        items, error = await failure(make_model(server.base_url))
    assert "".join(str(i) for i in items) == "half an answ"
    assert "cut off" in error.message
    assert error.retryable
    assert len(server.requests) == 1


async def test_connection_lost_after_the_finish_reason_keeps_the_answer(make_model: MakeModel) -> None:
    finish = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "fake-model"}
    events = [
        json.dumps({**finish, "choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": None}]}),
        json.dumps({**finish, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]
    async with FakeOpenAIServer([{"raw_events": events, "cut_off": True}]) as server:
        _, response = await collect(make_model(server.base_url))
    assert (response.content, response.finish_reason, response.usage) == ("done", "stop", None)


async def test_malformed_stream_json_is_retryable(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"raw_events": ['{"id": "c", "choices": [']}]) as server:
        _, error = await failure(make_model(server.base_url))
    assert "malformed" in error.message
    assert error.retryable


async def test_an_error_event_mid_stream(make_model: MakeModel) -> None:
    event = json.dumps({"error": {"message": "the model crashed", "code": 500}})
    async with FakeOpenAIServer([{"raw_events": [event]}]) as server:
        _, error = await failure(make_model(server.base_url))
    assert error.message == "the server reported an error mid-stream: the model crashed"
    assert error.retryable


async def test_a_context_overflow_mid_stream_is_an_overflow(make_model: MakeModel) -> None:
    event = json.dumps({"error": {"message": "the request exceeds the available context size", "code": 500}})
    async with FakeOpenAIServer([{"raw_events": [event]}]) as server:
        _, error = await failure(make_model(server.base_url))
    assert isinstance(error, ContextOverflowError)
    assert error.message == (
        "the prompt exceeds the model's context window (the request exceeds the available context size)"
    )


async def test_bad_key(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"http_error": 401, "message": "Incorrect API key provided: sk-test"}]) as server:
        _, error = await failure(make_model(server.base_url))
    assert error.message.startswith("authentication failed (HTTP 401): check OPENAI_API_KEY")
    assert "Incorrect API key provided" in error.message
    assert not error.retryable
    assert len(server.requests) == 1  # not retried


async def test_unknown_model(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([], models=["fake-model"]) as server:
        _, error = await failure(make_model(server.base_url, model="gpt-nope"))
    assert error.message.startswith(f"model 'gpt-nope' not found at {server.base_url}")
    assert not error.retryable


async def test_rejected_request(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"http_error": 400, "message": "messages: too long"}]) as server:
        _, error = await failure(make_model(server.base_url))
    assert error.message == "request rejected (HTTP 400): messages: too long"
    assert len(server.requests) == 1  # no stream_options fallback for an unrelated 400


async def test_rate_limited(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"http_error": 429}]) as server:
        _, error = await failure(make_model(server.base_url))
    assert error.message.startswith("rate limited (HTTP 429)")
    assert error.retryable  # the loop waits and retries, and says so


async def test_connection_refused(make_model: MakeModel) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    _, error = await failure(make_model(url))
    assert error.message == f"cannot reach {url}: Connection refused"
    assert error.retryable


async def test_a_refused_connection_is_retried_in_view(make_model: MakeModel) -> None:
    from contextlib import aclosing
    from pathlib import Path

    from todo_agent.core.engine.loop import Agent, AgentOptions
    from todo_agent.core.events import Error, Retrying
    from todo_agent.core.permissions.policy import PermissionPolicy

    url = f"http://127.0.0.1:{closed_port()}/v1"
    agent = Agent(
        model=make_model(url), tools=[], workspace=Path.cwd(), permissions=PermissionPolicy(Path.cwd()),
        system_prompt="", options=AgentOptions(retry_delay=0),
    )  # fmt: skip
    async with aclosing(agent.run_turn("hi")) as events:
        seen = [event async for event in events]
    waits = [e.describe() for e in seen if isinstance(e, Retrying)]
    assert waits == [f"cannot reach {url}: Connection refused — retrying now ({n} of 6)" for n in range(1, 7)]
    gave_up = f"cannot reach {url}: Connection refused (gave up after 6 retries in 0 s)"
    assert [e.message for e in seen if isinstance(e, Error)] == [gave_up]


async def test_timeout(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"stall": True}]) as server:
        _, error = await failure(make_model(server.base_url, timeout=0.3))
    assert error.message == f"cannot reach {server.base_url}: timed out"
    assert error.retryable


async def test_cancellation_propagates_and_closes_the_stream(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"text": "first words", "stall": True}]) as server:
        model = make_model(server.base_url)
        started = asyncio.Event()

        async def consume() -> None:
            async for _ in model.stream(USER, []):
                started.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), 5)
        assert not server.aborted.is_set()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.aborted.wait(), 5)


async def test_leaving_the_stream_early_closes_it(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"text": "first words", "stall": True}]) as server:
        stream = cast(AsyncGenerator[StreamItem, None], make_model(server.base_url).stream(USER, []))
        assert isinstance(await anext(stream), str)
        await stream.aclose()
        await asyncio.wait_for(server.aborted.wait(), 5)


# --- the fake server itself -------------------------------------------------------------

CALL = {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "a"}'}}


def test_validation_accepts_a_well_formed_history() -> None:
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [CALL, {**CALL, "id": "c2"}]},
        {"role": "tool", "tool_call_id": "c2", "content": "x"},
        {"role": "tool", "tool_call_id": "c1", "content": "y"},
        {"role": "user", "content": "more"},
    ]
    assert validate_request({"model": "m", "messages": history}) == []


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([{"role": "assistant", "tool_calls": [CALL]}, {"role": "user", "content": "?"}], "before tool replies"),
        ([{"role": "assistant", "tool_calls": [CALL]}], "unanswered"),
        ([{"role": "tool", "tool_call_id": "zz", "content": ""}], "answers no pending"),
        (
            [
                {"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "Read", "arguments": "{bad"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": ""},
            ],
            "not valid JSON",
        ),
    ],
    ids=["user-before-reply", "dangling-call", "orphan-reply", "invalid-arguments"],
)
async def test_invalid_history_is_a_violation_and_not_retried(
    make_model: MakeModel, messages: list[Message], problem: str
) -> None:
    async with FakeOpenAIServer([{"text": "unused"}], check_violations=False, check_unused=False) as server:
        model = make_model(server.base_url)
        with pytest.raises(ModelError, match=r"server error \(HTTP 500\): invalid request"):
            await collect(model, [{"role": "user", "content": "start"}, *messages])
    assert len(server.requests) == 1
    assert len(server.violations) == 1
    assert problem in server.violations[0]
    assert server.used == 0


async def test_violations_and_unused_responses_fail_the_context(make_model: MakeModel) -> None:
    with pytest.raises(AssertionError, match="1 of 2 scripted responses were never requested"):
        async with FakeOpenAIServer([{"text": "a"}, {"text": "b"}]) as server:
            await collect(make_model(server.base_url))
    with pytest.raises(AssertionError, match="ran out"):
        async with FakeOpenAIServer([]) as server:
            with pytest.raises(ModelError):
                await collect(make_model(server.base_url))
    async with FakeOpenAIServer([{"text": "a"}, {"text": "b"}], check_unused=False) as server:
        await collect(make_model(server.base_url))


async def test_empty_tools_list_is_a_violation() -> None:
    assert validate_request({"model": "m", "messages": USER, "tools": []}) == [
        "`tools` is sent empty (omit it instead)"
    ]


async def test_run_in_thread(make_model: MakeModel) -> None:
    with run_in_thread([{"text": "from a thread"}], models=["fake-model", "other"]) as server:
        _, response = await collect(make_model(server.base_url))
        listing = await asyncio.to_thread(lambda: urllib.request.urlopen(server.base_url + "/models", timeout=5).read())
    assert response.content == "from a thread"
    assert [m["id"] for m in json.loads(listing)["data"]] == ["fake-model", "other"]


async def test_run_as_a_process(make_model: MakeModel, tmp_path: Path) -> None:
    script, record = tmp_path / "script.json", tmp_path / "record.json"
    script.write_text(json.dumps({"responses": [{"text": "from a process"}]}), encoding="utf-8")
    server_py = Path(__file__).with_name("fake_openai.py")
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(server_py), str(script), "--record", str(record), stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        base_url = (await asyncio.wait_for(process.stdout.readline(), 10)).decode().strip()
        _, response = await collect(make_model(base_url))
    finally:
        process.terminate()
        code = await asyncio.wait_for(process.wait(), 10)
    assert response.content == "from a process"
    assert code == 0
    saved = json.loads(record.read_text(encoding="utf-8"))
    assert saved["violations"] == [] and saved["unused"] == 0
    assert saved["requests"][0]["messages"] == USER


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [choice]})


async def test_arguments_sent_as_an_object_and_content_as_parts(make_model: MakeModel) -> None:
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "Read", "arguments": {"file_path": "a"}}}
    events = [
        _chunk({"role": "assistant", "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]}),
        _chunk({"tool_calls": [call]}),
        _chunk({}, "tool_calls"),
        "[DONE]",
    ]
    async with FakeOpenAIServer([{"raw_events": events}]) as server:
        items, response = await collect(make_model(server.base_url))
    assert items == ["hi there"] and response.content == "hi there"
    assert json.loads(response.tool_calls[0].arguments) == {"file_path": "a"}


async def test_the_api_key_is_sent_as_a_bearer_token(make_model: MakeModel) -> None:
    """The request goes through the client's generic `post`: its auth header must still go."""
    async with FakeOpenAIServer([{"text": "ok"}]) as server:
        await collect(make_model(server.base_url))
    assert server.request_headers[0]["authorization"] == "Bearer sk-test"
    assert server.request_headers[0]["content-type"] == "application/json"


async def test_chunks_of_the_wrong_shape_count_as_absent_fields(make_model: MakeModel) -> None:
    """A server is untrusted: every field of a chunk may have any type. A wrong one is read
    as absent (as the SDK's unvalidated models did), never as a crash."""
    odd = [
        "[]",
        '"a string"',
        '{"choices": "not a list", "usage": [1, 2]}',
        '{"choices": [7, null, {"index": 0, "delta": ["x"]}, {"index": 1, "delta": {"content": "other choice"}}]}',
        _chunk({"content": "kept "}),
        _chunk({"content": 12, "tool_calls": "Read"}),
        _chunk({"tool_calls": [3, {"index": 0, "id": 5, "function": "Read"}]}),
        _chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": ["Re", "ad"], "arguments": "{}"}}]}),
        _chunk({"content": "text"}, finish=None),
        json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": 3}]}),
        json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json.dumps({"choices": [], "usage": {"prompt_tokens": "many", "completion_tokens": float("nan")}}),
        json.dumps({"choices": [], "usage": {"prompt_tokens": 12.0, "completion_tokens": True}}),
        "[DONE]",
    ]
    async with FakeOpenAIServer([{"raw_events": odd}]) as server:
        items, response = await collect(make_model(server.base_url))
    assert "".join(items) == response.content == "kept text"
    assert response.finish_reason == "stop"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [("c1", "Read", "{}")]
    assert response.usage is not None
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (12, 0)


async def test_the_history_is_sent_without_the_sdks_per_message_transform(
    make_model: MakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's request transform walks every message on the event loop (~0.35 ms each):
    a 2,000-message session froze the UI for 0.7 s per request. The history is already in
    the API's shape, so the request goes out as it is, never transformed; the server
    still gets every message."""
    from openai.resources.chat.completions import completions

    walked: list[int] = []
    real = completions.async_maybe_transform

    async def watching(data: Any, expected_type: Any) -> Any:
        if isinstance(data, dict):
            walked.append(len(data.get("messages") or []))
        return await real(data, expected_type)

    monkeypatch.setattr(completions, "async_maybe_transform", watching)
    history: list[Message] = [{"role": "user", "content": f"message {n}"} for n in range(300)]
    async with FakeOpenAIServer([{"text": "ok"}]) as server:
        await collect(make_model(server.base_url), history)
    assert walked == []
    assert server.requests[0]["messages"] == history


async def test_streamed_chunks_are_read_as_json_not_built_into_sdk_models(
    make_model: MakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building the SDK's typed chunk object of every chunk was a quarter of todo-agent's
    CPU while an answer streamed; the chunks are read as the JSON they are."""
    from openai.types.chat import ChatCompletionChunk

    built: list[object] = []
    real = ChatCompletionChunk.construct

    def watching(**values: Any) -> Any:
        built.append(values)
        return real(**values)

    monkeypatch.setattr(ChatCompletionChunk, "construct", watching)
    async with FakeOpenAIServer([{"text": "one two three four", "chunk_size": 4}]) as server:
        items, response = await collect(make_model(server.base_url))
    assert "".join(items) == response.content == "one two three four" and len(items) > 2
    assert built == []


# --- long work: context overflow and the output limit ---------------------------------------


@pytest.mark.parametrize("shape", ["openai", "llama"])
async def test_a_context_overflow_refusal_is_its_own_error_with_the_window(make_model: MakeModel, shape: str) -> None:
    async with FakeOpenAIServer([], context_limit=5, overflow_shape=shape) as server:
        _, error = await failure(make_model(server.base_url))
    assert isinstance(error, ContextOverflowError)
    assert error.window == 5
    assert "exceeds the model's context window of 5 tokens (HTTP 400:" in error.message
    assert server.refused == 1
    assert (error.prompt_tokens is not None) == (shape == "llama")  # only llama.cpp says how long it was
    assert len(server.requests) == 1  # not retried: the prompt must shrink first


async def test_llama_cpp_overflow_body_names_prompt_size() -> None:
    body = {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 8209,
        "n_ctx": 8192,
    }
    async with FakeOpenAIServer([{"http_error": 400, "error_body": body}]) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url, api_key=None)
        _, error = await failure(model)
        await model.aclose()
    assert isinstance(error, ContextOverflowError)
    assert (error.window, error.prompt_tokens) == (8192, 8209)
    assert error.message.startswith("the prompt (8,209 tokens) exceeds the model's context window of 8,192 tokens")


async def test_an_unrelated_400_is_not_an_overflow(make_model: MakeModel) -> None:
    async with FakeOpenAIServer([{"http_error": 400, "message": "tools[0] is malformed"}]) as server:
        _, error = await failure(make_model(server.base_url))
    assert not isinstance(error, ContextOverflowError)


async def test_max_tokens_is_sent_and_a_length_cut_is_reported(make_model: MakeModel) -> None:
    item = {"text": "cut he", "finish_reason": "length"}
    async with FakeOpenAIServer([item]) as server:
        model = make_model(server.base_url)
        items = [i async for i in model.stream(USER, [], max_tokens=16)]
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.finish_reason == "length"
    assert server.requests[0]["max_tokens"] == 16


async def test_a_model_that_wants_max_completion_tokens_gets_it(make_model: MakeModel) -> None:
    refusal = {
        "http_error": 400,
        "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
    }
    async with FakeOpenAIServer([refusal, {"text": "a"}, {"text": "b"}]) as server:
        model = make_model(server.base_url)
        await collect_limited(model)
        await collect_limited(model)
    assert [("max_tokens" in b, b.get("max_completion_tokens")) for b in server.requests] == [
        (True, None),
        (False, 64),
        (False, 64),
    ]


async def collect_limited(model: OpenAIChatModel) -> None:
    async for _ in model.stream(USER, [], max_tokens=64):
        pass
