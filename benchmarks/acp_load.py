"""`session/load` through `todo-agent --acp`: how long an editor waits for a saved session's
history to be back on screen and the agent ready (the load's response, which comes after
every replayed update).

Usage: python benchmarks/acp_load.py [--messages 2000] [--runs 5]

Shapes, each a session in a temporary data dir: `typical` is `history.py`'s
`build_session` (each exchange a prompt, a Read call, its 30-line result, a Markdown
answer); `one block` is one answer holding a 2 MB code fence; `no spaces` is one 2 MB
answer line without a space. The clock starts at `session/load` (the process already up
and initialized, as an editor keeps it) and stops when its response arrives at the SDK's
own client; a fresh process per run. Medians over `--runs`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from history import build_session

HERE = Path(__file__).resolve().parent


class Counting:
    def __init__(self) -> None:
        self.updates = 0
        self.bytes = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates += 1
        self.bytes += len(update.model_dump_json(by_alias=True, exclude_none=True))

    async def request_permission(self, **kwargs: Any) -> Any:
        raise AssertionError("nothing asks during a load")

    async def read_text_file(self, **kwargs: Any) -> Any:
        raise AssertionError("nothing reads during a load")

    async def write_text_file(self, **kwargs: Any) -> Any:
        raise AssertionError("nothing writes during a load")


def one_answer(workspace: Path, home: Path, answer: str) -> None:
    from todo_agent.core.session.transcript import Session

    session = Session.create(workspace, root=home)
    session.append({"role": "user", "content": "show me all of it"})
    session.append({"role": "assistant", "content": answer})
    session.close()


async def load_once(workspace: Path, session_id: str, env: dict[str, str], model: str) -> tuple[float, int, int]:
    from acp import PROTOCOL_VERSION, spawn_agent_process

    client = Counting()
    command = [str(Path(sys.executable).with_name("todo-agent")), "--acp", "--model", model]
    async with spawn_agent_process(client, *command, env=env, cwd=workspace) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        started = time.perf_counter()
        await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        took = time.perf_counter() - started
    return took, client.updates, client.bytes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="acp-load-"))
    try:
        script = root / "script.json"
        script.write_text(json.dumps({"steps": []}))
        fence = "```python\n" + "x = 1  # a line of a long file\n" * 70_000 + "```\n"
        shapes = {
            "typical": lambda w, h: build_session(
                w, options.messages // 4, (HERE / "history_answer.md").read_text(encoding="utf-8"), root=h
            ),
            "one block": lambda w, h: one_answer(w, h, fence),
            "no spaces": lambda w, h: one_answer(w, h, "x" * 2_000_000),
        }
        for name, build in shapes.items():
            home, workspace = root / name / "home", root / name / "project"
            workspace.mkdir(parents=True)
            os.environ["TODO_AGENT_HOME"] = str(home)
            from todo_agent.core.session.directory import latest_session

            build(workspace, home)
            path = latest_session(workspace, root=home)
            assert path is not None, name
            env = {**os.environ, "TODO_AGENT_HOME": str(home)}
            runs = [asyncio.run(load_once(workspace, path.stem, env, f"script:{script}")) for _ in range(options.runs)]
            median = statistics.median(t for t, _, _ in runs)
            _, updates, size = runs[0]
            print(f"{name:10} {median * 1000:7.0f} ms  ({updates} updates, {size / 1e6:.1f} MB of JSON, "
                  f"session {path.stat().st_size / 1e6:.1f} MB)")  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
