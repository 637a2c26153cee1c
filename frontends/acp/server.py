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
import sys
from typing import Any, cast

from acp import run_agent, stdio_streams
from acp.interfaces import Agent

from .agent import TodoAgentAcp

STREAM_LIMIT = 50 * 1024 * 1024
"""Bytes of one JSON-RPC message the reader takes (a prompt with a big embedded file)."""


def run_acp(flags: dict[str, Any]) -> int:
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr  # Python's own writes to stdout go to stderr too
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="todo-agent: %(levelname)s %(name)s: %(message)s")
    return asyncio.run(_serve(flags, protocol))


async def _serve(flags: dict[str, Any], protocol: Any) -> int:
    real, sys.stdout = sys.stdout, protocol  # `stdio_streams` connects to sys.stdout as it is now
    try:
        reader, writer = await stdio_streams(limit=STREAM_LIMIT)
    finally:
        sys.stdout = real
    agent = TodoAgentAcp(flags)
    try:
        # Duck-typed: a method it lacks (session/list, fork, …) answers -32601, method not found.
        await run_agent(cast(Agent, agent), writer, reader)
    finally:
        await agent.close()
    return 0
