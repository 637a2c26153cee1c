"""Searches that cannot run away: a catastrophic regex stays interruptible and is bounded
by a timeout, and a 1 GB single-line file does not take 1 GB of memory to Read or Grep."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from terminal_signals import as_from_a_terminal

from todo_agent.core.tools import files, search
from todo_agent.core.tools.context import ToolContext
from todo_agent.core.tools.results import ToolResult

# ripgrep rejects look-ahead, so Grep falls back to Python's re, where this pattern takes
# exponential time on a line of a's that never ends in "b".
CATASTROPHIC = r"(?=(a+)+b)"


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    (workspace / "trap.txt").write_text("a" * 60 + "c\n")
    return ToolContext(call_id="t1", workspace=workspace)


def _children(pid: int | None = None) -> set[int]:
    """Child pids of `pid` (this process by default), over all of its threads.

    A thread can exit between the listing and the read; its children file is then gone.
    """
    found: set[int] = set()
    for task in Path(f"/proc/{pid or os.getpid()}/task").iterdir():
        try:
            found |= {int(child) for child in (task / "children").read_text().split()}
        except OSError:
            continue
    return found


async def _until(condition: object, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def test_a_catastrophic_pattern_stops_at_the_timeout(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "SEARCH_TIMEOUT", 1.0)
    result = await search.GREP.run({"pattern": CATASTROPHIC}, ctx)
    output = result.output if isinstance(result, ToolResult) else result
    assert "stopped after 1 s" in output
    await _until(lambda: not _children())


async def test_a_catastrophic_pattern_is_interruptible(ctx: ToolContext) -> None:
    before = _children()
    task = asyncio.create_task(search.GREP.run({"pattern": CATASTROPHIC}, ctx))
    await _until(lambda: _children() - before)  # the search runs in a process of its own
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _until(lambda: not (_children() - before))


def test_ctrl_c_stops_a_headless_run_stuck_in_grep(workspace: Path, tmp_path: Path) -> None:
    (workspace / "trap.txt").write_text("a" * 60 + "c\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "Grep", "arguments": {"pattern": CATASTROPHIC}}]}, "x"]))
    command = [str(Path(sys.executable).with_name("todo-agent")), "-p", "find", "--model", f"script:{script}"]
    with as_from_a_terminal():  # a suite run as a background job has SIGINT ignored
        proc = subprocess.Popen(
            [*command, "--output-format", "stream-json"],
            cwd=workspace,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # SIGABRT prints every thread's stack
        )
    assert proc.stdout is not None
    for line in proc.stdout:
        if '"type": "ToolStarted"' in line:
            break
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # where is it stuck? (the stacks go to the failure)
        _, err = proc.communicate(timeout=20)
        pytest.fail(f"Ctrl-C did not end the run within 20 s; its stacks:\n{err[-8000:]}")
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err


def _grep_workers_of(pid: int) -> set[int]:
    return {child for child in _children(pid) if b"grep_worker" in _cmdline(child)}


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # it has just exited
        return b""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_search_dies_with_an_agent_killed_by_sigkill(workspace: Path, tmp_path: Path) -> None:
    (workspace / "trap.txt").write_text("a" * 60 + "c\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "Grep", "arguments": {"pattern": CATASTROPHIC}}]}, "x"]))
    command = [str(Path(sys.executable).with_name("todo-agent")), "-p", "find", "--model", f"script:{script}"]
    proc = subprocess.Popen(
        [*command, "--output-format", "stream-json"], cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + 30
        while not (workers := _grep_workers_of(proc.pid)):
            assert time.monotonic() < deadline, "the search never started"
            time.sleep(0.02)
        proc.kill()  # SIGKILL: no cleanup runs in the agent
        proc.wait()
        deadline = time.monotonic() + 20
        while any(_alive(pid) for pid in workers):
            assert time.monotonic() < deadline, "the search outlived the agent"
            time.sleep(0.02)
    finally:
        proc.kill()


def _one_line_file(path: Path, size: int) -> None:
    with path.open("wb") as f:
        f.write(b"needle ")
        chunk = b"x" * (1 << 20)
        for _ in range(size // len(chunk)):
            f.write(chunk)
        f.write(b"\nsecond line\n")


def test_read_of_a_huge_single_line_file_uses_little_memory(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    _one_line_file(big, 64 << 20)
    tracemalloc.start()
    try:
        lines, total = files.read_window(big, "big.txt", 1, 2000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == 2 and lines[0].startswith("     1\tneedle x") and "line cut" in lines[0]
    assert lines[1] == "     2\tsecond line"
    assert peak < 4 << 20, peak


def test_grep_reads_huge_lines_in_bounded_pieces(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    _one_line_file(big, 64 << 20)
    tracemalloc.start()
    try:
        with big.open("rb") as f:
            lines = [line[:20] for line in files.bounded_lines(f, 1 << 20)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == [b"needle " + b"x" * 13, b"second line\n"]
    assert peak < 8 << 20, peak  # a few pieces of 1 MiB, whatever the line's 64 MiB
