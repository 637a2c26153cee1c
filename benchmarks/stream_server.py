"""A local OpenAI-compatible server that streams one long Markdown answer, for benchmarks.

Usage: python benchmarks/stream_server.py --log EVENTS.jsonl [--port 0]
Prints its base URL (`http://127.0.0.1:PORT/v1`) on the first line of stdout, then serves
until SIGTERM/SIGINT. Every request to `POST /v1/chat/completions` is answered with a
streamed (SSE) Markdown answer chosen by the request's model name, a comma-separated list
of `key=value`:

- `chunks=N` (default 2000): that many content chunks of about one token each;
- `bytes=N,chunk=K`: an answer of about N bytes in chunks of K bytes instead;
- `rate=R` (default 0): chunks per second; 0 writes them all at once ("burst");
- `shape=S` with `bytes=N`: `mixed` (default, as below), `fence` (one code fence holding
  the whole answer: a model writing a long file), `lines` (10,000-character lines and
  no blank line: one paragraph, as a model pasting output) or `line` (one line).
- `think=1`: the chunks stream as reasoning (`delta.reasoning_content`, as DeepSeek and
  llama.cpp send it) instead of content; after the last one the server waits `HOLD`
  seconds (the open thought, `LAST_MARK` in it, stays on screen), then answers `done`.
- `agents=K`: a fan-out instead: the main agent's first request is answered with K `Agent`
  calls (briefs `bench child 1`…), each sub-agent's request with the streamed answer, and
  the main agent's next request (after the results) with `LAST_MARK`.

The answer mixes headings, paragraphs, lists and code fences. Its first chunk is
`FIRST_MARK` and its last `LAST_MARK`, so a screen scraper can tell when the first and the
last chunk are on screen. Each request appends to the log, as JSON lines with
`time.monotonic()` (the same clock in every process on the machine): `request` when the
body is read, `first_byte` when the first content chunk is written, `last_byte` when the
last one is.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import signal
import sys
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, TextIO

FIRST_MARK = "Qxvstart"
LAST_MARK = "Qxvend"
HOLD = 3.0
"""Seconds a `think=1` answer waits between its thought and its answer."""

SECTION = """## Part {n}: the loader

The loader in `module_{n}.py` reads **every** file twice, once to count the lines and \
once to parse them; on a large tree that doubles the time spent in `open()`.

- it ignores errors from `parse()` and keeps going
- it sorts the results by name, then by *size*
- nested settings:
  - `retries = {n}`
  - `timeout = 30`

```python
def parse(text: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        rows.append(line.split(","))  # step {n}
    return rows
```

1. read the file once
2. parse it in one pass
3. report the errors with their line numbers

"""

CODE = """def parse_{n}(text: str) -> list[list[str]]:
    \"\"\"Rows of `text`, split at commas (step {n}).\"\"\"
    rows = []
    for line in text.splitlines():
        rows.append(line.split(","))  # a comment, {n}
    return rows

"""

LONG_LINE = 10_000
WORDS = "the loader in `module_{n}.py` reads **every** file twice, once to count and once to parse; "

_TOKEN = re.compile(r"\s*\S{1,5}|\s+")


def body_of(shape: str, size: int) -> str:
    """About `size` bytes of an answer of `shape` (see the module's docstring)."""
    if shape == "fence":
        code = "".join(CODE.format(n=n) for n in range(size // len(CODE) + 1))[:size]
        return "```python\n" + code[: code.rfind("\n") + 1] + "```\n\n"
    if shape == "lines":
        line = "".join(WORDS.format(n=n) for n in range(LONG_LINE // len(WORDS) + 1))[: LONG_LINE - 1] + "\n"
        return line * (size // LONG_LINE + 1)
    if shape == "line":
        return "".join(WORDS.format(n=n) for n in range(size // len(WORDS) + 1))[:size] + "\n\n"
    return "".join(SECTION.format(n=n) for n in range(size // len(SECTION) + 1))[:size]


@cache
def answer_chunks(
    chunks: int = 2000, size_bytes: int = 0, chunk_bytes: int = 0, shape: str = "mixed"
) -> tuple[str, ...]:
    """The answer, cut into its chunks: token-sized, or `chunk_bytes` long when `size_bytes` is set."""
    if size_bytes:
        body = body_of(shape, size_bytes)
        pieces = [body[i : i + chunk_bytes] for i in range(0, len(body), chunk_bytes)]
    else:
        tokens: list[str] = []
        n = 0
        while len(tokens) < chunks - 2:
            tokens.extend(_TOKEN.findall(SECTION.format(n=n)))
            n += 1
        pieces = tokens[: chunks - 2]
    return (f"{FIRST_MARK}\n\n", *pieces, f" {LAST_MARK}")


SHAPES = ("mixed", "fence", "lines", "line")


def scenario(model: str) -> dict[str, int]:
    """`chunks=2000,rate=100` → {"chunks": 2000, "rate": 100}; unknown keys are ignored.
    The shape is given as its index in `SHAPES`."""
    found = {"chunks": 2000, "rate": 0, "bytes": 0, "chunk": 256, "shape": 0, "agents": 0, "think": 0}
    for part in model.split(","):
        key, _, value = (s.strip() for s in part.partition("="))
        if key == "shape" and value in SHAPES:
            found["shape"] = SHAPES.index(value)
        elif key in found and value.isdigit():
            found[key] = int(value)
    return found


CHILD_BRIEF = "bench child"


def fan_out_role(body: dict[str, Any]) -> str:
    """In a fan-out: `stream` for a sub-agent's request, `finish` for the main agent's once
    its calls have results, `fan_out` for its first."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    first = next((m.get("content") for m in messages if m.get("role") == "user"), "")
    if isinstance(first, str) and first.startswith(CHILD_BRIEF):
        return "stream"
    return "finish" if any(m.get("role") == "tool" for m in messages) else "fan_out"


def sse(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def usage_event(model: str, completion_tokens: int) -> bytes:
    usage = {"prompt_tokens": 100, "completion_tokens": completion_tokens, "total_tokens": 100 + completion_tokens}
    chunk = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": []}
    return b"data: " + json.dumps({**chunk, "usage": usage}).encode() + b"\n\n"


class StreamServer:
    def __init__(self, log: TextIO) -> None:
        self.log = log

    def note(self, event: str, **extra: Any) -> None:
        self.log.write(json.dumps({"event": event, "t": time.monotonic(), **extra}) + "\n")
        self.log.flush()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
            body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))) or b"{}")
            model = str(body.get("model", ""))
            self.note("request", model=model)
            plan = scenario(model)
            role = fan_out_role(body) if plan["agents"] else "stream"
            if role == "fan_out":
                await self.calls(writer, model, plan["agents"])
            elif role == "finish":
                await self.stream(writer, model, plan, [f"all {plan['agents']} looked {LAST_MARK}"])
            else:
                await self.stream(writer, model, plan)
        except (ConnectionError, asyncio.IncompleteReadError, json.JSONDecodeError):
            pass
        except asyncio.CancelledError:  # shutting down mid-stream: nothing to report
            return
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def calls(self, writer: asyncio.StreamWriter, model: str, count: int) -> None:
        """The main agent's fan-out: `count` Agent calls in one answer."""
        head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        writer.write(head.encode("latin-1") + sse(model, {"role": "assistant", "content": ""}))
        for n in range(count):
            arguments = json.dumps({"description": f"Bench {n + 1}", "prompt": f"{CHILD_BRIEF} {n + 1}"})
            call = {
                "index": n,
                "id": f"call_{n + 1}",
                "type": "function",
                "function": {"name": "Agent", "arguments": arguments},
            }
            writer.write(sse(model, {"tool_calls": [call]}))
        writer.write(sse(model, {}, "tool_calls") + usage_event(model, 50) + b"data: [DONE]\n\n")
        await writer.drain()

    async def stream(
        self, writer: asyncio.StreamWriter, model: str, plan: dict[str, int], pieces: Sequence[str] | None = None
    ) -> None:
        head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        writer.write(head.encode("latin-1") + sse(model, {"role": "assistant", "content": ""}))
        if pieces is None:
            size, chunk = plan["bytes"], plan["chunk"] if plan["bytes"] else 0
            pieces = answer_chunks(plan["chunks"], size, chunk, SHAPES[plan["shape"]])
        field = "reasoning_content" if plan["think"] else "content"
        events = [sse(model, {field: piece}) for piece in pieces]
        rate = plan["rate"]
        started = time.monotonic()
        self.note("first_byte")
        for i, event in enumerate(events):
            if rate:
                delay = started + i / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            writer.write(event)
            if rate:
                await writer.drain()
        await writer.drain()
        self.note("last_byte", chunks=len(events))
        if plan["think"]:
            await asyncio.sleep(HOLD)
            writer.write(sse(model, {"content": "done"}))
        writer.write(sse(model, {}, "stop") + usage_event(model, len(events)) + b"data: [DONE]\n\n")
        await writer.drain()


async def main_async(port: int, log_path: Path) -> None:
    with log_path.open("a", encoding="utf-8") as log:
        server = StreamServer(log)
        listener = await asyncio.start_server(server.serve, "127.0.0.1", port)
        bound = listener.sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{bound}/v1", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        async with listener:
            await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", type=Path, required=True, help="append timing events here (JSON lines)")
    args = parser.parse_args()
    asyncio.run(main_async(args.port, args.log))
    sys.exit(0)


if __name__ == "__main__":
    main()
