"""Commands in the background (issue 32): real subprocesses started by Bash(run_in_background),
read in pieces by BashOutput, stopped with everything they started by KillShell, the limit,
the cap, whose shells an agent sees, the gate, and their end with the session."""

from __future__ import annotations

import json
import re
import sys
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from test_tools_bash import alive, wait_for

from todo_agent.core.tasks.model import AgentRef
from todo_agent.core.tools.bash import BASH
from todo_agent.core.tools.context import ToolContext
from todo_agent.core.tools.results import ToolError, ToolResult
from todo_agent.core.tools.shells import BASH_OUTPUT, KILL_SHELL, Shells


@pytest.fixture
async def shells() -> Any:
    found = Shells()
    yield found
    await found.stop_all()


def context(workspace: Path, shells: Shells, agent: AgentRef | None = None) -> ToolContext:
    return ToolContext(call_id="t1", workspace=workspace, shells=shells, agent=agent)


async def call(tool: Any, args: dict[str, Any], ctx: ToolContext) -> str:
    result = await tool.run(args, ctx)
    return result.output if isinstance(result, ToolResult) else str(result)


async def start(command: str, ctx: ToolContext) -> str:
    text = await call(BASH, {"command": command, "run_in_background": True}, ctx)
    found = re.search(r"as (bash_\d+)\. ", text)
    assert found is not None, text
    return found.group(1)


async def test_a_background_command_returns_at_once_and_is_read_in_pieces(workspace: Path, shells: Shells) -> None:
    ctx = context(workspace, shells)
    (workspace / "go").write_text("")
    script = "echo first; while [ -e go ]; do sleep 0.05; done; echo second; exit 3"
    shell_id = await start(script, ctx)  # returns while the command waits for `go` to go

    await wait_for(lambda: shells.shells[shell_id].total > 0)
    first = await call(BASH_OUTPUT, {"shell_id": shell_id}, ctx)
    assert first.splitlines()[0].startswith(f"{shell_id}: running · ") and first.splitlines()[1:] == ["first"]
    assert (await call(BASH_OUTPUT, {"shell_id": shell_id}, ctx)).splitlines()[1:] == ["(no new output)"]

    (workspace / "go").unlink()
    await wait_for(lambda: not shells.shells[shell_id].running)
    last = await call(BASH_OUTPUT, {"shell_id": shell_id}, ctx)
    assert re.match(rf"{shell_id}: ended after [\d.]+ s: Exit code 3\nsecond$", last), last


async def test_kill_shell_stops_it_and_everything_it_started(workspace: Path, shells: Shells) -> None:
    ctx = context(workspace, shells)
    shell_id = await start("sleep 300 & echo $!; sleep 300", ctx)
    await wait_for(lambda: shells.shells[shell_id].total > 0)
    child = int((await call(BASH_OUTPUT, {"shell_id": shell_id}, ctx)).splitlines()[1])
    shell = shells.shells[shell_id]
    assert shell.proc is not None and alive(shell.proc.pid) and alive(child)

    said = await call(KILL_SHELL, {"shell_id": shell_id}, ctx)

    assert said.startswith(f"Killed {shell_id} and everything it started")
    assert await wait_for(lambda: not alive(child)) and not alive(shell.proc.pid)
    assert (await call(BASH_OUTPUT, {"shell_id": shell_id}, ctx)).startswith(f"{shell_id}: killed after")
    assert (await call(KILL_SHELL, {"shell_id": shell_id}, ctx)).startswith(f"{shell_id} had already ended")


async def test_at_most_eight_at_once_and_the_ninth_is_refused_naming_them(workspace: Path, shells: Shells) -> None:
    ctx = context(workspace, shells)
    started = [await start("sleep 300", ctx) for _ in range(8)]
    with pytest.raises(ToolError, match="8 background commands already run") as refused:
        await BASH.run({"command": "sleep 1", "run_in_background": True}, ctx)
    assert all(name in str(refused.value) for name in started)
    await call(KILL_SHELL, {"shell_id": started[0]}, ctx)
    await start("sleep 300", ctx)  # room again


async def test_output_past_the_cap_drops_the_oldest_and_says_so(workspace: Path) -> None:
    shells = Shells(cap=1_000)
    ctx = context(workspace, shells)
    shell_id = await start("for i in $(seq 1 500); do echo line-$i; done", ctx)
    await wait_for(lambda: not shells.shells[shell_id].running)
    text = await call(BASH_OUTPUT, {"shell_id": shell_id}, ctx)
    lines = text.splitlines()
    total = sum(len(f"line-{i}\n") for i in range(1, 501))
    assert lines[1] == f"({total - 1_000:,} bytes not kept: only the last 1,000 bytes are)"
    assert lines[-1] == "line-500" and "line-1\n" not in text
    assert len("\n".join(lines[2:])) <= 1_000


async def test_a_filter_keeps_matching_lines_and_a_bad_one_is_one_error(workspace: Path, shells: Shells) -> None:
    ctx = context(workspace, shells)
    shell_id = await start("printf 'GET /a 200\\nGET /b 404\\nGET /c 200\\n'", ctx)
    await wait_for(lambda: not shells.shells[shell_id].running)
    with pytest.raises(ToolError, match="'filter' is not a regular expression"):
        await BASH_OUTPUT.run({"shell_id": shell_id, "filter": "("}, ctx)
    text = await call(BASH_OUTPUT, {"shell_id": shell_id, "filter": r" 200$"}, ctx)
    assert text.splitlines()[1:] == ["GET /a 200", "GET /c 200"]


async def test_an_agent_reaches_its_own_shells_and_the_main_agent_its_sub_agents(
    workspace: Path, shells: Shells
) -> None:
    worker = AgentRef("general-1", "s1")
    mine = await start("sleep 300", context(workspace, shells))
    theirs = await start("sleep 300", context(workspace, shells, worker))
    with pytest.raises(ToolError, match=rf"no background shell '{mine}' \(yours: {theirs}\)"):
        await KILL_SHELL.run({"shell_id": mine}, context(workspace, shells, worker))
    assert (await call(BASH_OUTPUT, {"shell_id": theirs}, context(workspace, shells))).startswith(theirs)
    await shells.stop_all(worker, everyone=False)  # a sub-agent's end
    assert not shells.shells[theirs].running and shells.shells[mine].running


def test_the_gate_runs_a_background_command_as_any_command_and_never_asks_for_output(workspace: Path) -> None:
    from todo_agent.core.permissions.policy import PermissionPolicy

    tools = [BASH, BASH_OUTPUT, KILL_SHELL]
    plan = PermissionPolicy.from_strings(workspace, "plan", [], [], tools)
    assert plan.decide(BASH, BASH.check({"command": "sleep 9", "run_in_background": True})).verdict == "deny"
    assert plan.decide(BASH_OUTPUT, {"shell_id": "bash_1"}).verdict == "allow"
    assert plan.decide(KILL_SHELL, {"shell_id": "bash_1"}).verdict == "allow"
    default = PermissionPolicy.from_strings(workspace, "default", [], [], tools)
    assert default.decide(BASH, BASH.check({"command": "sleep 9", "run_in_background": True})).verdict == "ask"


async def test_the_session_ends_them_and_a_resumed_session_says_which_were_lost(workspace: Path) -> None:
    from todo_agent.core.model.scripted import ScriptedModel
    from todo_agent.core.runtime import Runtime
    from todo_agent.core.settings import Config

    config = Config(workspace=workspace, model="script:t", permission_mode="bypassPermissions")
    steps = [
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 300", "run_in_background": True}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "true", "run_in_background": True}}]},
        "Started.",
    ]
    runtime = Runtime.create(config, model=ScriptedModel.from_data(steps))
    async with aclosing(runtime.agent.run_turn("serve")) as stream:
        [e async for e in stream]
    server, quick = runtime.shells.shells["bash_1"], runtime.shells.shells["bash_2"]
    assert server.running and server.proc is not None
    await wait_for(lambda: not quick.running)
    await runtime.stop_background()  # quit
    assert not alive(server.proc.pid)
    runtime.close()

    again = Runtime.create(config, continue_latest=True, model=ScriptedModel.from_data([]))
    lost = [n.text for n in again.startup_notices() if "background commands" in n.text]
    assert lost == [
        "background commands still running when this session last ended were stopped then: bash_1 (sleep 300)"
    ]
    assert again.shells.next_number == 3  # new shells are numbered after the session's
    again.close()


def test_the_end_of_print_mode_stops_a_background_server(workspace: Path, tmp_path: Path) -> None:
    from test_headless_e2e import todo_agent

    script = tmp_path / "script.json"
    serve = f"{sys.executable} -c 'import time; print(\"up\", flush=True); time.sleep(300.0417)'"
    steps = [
        {"tool_calls": [{"name": "Bash", "arguments": {"command": serve, "run_in_background": True}}]},
        {"tool_calls": [{"name": "BashOutput", "arguments": {"shell_id": "bash_1"}}]},
        {"text": "It runs."},
    ]
    script.write_text(json.dumps({"steps": steps}))
    result = todo_agent(
        workspace, None, "-p", "serve", "--model", f"script:{script}", "--permission-mode", "bypassPermissions",
        "--output-format", "stream-json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    outputs = [e["output"] for e in events if e["type"] == "ToolFinished"]
    assert outputs[0].startswith("Started in the background as bash_1.")
    assert outputs[1].startswith("bash_1: running")
    assert not any("300.0417" in _cmdline(pid) for pid in _pids())  # the end of -p stopped it


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


async def test_a_new_session_starts_with_none_running(workspace: Path) -> None:
    from todo_agent.core.model.scripted import ScriptedModel
    from todo_agent.core.runtime import Runtime
    from todo_agent.core.settings import Config

    config = Config(workspace=workspace, model="script:t", permission_mode="bypassPermissions")
    steps = [{"tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 300", "run_in_background": True}}]}, "ok"]
    runtime = Runtime.create(config, model=ScriptedModel.from_data(steps))
    told: list[int] = []
    runtime.shells.listeners.append(lambda: told.append(len(runtime.shells.running())))
    async with aclosing(runtime.agent.run_turn("serve")) as stream:
        [e async for e in stream]
    old = runtime.shells.shells["bash_1"]
    assert old.proc is not None and told == [1]
    runtime.sessions.new()  # /new
    assert await wait_for(lambda: not alive(old.proc.pid))  # type: ignore[union-attr]
    assert runtime.shells.shells == {} and runtime.shells.listeners  # the front end still hears
    runtime.close()


async def test_a_catastrophic_filter_is_stopped_and_the_output_stays_unread(
    workspace: Path, shells: Shells, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`(a+)+b` on a line of a's holds Python's `re` for ever: the filter runs in a process
    of its own, stopped at its limit, and the app's loop never waits on it."""
    from todo_agent.core.tools import shells as module

    monkeypatch.setattr(module, "FILTER_TIMEOUT", 1.0)
    ctx = context(workspace, shells)
    shell_id = await start("printf 'a%.0s' $(seq 1 40); echo", ctx)
    await wait_for(lambda: not shells.shells[shell_id].running)
    with pytest.raises(ToolError, match="the filter took over 1 s on this output and was stopped"):
        await BASH_OUTPUT.run({"shell_id": shell_id, "filter": "(a+)+b"}, ctx)
    assert (await call(BASH_OUTPUT, {"shell_id": shell_id}, ctx)).splitlines()[1] == "a" * 40
