"""Crash safety: `kill -9` a process that is saving the task list, a hundred times.

The child (`_task_crash_child.py`) applies numbered operations 1, 2, 3, … and prints
each number after that mutation returned. Let `a` be the last number it printed before
it died (or the state it started from). The file must then parse and equal state `a`
(the last acknowledged one) or state `a + 1` (the one being written when it died),
never anything else. The next child resumes from whatever the file holds, so the
temp-file sweep on load and the lock left by a dead process are exercised too.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _task_crash_child import clock, step

from todo_agent.core.tasks import persistence
from todo_agent.core.tasks.file_format import decode
from todo_agent.core.tasks.model import Task
from todo_agent.core.tasks.store import TaskStore

CHILD = Path(__file__).with_name("_task_crash_child.py")
KILLS = 100

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")


class Model:
    """State number n, rebuilt by replaying the child's operations in memory."""

    def __init__(self) -> None:
        self.store = TaskStore(None, clock=clock)
        self.states: list[tuple[tuple[Task, ...], int]] = [((), 1)]
        self.loop = asyncio.new_event_loop()

    def state(self, n: int) -> tuple[tuple[Task, ...], int]:
        while len(self.states) <= n:
            self.loop.run_until_complete(step(self.store, len(self.states)))
            self.states.append((self.store.snapshot(), self.store.next_id))
        return self.states[n]

    def which(self, found: tuple[tuple[Task, ...], int], candidates: range) -> int | None:
        return next((n for n in candidates if self.state(n) == found), None)


class Acks:
    """The child's stdout, read straight from the pipe so `select` sees every byte."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.last: int | None = None

    def _take(self, chunk: bytes) -> None:
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            self.last = int(line)

    def wait_for(self, count: int) -> None:
        """Block until `count` more acknowledgements arrived."""
        seen = 0
        while seen < count:
            chunk = os.read(self.fd, 4096)
            assert chunk, "the child exited on its own"
            seen += chunk.count(b"\n")
            self._take(chunk)

    def wait_at_most(self, seconds: float) -> None:
        """The random moment: wait for output, but no longer than `seconds`."""
        ready, _, _ = select.select([self.fd], [], [], seconds)
        if ready:
            self._take(os.read(self.fd, 4096))

    def drain(self) -> None:
        while chunk := os.read(self.fd, 4096):
            self._take(chunk)


def read_state(path: Path) -> tuple[tuple[Task, ...], int]:
    if not path.exists():
        return (), 1
    return decode(json.loads(path.read_bytes()))


def test_kill_9_at_random_moments_never_leaves_a_torn_or_unacknowledged_file(tmp_path: Path) -> None:
    path = tmp_path / "session.tasks.json"
    model = Model()
    rng = random.Random(1234)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    current = 0
    landed_after_write = temp_files_seen = 0

    for _ in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, str(CHILD), str(path), str(current)],
            stdout=subprocess.PIPE,
            bufsize=0,
            env=env,
            cwd=tmp_path,
        )
        assert child.stdout is not None
        acks = Acks(child.stdout.fileno())
        acks.wait_for(rng.choice([0, 1, 1, 2, 3, 5]))  # 0: die while starting up or loading
        acks.wait_at_most(rng.uniform(0, 0.004))  # about two writes' time: lands anywhere in one
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        acks.drain()  # anything printed before the kill landed
        child.stdout.close()
        acknowledged = current if acks.last is None else acks.last

        temp_files_seen += bool(persistence.temp_files(path))
        found = read_state(path)
        n = model.which(found, range(acknowledged, acknowledged + 2))
        assert n is not None, f"file matches neither state {acknowledged} nor {acknowledged + 1}: {found}"
        landed_after_write += n > acknowledged
        current = n

    assert current > KILLS  # it really made progress between kills
    TaskStore.load(path)
    assert persistence.temp_files(path) == []
    print(f"{KILLS} kills: {landed_after_write} after the rename, {temp_files_seen} left a temp file")
