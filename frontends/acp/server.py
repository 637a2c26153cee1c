"""The ACP agent on stdin and stdout: stdout is the protocol and nothing else.

Before the SDK connects, the process's file descriptor 1 is pointed at stderr and the
protocol keeps a private copy of the real stdout: a stray `print`, a library's warning or
a child process that inherited fd 1 can never put a byte between two JSON-RPC messages.
Logs go to stderr (a client shows them in its log view) and to a file beside each session.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, cast

from acp import run_agent, stdio_streams
from acp.interfaces import Agent

from todo_agent.core.stop_signals import exit_status, on_stop_signals

from .agent import TodoAgentAcp

log = logging.getLogger(__name__)

STREAM_LIMIT = 50 * 1024 * 1024
"""Bytes of one JSON-RPC message the reader takes (a prompt with a big embedded file)."""


def run_acp(flags: dict[str, Any], *, demo_workspace: Path | None = None) -> int:
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr  # Python's own writes to stdout go to stderr too
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="todo-agent: %(levelname)s %(name)s: %(message)s")
    for chatty in ("httpx", "httpcore", "openai", "mcp"):  # a line per request is not news
        logging.getLogger(chatty).setLevel(logging.WARNING)
    return asyncio.run(_serve(flags, protocol, demo_workspace))


async def _serve(flags: dict[str, Any], protocol: Any, demo_workspace: Path | None) -> int:
    real, sys.stdout = sys.stdout, protocol  # `stdio_streams` connects to sys.stdout as it is now
    try:
        reader, writer = await stdio_streams(limit=STREAM_LIMIT)
    finally:
        sys.stdout = real
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None
    # ctrl+c in a terminal reaches the client and its agent alike: the client says what to
    # stop (session/cancel). A handler, not SIG_IGN, so the model's commands keep the default.
    loop.add_signal_handler(signal.SIGINT, lambda: log.info("SIGINT ignored: the client cancels with session/cancel"))
    stopped: list[signal.Signals] = []

    def stop(sig: signal.Signals) -> None:  # SIGTERM, SIGHUP: every session stops cleanly
        stopped.append(sig)
        task.cancel()

    release = on_stop_signals(loop, stop)
    agent = TodoAgentAcp(flags, demo_workspace=demo_workspace)
    try:
        # Duck-typed: a method it lacks (session/list, fork, …) answers -32601, method not found.
        await run_agent(cast(Agent, agent), writer, reader)
    except asyncio.CancelledError:
        if not stopped:
            raise
    finally:
        await agent.close()
        release()
    return exit_status(stopped[0]) if stopped else 0
