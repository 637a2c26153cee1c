"""The baseline: a bare Textual app that streams an answer into a `Markdown` widget.

Usage: python benchmarks/bare_textual.py BASE_URL MODEL
Header + Markdown (in an anchored scroll view, so the end stays in sight) + Input +
Footer. Enter sends the prompt to the OpenAI-compatible server at BASE_URL and each
streamed token goes to `MarkdownStream.write`, one call per token: what a straightforward
Textual chat app does. `benchmarks/tui_bench.py` runs it beside todo-agent.
"""

from __future__ import annotations

import asyncio
import json
import sys
from urllib.parse import urlsplit

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Input, Markdown


class Bare(App[None]):
    AUTO_FOCUS = "Input"

    def __init__(self, base_url: str, model: str) -> None:
        super().__init__()
        self.url, self.model = urlsplit(base_url), model

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll():
            yield Markdown()
        yield Input(placeholder="Ask…")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).anchor()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        event.input.clear()
        self.run_worker(self.ask(event.value))

    async def ask(self, prompt: str) -> None:
        body = json.dumps({"model": self.model, "stream": True, "messages": [{"role": "user", "content": prompt}]})
        reader, writer = await asyncio.open_connection(self.url.hostname, self.url.port)
        request = f"POST {self.url.path}/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        writer.write(f"{request}Content-Length: {len(body)}\r\n\r\n{body}".encode())
        stream = Markdown.get_stream(self.query_one(Markdown))
        while line := await reader.readline():
            if line.startswith(b"data: {"):
                for choice in json.loads(line[6:])["choices"]:
                    await stream.write(choice["delta"].get("content") or "")
        writer.close()
        await stream.stop()


if __name__ == "__main__":
    Bare(sys.argv[1], sys.argv[2]).run()
