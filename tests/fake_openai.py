"""A small OpenAI-compatible chat-completions server for tests (stdlib only).

It answers `POST /v1/chat/completions` from a script of responses, one item per request,
streamed as SSE like OpenAI and llama.cpp do, and `GET /v1/models`. Every request body is
recorded, and every request is checked for API validity (each assistant tool call answered
by a `tool` message before the next assistant/user message, tool-call arguments valid JSON,
no empty `tools` list, each image part a base64 `data:` URL of a PNG, JPEG, GIF or WebP
whose bytes are that type). An invalid request, or one that arrives after the script ran out,
is recorded in `violations` and answered with HTTP 500 and `x-should-retry: false`, so the
test fails loudly instead of the client retrying.

Script items (dicts):

- a streamed answer: `{"text": "...", "tool_calls": [{"name": "Read", "arguments": {...}}]}`.
  `arguments` is an object (sent as JSON) or a raw string (sent as is). A call may carry its
  own `"id"`. Options: `chunk_size` (default 3, for text and arguments), `finish_reason`
  (default `tool_calls` or `stop`), `usage` (`{"prompt_tokens": n, "completion_tokens": m}`,
  or `null` to send none; by default a usage chunk with empty `choices` is sent when the
  request asked for `stream_options.include_usage`), `usage_in_finish_chunk` (put usage on
  the finish chunk, like llama.cpp), `interleave` (parallel calls' argument chunks
  round-robin), `reuse_index` (every call at index 0, told apart by id), `omit_index`,
  `omit_ids`, `split_name` (names in two pieces), `repeat_name` (the whole name on every
  delta), `tool_delta_content` (`""` or `null`: a `content` key on every tool-call delta,
  like llama.cpp), `stall` (after the content, keep the stream open until the client goes
  away), `utf16` (cut text and arguments in UTF-16 code units, as a JavaScript server
  does: a character outside the BMP, an emoji, may end one chunk in its first half and
  start the next in its second). Text or arguments holding a lone surrogate (`"*\ud83d"`
  in a Python string) are sent as the JSON escape `\ud83d`, as a server that passes on a
  model's broken output does.
- `{"http_error": 500, "message": "...", "headers": {...}}`: that status with a JSON error body;
  `"error_body": {...}` sends that object as the body's `error` instead (a server's own shape).
- `{"cut_off": true, "text": "...", "clean": false}`: stream some text, then end without a
  finish_reason or `[DONE]`; `clean` ends the HTTP body properly, otherwise the connection
  drops mid-body.
- `{"raw_events": ["{...}", "not json", "[DONE]"]}`: each string sent as one `data:` event.
  Any streamed item may set `encoding` (default `utf-8`), e.g. `latin-1` to send bytes
  that are not UTF-8.
- `{"stall": true}` alone: read the request and never answer (for timeouts).
- `{"drop": true}`: read the request and close the connection without a word, as llama.cpp
  does to a request on a kept-alive connection it has already closed.
- Any item may carry `"match": "text"`: it then answers only a request whose first user
  message contains that text (a sub-agent's brief), whatever order requests arrive in; a
  request takes the first unused item that matches it, else the first unused item without
  `match`. `"chunk_delay": s` waits `s` seconds between streamed chunks (so several
  streams overlap); `max_streaming` records the most streams ever open at once.

Server-wide options (`FakeOpenAIServer(..., option=...)`):

- `context_limit=N`: a server with a small context window. Any chat request whose prompt
  counts more than N tokens (`count_tokens`: its messages and tools as JSON, 4 characters a
  token) is refused with HTTP 400, without using a script item, in `overflow_shape`
  `"openai"` (`code: context_length_exceeded`, "maximum context length is N tokens") or
  `"llama"` (llama.cpp's `type: exceed_context_size_error` with `n_ctx`, `n_prompt_tokens`).
  Answers report usage by the same count, so a client that believes the usage is right.
- `send_usage=False`: never send usage (some servers do not).
- `without_tools=ITEM`: every request that carries no tools (a compaction's summary
  request) is answered with ITEM, any number of times, without using a script item.
- `responses_only=True`: a model served only over the Responses API (OpenAI's codex
  models): every chat request is answered 404 "only supported in v1/responses"
  (`refused_chat` counts them). `POST /v1/responses` is always served, from the same
  script, as typed SSE events (`_responses_events`).
- `deepseek=True`: DeepSeek's thinking mode: a chat request whose tool-calling assistant
  message lacks its `reasoning_content` is refused with HTTP 400.
- `props={...}`: served at `GET /props` (llama.cpp's server properties); 404 when None.
  `model_info={"id": {...}}` adds fields (vLLM's `max_model_len`) to `GET /v1/models` entries.

Use it as `async with FakeOpenAIServer(items) as server:` (`server.base_url`,
`server.requests`, `server.violations`), from another event loop or a subprocess test with
`with run_in_thread(items) as server:`, or as a process:
`python tests/fake_openai.py SCRIPT.json [--record OUT.json] [--context-limit N] [--no-retry-after]` prints the
base URL on its first stdout line and serves until SIGTERM/SIGINT. A script file may be
`{"responses": [...], "without_tools": {...}, "props": {...}}`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

Item = Mapping[str, Any]

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    411: "Length Required",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}
_DEFAULT_ERRORS = {
    400: "bad request",
    401: "Incorrect API key provided",
    403: "forbidden",
    404: "The model does not exist",
    429: "Rate limit reached, retry later",
    500: "The server had an error while processing your request",
}


def count_tokens(body: Mapping[str, Any]) -> int:
    """The fake's own token count of a request: its messages and tools as JSON, 4 characters a token."""
    return (len(json.dumps(body.get("messages") or body.get("input"))) + len(json.dumps(body.get("tools") or []))) // 4


def overflow_error(shape: str, prompt: int, limit: int) -> dict[str, Any]:
    """A context-overflow refusal as OpenAI/vLLM or llama.cpp words it."""
    if shape == "llama":
        return {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": prompt,
            "n_ctx": limit,
        }
    return {
        "message": f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
        f"{prompt} tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }


def validate_request(body: Any) -> list[str]:
    """Everything that makes `body` an invalid chat-completions request for a strict server."""
    if not isinstance(body, dict):
        return ["the request body is not a JSON object"]
    problems: list[str] = []
    if not isinstance(body.get("model"), str):
        problems.append("the request has no model")
    if "tools" in body and not body["tools"]:
        problems.append("`tools` is sent empty (omit it instead)")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "the request has no messages"]
    return problems + _check_history(messages)


def _check_history(messages: list[Any]) -> list[str]:
    """Every assistant tool call must be answered by a `tool` message before anything else."""
    problems: list[str] = []
    pending: set[str] = set()
    for position, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if isinstance(message, dict):
            problems.extend(_check_images(position, message.get("content")))
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                problems.append(f"message {position}: tool reply {call_id!r} answers no pending tool call")
            pending.discard(call_id)
            continue
        if pending:
            problems.append(f"message {position} ({role}) comes before tool replies to {sorted(pending)}")
            pending.clear()
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                problems.extend(_check_call(position, call))
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    pending.add(call["id"])
    if pending:
        problems.append(f"the request ends with unanswered tool calls {sorted(pending)}")
    return problems


_IMAGE_MAGIC = {
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff",
    "image/gif": b"GIF8",
    "image/webp": b"RIFF",
}


def _check_images(position: int, content: Any) -> list[str]:
    """Each image part as OpenAI takes one: a base64 `data:` URL of one of the four types,
    whose bytes are the type it says."""
    problems: list[str] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict) or part.get("type") != "image_url":
            continue
        url = str((part.get("image_url") or {}).get("url", ""))
        head, _, data = url.partition(",")
        mime = head.removeprefix("data:").removesuffix(";base64")
        if not head.startswith("data:") or not head.endswith(";base64") or mime not in _IMAGE_MAGIC:
            problems.append(f"message {position}: an image part that is no base64 data URL of an image: {url[:40]!r}")
            continue
        try:
            raw = base64.b64decode(data, validate=True)
        except ValueError:
            problems.append(f"message {position}: an image part whose base64 is broken")
            continue
        if not raw.startswith(_IMAGE_MAGIC[mime]):
            problems.append(f"message {position}: an image part that says {mime} of bytes that are not one")
    return problems


def _check_call(position: int, call: Any) -> list[str]:
    if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call["id"]:
        return [f"message {position}: a tool call without an id"]
    function = call.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return [f"message {position}: tool call {call['id']} has no function name"]
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        return [f"message {position}: tool call {call['id']} arguments are not a string"]
    try:
        json.loads(arguments)
    except json.JSONDecodeError:
        return [f"message {position}: tool call {call['id']} arguments are not valid JSON: {arguments[:80]!r}"]
    return []


class FakeOpenAIServer:
    """A scripted OpenAI-compatible server on 127.0.0.1 (see the module docstring)."""

    def __init__(
        self,
        responses: Sequence[Item] = (),
        *,
        models: Sequence[str] | None = None,
        check_unused: bool = True,
        check_violations: bool = True,
        retry_after_ms: int | None = 1,
        port: int = 0,
        context_limit: int | None = None,
        overflow_shape: str = "openai",
        send_usage: bool = True,
        without_tools: Item | None = None,
        props: Mapping[str, Any] | None = None,
        model_info: Mapping[str, Mapping[str, Any]] | None = None,
        responses_only: bool = False,
        deepseek: bool = False,
    ) -> None:
        """`models`: ids that exist (others get 404); None accepts any model.

        `retry_after_ms` is sent on error responses: the openai client honours it, so its
        retries take milliseconds instead of its 0.5–8 s backoff.
        """
        self.responses = list(responses)
        self.models = list(models) if models is not None else None
        self.check_unused = check_unused
        self.check_violations = check_violations
        self.retry_after_ms = retry_after_ms
        self.port = port
        self.context_limit = context_limit
        self.overflow_shape = overflow_shape
        self.send_usage = send_usage
        self.without_tools = without_tools
        self.props = props
        self.model_info = dict(model_info or {})
        self.responses_only = responses_only
        self.deepseek = deepseek
        self.refused_chat = 0
        """Chat requests answered 404 because the model is `responses_only`."""
        self.refused = 0
        """Requests refused as over `context_limit`."""
        self.refused_requests: list[int] = []
        """Their indexes in `requests`."""
        self.requests: list[Any] = []
        self.request_headers: list[dict[str, str]] = []
        """Each chat request's headers, names in lower case."""
        """Parsed JSON body of every chat-completions POST, in arrival order."""
        self.violations: list[str] = []
        self.aborted = asyncio.Event()
        """Set when a client closed a connection before its streamed answer ended."""
        self.used = 0
        self._taken: set[int] = set()
        self.streaming = 0
        self.max_streaming = 0
        """The most answers streaming at the same moment (several sub-agents at once)."""
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def unused(self) -> int:
        return len(self.responses) - self.used

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._on_connection, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    def problems(self) -> list[str]:
        found = list(self.violations) if self.check_violations else []
        if self.check_unused and self.unused:
            found.append(f"{self.unused} of {len(self.responses)} scripted responses were never requested")
        return found

    def assert_clean(self) -> None:
        """Raise AssertionError if there were violations or (when checked) unused responses."""
        if problems := self.problems():
            raise AssertionError("fake OpenAI server: " + "; ".join(problems))

    async def __aenter__(self) -> FakeOpenAIServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
        if exc is None:
            self.assert_clean()
        elif problems := self.problems():
            exc.add_note("fake OpenAI server: " + "; ".join(problems))

    # --- HTTP ------------------------------------------------------------------------

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._serve_one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            self.aborted.set()
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, _ = request_line.split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
        path = target.split("?", 1)[0].rstrip("/")
        if method == "GET" and path == "/v1/models":
            ids = self.models if self.models is not None else ["fake-model"]
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake", **self.model_info.get(m, {})}
                for m in ids
            ]
            await self._send_json(writer, 200, {"object": "list", "data": data})
            return
        if method == "GET" and path == "/props" and self.props is not None:
            await self._send_json(writer, 200, dict(self.props))
            return
        if method != "POST" or path not in ("/v1/chat/completions", "/v1/responses"):
            await self._send_error(writer, 404, f"no route for {method} {path}")
            return
        if path == "/v1/chat/completions" and self.responses_only:
            message = "This model is only supported in v1/responses and not in v1/chat/completions."
            self.refused_chat += 1
            await self._send_error(writer, 404, message, retry=False)
            return
        if "content-length" not in headers:
            await self._send_error(writer, 411, "a Content-Length is required")
            return
        raw = await reader.readexactly(int(headers["content-length"]))
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        self.requests.append(body)
        self.request_headers.append(headers)
        await self._answer(body, reader, writer, responses=path == "/v1/responses")

    async def _answer(
        self, body: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, responses: bool = False
    ) -> None:
        number = len(self.requests)
        if problems := (validate_responses_request(body) if responses else validate_request(body)):
            self.violations.extend(f"request {number}: {p}" for p in problems)
            await self._send_error(writer, 500, "invalid request: " + "; ".join(problems), retry=False)
            return
        if self.deepseek and not responses and (missing := _without_reasoning(body)):
            await self._send_error(writer, 400, missing, retry=False)  # DeepSeek's thinking mode
            return
        if self.models is not None and body["model"] not in self.models:
            await self._send_error(writer, 404, f"The model `{body['model']}` does not exist")
            return
        if self.context_limit is not None and (prompt := count_tokens(body)) > self.context_limit:
            self.refused += 1
            self.refused_requests.append(len(self.requests) - 1)
            error = overflow_error(self.overflow_shape, prompt, self.context_limit)
            await self._send_json(writer, 400, {"error": error}, self._error_headers(retry=False))
            return
        if self.without_tools is not None and not body.get("tools"):
            await self._stream(body, self.without_tools, reader, writer)
            return
        index = self._pick(body)
        if index is None:
            message = f"request {number} arrived after the script's {len(self.responses)} responses ran out"
            self.violations.append(message)
            await self._send_error(writer, 500, message, retry=False)
            return
        item = self.responses[index]
        self._taken.add(index)
        self.used += 1
        if "http_error" in item:
            status = int(item["http_error"])
            message = str(item.get("message") or _DEFAULT_ERRORS.get(status, f"error {status}"))
            if "error_body" in item:
                headers = {**self._error_headers(retry=True), **(item.get("headers") or {})}
                await self._send_json(writer, status, {"error": item["error_body"]}, headers)
            else:
                await self._send_error(writer, status, message, extra=item.get("headers"))
        elif item.get("drop"):
            writer.close()
        elif item.get("stall") and not item.get("text") and not item.get("tool_calls"):
            await reader.read()  # until the client gives up
            self.aborted.set()
        else:
            await self._stream(body, item, reader, writer, responses=responses)

    def _pick(self, body: Mapping[str, Any]) -> int | None:
        """The script item for this request: the first unused one whose `match` is in its
        first user message, else the first unused one without a `match`."""
        history = body.get("messages") or body.get("input") or []
        first = next((m for m in history if isinstance(m, dict) and m.get("role") == "user"), {})
        text = first.get("content") if isinstance(first.get("content"), str) else ""
        free = [n for n in range(len(self.responses)) if n not in self._taken]
        matched = [n for n in free if "match" in self.responses[n] and str(self.responses[n]["match"]) in text]
        plain = [n for n in free if "match" not in self.responses[n]]
        return (matched or plain or [None])[0]

    async def _send_json(
        self, writer: asyncio.StreamWriter, status: int, payload: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            "Content-Type: application/json",
            f"Content-Length: {len(data)}",
            "Connection: close",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)
        await writer.drain()

    async def _send_error(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        message: str,
        *,
        retry: bool = True,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        headers = {**self._error_headers(retry=retry), **(extra or {})}
        error = {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error", "code": None}
        await self._send_json(writer, status, {"error": error}, headers)

    def _error_headers(self, *, retry: bool) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.retry_after_ms is not None:
            headers["retry-after-ms"] = str(self.retry_after_ms)
        if not retry:
            headers["x-should-retry"] = "false"
        return headers

    async def _stream(
        self,
        body: Mapping[str, Any],
        item: Item,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        responses: bool = False,
    ) -> None:
        head = ["HTTP/1.1 200 OK", "Content-Type: text/event-stream", "Transfer-Encoding: chunked", "Connection: close"]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        if not self.send_usage:
            item = {**item, "usage": None}
        delay = float(item.get("chunk_delay", 0))
        self.streaming += 1
        self.max_streaming = max(self.max_streaming, self.streaming)
        try:
            events = _responses_events(body, item) if responses else _events(body, item, len(self.requests))
            for event in events:
                name = json.loads(event).get("type") if responses and event.startswith("{") else None
                framed = f"event: {name}\ndata: {event}\n\n" if name else f"data: {event}\n\n"
                data = framed.encode(str(item.get("encoding", "utf-8")))
                writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                await writer.drain()
                if delay:
                    await asyncio.sleep(delay)
        finally:
            self.streaming -= 1
        if item.get("stall"):
            await reader.read()
            self.aborted.set()
            return
        if not item.get("cut_off") or item.get("clean"):
            writer.write(b"0\r\n\r\n")
            await writer.drain()


# --- SSE events for one scripted answer -----------------------------------------------


def _events(body: Mapping[str, Any], item: Item, number: int) -> Iterator[str]:
    if "raw_events" in item:
        yield from (str(e) for e in item["raw_events"])
        return
    base = {"id": f"chatcmpl-fake-{number}", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        return json.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})

    size = max(1, int(item.get("chunk_size", 3)))
    text = str(item.get("text") or "")
    yield chunk({"role": "assistant", "content": ""})
    units = _utf16_units(text) if item.get("utf16") else text
    for start in range(0, len(units), size):
        yield chunk({"content": units[start : start + size]})
    if item.get("cut_off"):
        return
    calls = list(item.get("tool_calls") or [])
    for piece in _tool_call_pieces(item, calls, size):
        delta: dict[str, Any] = {"tool_calls": [piece]}
        if "tool_delta_content" in item:
            delta["content"] = item["tool_delta_content"]
        yield chunk(delta)
    if item.get("stall"):
        return
    finish = str(item.get("finish_reason") or ("tool_calls" if calls else "stop"))
    usage = _usage(body, item, text, calls)
    if usage is not None and item.get("usage_in_finish_chunk"):
        yield chunk({}, finish, usage=usage)
    else:
        yield chunk({}, finish)
        if usage is not None and (body.get("stream_options") or {}).get("include_usage"):
            yield json.dumps({**base, "choices": [], "usage": usage})
    yield "[DONE]"


def _without_reasoning(body: Mapping[str, Any]) -> str:
    """DeepSeek's refusal of a history whose tool-calling assistant message came back
    without its `reasoning_content`."""
    for n, message in enumerate(body.get("messages") or []):
        if message.get("role") == "assistant" and message.get("tool_calls") and not message.get("reasoning_content"):
            return f"Missing `reasoning_content` field in the assistant message at message index {n}"
    return ""


def validate_responses_request(body: Any) -> list[str]:
    """A Responses request: `input` a list of items, each function call answered by its
    output before the next message, tools in the Responses shape."""
    if not isinstance(body, dict) or not isinstance(body.get("input"), list):
        return ["the body has no input list"]
    problems: list[str] = []
    open_calls: set[str] = set()
    for n, item in enumerate(body["input"]):
        if not isinstance(item, dict):
            problems.append(f"input[{n}] is not an object")
            continue
        kind = item.get("type", "message")
        if kind == "function_call":
            try:
                json.loads(item.get("arguments", ""))
            except (TypeError, json.JSONDecodeError):
                problems.append(f"input[{n}]: arguments are not JSON")
            open_calls.add(str(item.get("call_id")))
        elif kind == "function_call_output":
            if str(item.get("call_id")) not in open_calls:
                problems.append(f"input[{n}]: an output for no call")
            open_calls.discard(str(item.get("call_id")))
        elif kind == "message" and open_calls:
            problems.append(f"input[{n}]: a message before calls {sorted(open_calls)} were answered")
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict) or tool.get("type") != "function" or not tool.get("name"):
            problems.append(f"a tool that is not a Responses function: {str(tool)[:80]}")
    return problems


def _responses_events(body: Mapping[str, Any], item: Item) -> Iterator[str]:
    """One scripted answer as the Responses API streams it. Item keys: `text`,
    `tool_calls`, `reasoning` (summary text), `encrypted` (an encrypted reasoning item's
    content), `incomplete` (cut at max_output_tokens), `usage`, `raw_events`."""
    if "raw_events" in item:
        yield from (str(e) for e in item["raw_events"])
        return
    size = max(1, int(item.get("chunk_size", 3)))
    out: list[dict[str, Any]] = []
    yield json.dumps({"type": "response.created", "response": {"id": "resp_fake", "status": "in_progress"}})
    if item.get("reasoning") or item.get("encrypted"):
        index = len(out)
        reasoning = {"type": "reasoning", "id": f"rs_{index}", "summary": []}
        yield json.dumps({"type": "response.output_item.added", "output_index": index, "item": reasoning})
        thought = str(item.get("reasoning") or "")
        for start in range(0, len(thought), size):
            delta = thought[start : start + size]
            yield json.dumps(
                {
                    "type": "response.reasoning_summary_text.delta",
                    "output_index": index,
                    "summary_index": 0,
                    "delta": delta,
                }
            )
        done = {**reasoning, "summary": [{"type": "summary_text", "text": thought}]}
        if item.get("encrypted"):
            done["encrypted_content"] = item["encrypted"]
        yield json.dumps({"type": "response.output_item.done", "output_index": index, "item": done})
        out.append(done)
    text = str(item.get("text") or "")
    if text:
        index = len(out)
        message = {"type": "message", "id": f"msg_{index}", "role": "assistant", "content": []}
        yield json.dumps({"type": "response.output_item.added", "output_index": index, "item": message})
        for start in range(0, len(text), size):
            yield json.dumps(
                {"type": "response.output_text.delta", "output_index": index, "delta": text[start : start + size]}
            )
        out.append(message)
    for n, call in enumerate(item.get("tool_calls") or []):
        index = len(out)
        args = call.get("arguments", {})
        args = args if isinstance(args, str) else json.dumps(args)
        head = {
            "type": "function_call",
            "id": f"fc_{index}",
            "call_id": call.get("id", f"call_r{n}"),
            "name": call["name"],
            "arguments": "",
        }
        yield json.dumps({"type": "response.output_item.added", "output_index": index, "item": head})
        for start in range(0, len(args), size):
            yield json.dumps(
                {
                    "type": "response.function_call_arguments.delta",
                    "output_index": index,
                    "delta": args[start : start + size],
                }
            )
        yield json.dumps({"type": "response.function_call_arguments.done", "output_index": index, "arguments": args})
        yield json.dumps(
            {"type": "response.output_item.done", "output_index": index, "item": {**head, "arguments": args}}
        )
        out.append(head)
    usage = item.get("usage") or {"input_tokens": count_tokens(body), "output_tokens": max(1, len(text) // 4)}
    if item.get("incomplete"):
        response = {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "usage": usage}
        yield json.dumps({"type": "response.incomplete", "response": response})
        return
    yield json.dumps({"type": "response.completed", "response": {"status": "completed", "output": out, "usage": usage}})


def _utf16_units(text: str) -> str:
    """`text` with every character outside the BMP as its two surrogates, one code unit each."""
    data = text.encode("utf-16-le", "surrogatepass")
    return "".join(data[i : i + 2].decode("utf-16-le", "surrogatepass") for i in range(0, len(data), 2))


def _tool_call_pieces(item: Item, calls: list[Mapping[str, Any]], size: int) -> Iterator[dict[str, Any]]:
    streams = [_call_pieces(item, n, call, size) for n, call in enumerate(calls)]
    if item.get("interleave"):
        # Every call's header first, then argument pieces round-robin.
        for stream in streams:
            yield stream.pop(0)
        while any(streams):
            for stream in streams:
                if stream:
                    yield stream.pop(0)
        return
    for stream in streams:
        yield from stream


def _call_pieces(item: Item, n: int, call: Mapping[str, Any], size: int) -> list[dict[str, Any]]:
    """The `tool_calls[0]` entries of the deltas that stream one call."""
    args = call.get("arguments", {})
    text = args if isinstance(args, str) else json.dumps(args)
    if item.get("utf16"):
        text = _utf16_units(text)
    name = str(call["name"])
    names = [name[: len(name) // 2], name[len(name) // 2 :]] if item.get("split_name") else [name]
    first: dict[str, Any] = {"index": n, "type": "function", "function": {"name": names[0], "arguments": ""}}
    if not item.get("omit_ids"):
        first["id"] = str(call.get("id") or f"call_fake_{n + 1}")
    pieces = [first, *({"index": n, "function": {"name": part}} for part in names[1:])]
    pieces += [{"index": n, "function": {"arguments": text[i : i + size]}} for i in range(0, len(text), size)]
    for piece in pieces:
        if item.get("repeat_name"):
            piece["function"]["name"] = name
        if item.get("reuse_index"):
            piece["index"] = 0
        if item.get("omit_index"):
            del piece["index"]
    return pieces


def _usage(body: Mapping[str, Any], item: Item, text: str, calls: list[Mapping[str, Any]]) -> dict[str, int] | None:
    if "usage" in item:
        return dict(item["usage"]) if item["usage"] is not None else None
    prompt = count_tokens(body)
    completion = max(1, (len(text) + len(json.dumps(calls))) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


# --- running outside the test's event loop -------------------------------------------


class ServerThread:
    """A `FakeOpenAIServer` running on its own event loop in a daemon thread."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        self.server = server
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="fake-openai", daemon=True)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def start(self) -> ServerThread:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        """Stop serving and join the thread (idempotent; checks nothing)."""
        if self._thread.is_alive() and self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
            self._thread.join()

    def __enter__(self) -> FakeOpenAIServer:
        return self.server

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        if exc is None:
            self.server.assert_clean()
        elif problems := self.server.problems():
            exc.add_note("fake OpenAI server: " + "; ".join(problems))

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    async def _main(self) -> None:
        self._stopped = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        await self._stopped.wait()
        await self.server.stop()


def run_in_thread(responses: Sequence[Item] = (), **options: Any) -> ServerThread:
    """Start a server in a background thread; `options` as for `FakeOpenAIServer`.

    `with run_in_thread(items) as server:` stops it and asserts it clean on exit;
    or keep the returned `ServerThread` and call `.stop()` yourself.
    """
    return ServerThread(FakeOpenAIServer(responses, **options)).start()


# --- running as a process ------------------------------------------------------------


def load_script(path: str | Path) -> tuple[list[Item], dict[str, Any]]:
    """A script file is a JSON list of items or `{"responses": [...], ...options}`; returns
    the items and the server options the file sets (`without_tools`, `props`)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    items = data.get("responses") if isinstance(data, dict) else data
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise SystemExit(f'{path}: expected a list of response objects or {{"responses": [...]}}')
    options = {k: data[k] for k in ("without_tools", "props") if isinstance(data, dict) and k in data}
    return items, options


async def _serve_forever(server: FakeOpenAIServer) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        await server.start()
        stack.push_async_callback(server.stop)
        print(server.base_url, flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a scripted OpenAI-compatible API on 127.0.0.1.")
    parser.add_argument("script", help="JSON file: a list of response items or {'responses': [...]}")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: any free port)")
    parser.add_argument("--record", help="on exit, write requests, violations and unused count here (JSON)")
    parser.add_argument("--allow-unused", action="store_true", help="do not fail when responses go unused")
    parser.add_argument("--context-limit", type=int, help="refuse requests over N tokens with HTTP 400")
    parser.add_argument("--overflow-shape", choices=("openai", "llama"), default="openai")
    parser.add_argument("--no-usage", action="store_true", help="never report usage")
    parser.add_argument(
        "--no-retry-after", action="store_true", help="send no retry-after-ms on errors (clients use their backoff)"
    )
    args = parser.parse_args(argv)
    items, options = load_script(args.script)
    server = FakeOpenAIServer(
        items,
        port=args.port,
        check_unused=not args.allow_unused,
        context_limit=args.context_limit,
        overflow_shape=args.overflow_shape,
        send_usage=not args.no_usage,
        retry_after_ms=None if args.no_retry_after else 1,
        **options,
    )
    asyncio.run(_serve_forever(server))
    if args.record:
        record = {
            "requests": server.requests,
            "violations": server.violations,
            "unused": server.unused,
            "refused": server.refused,
        }
        Path(args.record).write_text(json.dumps(record, indent=2), encoding="utf-8")
    if problems := server.problems():
        print("fake OpenAI server: " + "; ".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
