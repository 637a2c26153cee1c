"""Bash: real subprocesses, process-group kills on timeout and on interrupt."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from todo_agent.core.pipes import CappedOutput
from todo_agent.core.tools import bash
from todo_agent.core.tools.bash import BASH, TOOLS
from todo_agent.core.tools.context import ToolContext
from todo_agent.core.tools.results import ToolError, ToolResult


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(call_id="t1", workspace=workspace)


async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    result = await BASH.run(args, ctx)
    assert isinstance(result, ToolResult)
    return result


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no procfs: fall back to signal 0
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_for(condition: Any, deadline: float = 10.0) -> bool:
    """Poll a state condition until it holds or the deadline passes."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while not condition():
        if loop.time() > end:
            return False
        await asyncio.sleep(0.01)
    return True


def read_pid(path: Path) -> int | None:
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text.isdigit() else None


def test_declaration() -> None:
    assert TOOLS == [BASH]
    assert BASH.kind == "execute"
    assert BASH.schema()["function"]["parameters"]["required"] == ["command"]
    assert BASH.summarize({"command": "pytest -x " + "tests/ " * 30}).startswith("pytest -x tests/")
    assert len(BASH.summarize({"command": "x" * 200})) == 60


async def test_output_and_success(ctx: ToolContext) -> None:
    result = await run({"command": "echo hello; echo oops >&2"}, ctx)
    assert result == ToolResult("hello\noops")


async def test_no_output(ctx: ToolContext) -> None:
    assert await run({"command": "true"}, ctx) == ToolResult("(no output)")


async def test_nonzero_exit_is_an_error_with_the_code(ctx: ToolContext) -> None:
    assert await run({"command": "echo partial; exit 3"}, ctx) == ToolResult("partial\nExit code 3", is_error=True)
    assert await run({"command": "exit 1"}, ctx) == ToolResult("Exit code 1", is_error=True)


async def test_runs_in_workspace_with_plain_env_and_no_stdin(ctx: ToolContext, workspace: Path) -> None:
    command = 'pwd -P; echo "$TERM $NO_COLOR $PAGER $GIT_PAGER"; read -r line; echo "read=$?"'
    result = await run({"command": command}, ctx)
    cwd, env, read = result.output.split("\n")
    assert cwd == str(workspace)  # pytest's tmp_path is already a real path
    assert env == "dumb 1 cat cat"
    assert read == "read=1"  # stdin is /dev/null: EOF at once, no hang


async def test_output_cap_keeps_head_and_tail(ctx: ToolContext) -> None:
    result = await run({"command": "seq 1 200000"}, ctx)
    total = sum(len(str(n)) + 1 for n in range(1, 200001))
    assert not result.is_error
    assert result.output.startswith("1\n2\n3\n")
    assert result.output.endswith("\n199999\n200000")
    assert f"\n… [{total - 30_000} bytes omitted] …\n" in result.output
    assert len(result.output) < 30_100


def test_capped_output_under_the_limit_is_untouched() -> None:
    out = CappedOutput(head=4, tail=4)
    for chunk in (b"ab", "é".encode(), b"cd"):
        out.feed(chunk)
    assert out.text() == "abécd"
    assert out.omitted == 0
    out.feed(b"0123456789")
    assert out.omitted == 8
    assert out.text() == "abé\n… [8 bytes omitted] …\n6789"


async def test_timeout_kills_and_reports_output_so_far(ctx: ToolContext, workspace: Path) -> None:
    result = await run({"command": "echo started; sleep 30 & echo $! > child.pid; wait", "timeout": 1}, ctx)
    assert result.is_error
    assert result.output.startswith("started\n")
    assert result.output.endswith("Command timed out after 1 s; it and everything it started were killed.")
    child = read_pid(workspace / "child.pid")
    assert child is not None
    assert await wait_for(lambda: not alive(child))


async def test_timeout_escalates_to_sigkill(ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The shell and its child ignore SIGTERM; only the SIGKILL after the grace ends them.
    # A short grace: the 2 s one would be waited out in full, testing nothing more.
    monkeypatch.setattr(bash, "_KILL_GRACE", 0.2)
    command = "trap '' TERM; sleep 60 & echo $! > child.pid; echo $$ > shell.pid; wait"
    result = await run({"command": command, "timeout": 1}, ctx)
    assert "timed out after 1 s" in result.output
    for name in ("child.pid", "shell.pid"):
        pid = read_pid(workspace / name)
        assert pid is not None
        assert await wait_for(lambda pid=pid: not alive(pid)), name


async def test_cancellation_kills_the_process_group(ctx: ToolContext, workspace: Path) -> None:
    task = asyncio.create_task(run({"command": "sleep 300 & echo $! > child.pid; echo $$ > shell.pid; wait"}, ctx))
    assert await wait_for(lambda: read_pid(workspace / "shell.pid") is not None)
    child, shell = read_pid(workspace / "child.pid"), read_pid(workspace / "shell.pid")
    assert child is not None and shell is not None
    assert alive(child)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_for(lambda: not alive(child))
    assert await wait_for(lambda: not alive(shell))


async def test_cancellation_while_starting_still_kills_the_group(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Starting a subprocess takes several loop steps; hold the start open until the
    # interrupt has arrived, as a slow machine does.
    spawned, release = asyncio.Event(), asyncio.Event()
    real_spawn = bash._spawn

    async def slow_spawn(command: str, cwd: Path, env: dict[str, str]) -> Any:
        proc = await real_spawn(command, cwd, env)
        spawned.set()
        await release.wait()
        return proc

    monkeypatch.setattr(bash, "_spawn", slow_spawn)
    task = asyncio.create_task(run({"command": "sleep 300 & echo $! > child.pid; echo $$ > shell.pid; wait"}, ctx))
    await spawned.wait()
    assert await wait_for(lambda: read_pid(workspace / "shell.pid") is not None)
    task.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    for name in ("child.pid", "shell.pid"):
        pid = read_pid(workspace / name)
        assert pid is not None
        assert await wait_for(lambda pid=pid: not alive(pid)), name


async def test_background_job_with_redirected_output_does_not_block(ctx: ToolContext, workspace: Path) -> None:
    result = await run({"command": "sleep 300 > /dev/null 2>&1 & echo $! > bg.pid; echo done", "timeout": 30}, ctx)
    pid = read_pid(workspace / "bg.pid")
    assert pid is not None
    try:
        assert result == ToolResult("done")
        assert alive(pid)  # finishing normally does not kill what the command left running
    finally:
        os.kill(pid, signal.SIGKILL)


async def test_background_job_holding_the_output_does_not_block(ctx: ToolContext, workspace: Path) -> None:
    # The job inherits the output pipe; the call still ends when the shell does.
    started = asyncio.get_running_loop().time()
    result = await run({"command": "echo started; sleep 300 & echo $! > bg.pid", "timeout": 20}, ctx)
    elapsed = asyncio.get_running_loop().time() - started
    pid = read_pid(workspace / "bg.pid")
    assert pid is not None
    try:
        assert result == ToolResult("started")
        assert elapsed < 5
        assert alive(pid)  # not killed: only a timeout or an interrupt kills the group
    finally:
        os.kill(pid, signal.SIGKILL)


async def test_background_job_keeps_the_shells_exit_code(ctx: ToolContext, workspace: Path) -> None:
    result = await run({"command": "sleep 300 & echo $! > bg.pid; echo failing; exit 3", "timeout": 20}, ctx)
    pid = read_pid(workspace / "bg.pid")
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert result == ToolResult("failing\nExit code 3", is_error=True)


async def test_output_written_just_before_exit_is_kept(ctx: ToolContext) -> None:
    # A child still flushing as the shell exits: read on after the exit, until EOF.
    result = await run({"command": "(sleep 0.2; echo late) & echo early", "timeout": 20}, ctx)
    assert result == ToolResult("early\nlate")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required parameter 'command'"),
        ({"command": "   "}, "'command' is blank"),
        ({"command": "ls", "timeout": "soon"}, "'timeout' must be an integer"),
        ({"command": "ls", "timeout": 0}, "'timeout' must be >= 1"),
    ],
)
async def test_bad_arguments(ctx: ToolContext, args: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        await BASH.run(args, ctx)


async def test_timeout_default_and_clamp(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    async def fake_run(
        command: str, cwd: Path, time_limit: float, env: dict[str, str] | None = None, **_: object
    ) -> ToolResult:
        seen.append(time_limit)
        return ToolResult("")

    monkeypatch.setattr(bash, "run_command", fake_run)
    await BASH.run({"command": "ls"}, ctx)
    await BASH.run({"command": "ls", "timeout": 100_000}, ctx)  # Claude-Code style milliseconds
    await BASH.run({"command": "ls", "timeout": "30"}, ctx)
    await BASH.run({"command": "ls", "timeout": 9_000_000}, ctx)
    await BASH.run({"command": "ls", "timeout": 600}, ctx)
    await BASH.run({"command": "ls", "timeout": 900}, ctx)  # seconds past the limit: clamped
    await BASH.run({"command": "ls", "timeout": 999}, ctx)
    await BASH.run({"command": "ls", "timeout": 1000}, ctx)  # from 1000 on: milliseconds
    await BASH.run({"command": "ls", "timeout": 120_000}, ctx)
    assert seen == [120, 100, 30, 600, 600, 600, 600, 1, 120]


async def test_missing_workspace_is_a_tool_error(tmp_path: Path) -> None:
    ctx = ToolContext(call_id="t1", workspace=tmp_path / "gone")
    with pytest.raises(ToolError, match="Cannot start /bin/bash"):
        await BASH.run({"command": "ls"}, ctx)
