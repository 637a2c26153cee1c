"""Asking the server about itself costs the first answer as little as it can.

Against a remote server each of the probe's requests is a connection and a TLS
handshake, and building the client is ~0.3 s of CPU (`import openai`): they overlap.
The server here holds its answers until what should happen meanwhile has happened, so
doing them one after the other runs into the probe's timeout and loses the answers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from todo_agent.core.model.server import probe
from todo_agent.core.runtime import LazyModel, Runtime
from todo_agent.core.settings import Config

MODELS = {"data": [{"id": "served-model"}]}
PROPS = {"default_generation_settings": {"n_ctx": 4096}}
HOLD = 5.0
"""Seconds the server holds an answer; more than the probe's own timeout (2 s)."""


@contextmanager
def holding_server(release: Callable[[str], bool], changed: threading.Condition) -> Iterator[str]:
    """A server answering `/v1/models` and `/props` once `release(path)` is true, checked
    as each request comes in and whenever `changed` is notified (503 after `HOLD` s)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = {"/v1/models": MODELS, "/props": PROPS}.get(self.path)
            with changed:
                changed.notify_all()  # a new request: the others look again
                released = changed.wait_for(lambda: release(self.path), timeout=HOLD)
            if body is None or not released:
                self.send_response(404 if body is None else 503)
                self.end_headers()
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_the_probe_asks_both_questions_at_once() -> None:
    asked: set[str] = set()

    def release(path: str) -> bool:  # each answer waits until both questions are in
        asked.add(path)
        return {"/v1/models", "/props"} <= asked

    with holding_server(release, threading.Condition()) as base_url:
        info = probe(base_url, None)
    assert info.model_ids == ("served-model",)
    assert info.n_ctx == 4096


def test_loading_the_client_imports_it(workspace: Path) -> None:
    """`load_client` is the CPU-heavy part of the warm-up that the server's answer overlaps."""
    child = (
        "import sys; from pathlib import Path; from todo_agent.core.runtime import LazyModel;"
        "from todo_agent.core.settings import Config;"
        f"LazyModel(Config(workspace=Path({str(workspace)!r}), model='gpt-x')).load_client();"
        "print('openai' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "True"


def test_the_client_is_loaded_while_the_server_is_asked(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loading, changed = threading.Event(), threading.Condition()
    original = LazyModel.load_client

    def load_client(self: LazyModel) -> None:
        with changed:
            loading.set()
            changed.notify_all()
        original(self)

    monkeypatch.setattr(LazyModel, "load_client", load_client)
    with holding_server(lambda path: loading.is_set(), changed) as base_url:
        config = Config(workspace=workspace, model="", base_url=base_url, api_key="test")
        runtime = Runtime.create(config)
        try:
            runtime.warm_up()
            assert runtime.server is not None and runtime.server.model_ids == ("served-model",)
            assert config.model == "served-model"  # the server's answer chose the model the client uses
            assert runtime.model.get().name == "served-model"
        finally:
            runtime.close()
