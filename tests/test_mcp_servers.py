"""Real MCP servers over real transports (stdio and Streamable HTTP), through the manager:
tools, results, errors, stderr, change notifications, crashes, timeouts, cancels, stops."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest
from mcp_helpers import Managers, alive, gone_soon, http_server, pids, stdio_spec

from todo_agent.core.mcp.config import ServerSpec
from todo_agent.core.mcp.manager import McpManager
from todo_agent.core.mcp.remote import CallFailed
from todo_agent.core.mcp.tools import SEARCH_NAME, ToolSet
from todo_agent.core.tools.base import Tool
from todo_agent.core.tools.context import ToolContext
from todo_agent.core.tools.results import ToolError, ToolResult

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="watches server processes in /proc")


async def connected(manager: McpManager, within: float = 30) -> McpManager:
    manager.start()
    await manager.wait_settled(within)
    return manager


async def test_a_stdio_server_lists_and_answers(managers: Managers, notes: Path) -> None:
    manager = await connected(managers(stdio_spec("t", notes)))
    (server,) = manager.servers
    assert server.state == "connected" and manager.counts() == (1, 1)
    assert "mcp__t__echo" in server.tools and server.tools["mcp__t__echo"].name == "echo"
    result = await manager.call("mcp__t__echo", {"text": "hi"})
    assert [p.text for p in result.parts] == ["hi"] and not result.is_error


async def test_a_streamable_http_server_lists_and_answers(managers: Managers, notes: Path) -> None:
    with http_server(notes) as url:
        spec = ServerSpec("web", "user", "test", "http", url=url)
        manager = await connected(managers(spec))
        assert manager.servers[0].state == "connected", manager.servers[0].reason
        result = await manager.call("mcp__web__echo", {"text": "over http"})
        assert result.parts[0].text == "over http"
        await manager.stop()


def tool_of(tools: ToolSet, name: str) -> Tool:
    return next(t for t in tools.mcp_tools() if t.name == name)


async def run(tool: Tool, args: dict[str, object], workspace: Path) -> ToolResult:
    result = await tool.run(args, ToolContext("call_1", workspace))
    return result if isinstance(result, ToolResult) else ToolResult(result)


async def test_results_as_the_model_reads_them(managers: Managers, notes: Path, workspace: Path) -> None:
    manager = await connected(managers(stdio_spec("t", notes)))
    tools = ToolSet([], manager, schema_room=lambda: 1e9, hidden=lambda name: False)
    failed = await run(tool_of(tools, "mcp__t__fail"), {"why": "no luck"}, workspace)
    assert failed.is_error and "fail" in failed.output
    picture = await run(tool_of(tools, "mcp__t__picture"), {}, workspace)
    assert picture.output == "[image: image/png, 70 bytes]"
    structured = await run(tool_of(tools, "mcp__t__structured"), {"count": 2}, workspace)
    assert json.loads(structured.output) == {"count": 2, "items": [0, 1]}
    tool = tool_of(tools, "mcp__t__echo")
    assert tool.kind == "execute" and "(MCP server t, tool echo)" in tool.description
    assert tool.parameters["type"] == "object" and "text" in tool.parameters["properties"]


async def test_a_huge_result_is_cut_like_bashs_and_kept_whole_beside_the_session(
    managers: Managers, notes: Path, workspace: Path
) -> None:
    from todo_agent.core.session.transcript import Session

    manager = await connected(managers(stdio_spec("t", notes)))
    tools = ToolSet([], manager, schema_room=lambda: 1e9, hidden=lambda name: False)
    session = Session.create(workspace)
    try:
        ctx = ToolContext("call_big", workspace, session)
        result = await tool_of(tools, "mcp__t__huge").run({"chars": 200_000}, ctx)
        assert isinstance(result, ToolResult)
        assert 30_000 < len(result.output) < 31_000 and "line 000000" in result.output
        kept = session.path.with_name(f"{session.id}.mcp-results") / "call_big.txt"
        assert f"the whole result (200,000 characters) is in {kept}" in result.output
        assert len(kept.read_text()) == 200_000 and (kept.stat().st_mode & 0o077) == 0
    finally:
        session.close()


async def test_the_api_key_is_hidden_unless_the_servers_env_names_it(
    managers: Managers, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("UNLISTED", "x")
    plain = stdio_spec("plain", notes)
    named = stdio_spec("named", notes, env={"OPENAI_API_KEY": "sk-for-it"})
    manager = await connected(managers(plain, named, hidden_env=frozenset({"OPENAI_API_KEY"})))

    async def value(tool: str, name: str) -> str:
        return (await manager.call(tool, {"name": name})).parts[0].text

    assert await value("mcp__plain__environment", "OPENAI_API_KEY") == "<unset>"
    assert await value("mcp__plain__environment", "UNLISTED") == "<unset>"  # the SDK's allow-list
    assert await value("mcp__plain__environment", "PATH") == os.environ["PATH"]
    assert await value("mcp__named__environment", "OPENAI_API_KEY") == "sk-for-it"


async def test_stderr_goes_to_a_buffer_and_a_log_file(managers: Managers, notes: Path, tmp_path: Path) -> None:
    manager = await connected(managers(stdio_spec("t", notes)))
    await manager.call("mcp__t__complain", {"text": "\x1b[2J a message on stderr"})
    server = manager.servers[0]
    for _ in range(100):
        if any("a message on stderr" in line for line in server.stderr.lines):
            break
        await asyncio.sleep(0.02)
    assert any("a message on stderr" in line for line in server.stderr.lines)
    log = tmp_path / "logs" / "t.log"
    assert "a message on stderr" in log.read_text() and (log.stat().st_mode & 0o077) == 0


async def test_tools_list_changed_refreshes_the_tools(managers: Managers, notes: Path) -> None:
    manager = await connected(managers(stdio_spec("t", notes)))
    server = manager.servers[0]
    assert "mcp__t__added" not in server.tools
    await manager.call("mcp__t__add_tool", {})
    for _ in range(200):
        if "mcp__t__added" in server.tools:
            break
        await asyncio.sleep(0.02)
    assert (await manager.call("mcp__t__added", {})).parts[0].text == "added here"


async def test_a_server_that_dies_mid_call_is_an_error_then_restarted_once(managers: Managers, notes: Path) -> None:
    manager = await connected(managers(stdio_spec("t", notes)))
    first = pids(notes)
    with pytest.raises(CallFailed, match="closed the connection"):
        await manager.call("mcp__t__crash", {})
    assert (await manager.call("mcp__t__echo", {"text": "back"})).parts[0].text == "back"
    assert manager.servers[0].state == "connected" and await gone_soon(first) == []


@pytest.mark.parametrize("hold_stdout", [False, True])
async def test_a_crashed_servers_children_are_stopped_with_it(
    managers: Managers, notes: Path, hold_stdout: bool
) -> None:
    """With `hold_stdout`, the child keeps the protocol's pipe open: no end of file says the
    server died, only its process does."""
    manager = await connected(managers(stdio_spec("t", notes)))
    child = int((await manager.call("mcp__t__spawn_child", {"hold_stdout": hold_stdout})).parts[0].text)
    assert alive(child)
    crash = asyncio.create_task(manager.call("mcp__t__crash", {}))
    assert await gone_soon([child]) == [], "the crashed server's child outlived it"
    with pytest.raises(CallFailed):
        await crash
    server = manager.servers[0]
    assert server.state == "failed"
    assert server.reason == "the server exited" if hold_stdout else "the server" in server.reason


async def test_the_tool_timeout_is_a_hard_maximum(managers: Managers, notes: Path) -> None:
    manager = await connected(managers(stdio_spec("t", notes, tool_timeout=0.5)))
    started = time.monotonic()
    with pytest.raises(CallFailed, match=r"did not answer within 0.5 s \(tool_timeout_sec\)"):
        await manager.call("mcp__t__slow", {"seconds": 30})
    assert time.monotonic() - started < 5
    for _ in range(100):  # the server was told to stop
        if (notes / "cancelled").exists():
            break
        await asyncio.sleep(0.05)
    assert (notes / "cancelled").exists()


async def test_cancelling_a_call_cancels_it_on_the_server(managers: Managers, notes: Path) -> None:
    manager = await connected(managers(stdio_spec("t", notes)))
    call = asyncio.create_task(manager.call("mcp__t__slow", {"seconds": 30}))
    await asyncio.sleep(0.3)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    for _ in range(100):
        if (notes / "cancelled").exists():
            break
        await asyncio.sleep(0.05)
    assert (notes / "cancelled").read_text() == "yes"
    assert (await manager.call("mcp__t__echo", {"text": "still here"})).parts[0].text == "still here"


async def test_a_server_whose_start_hangs_fails_at_its_timeout_and_is_gone(managers: Managers, notes: Path) -> None:
    manager = managers(stdio_spec("h", notes, hang=True, startup_timeout=1.0), stdio_spec("t", notes))
    started = time.monotonic()
    await connected(manager)
    hung, ok = manager.servers
    assert ok.state == "connected"
    assert hung.state == "failed" and "within 1 s (startup_timeout_sec)" in hung.reason
    assert time.monotonic() - started < 15
    assert hung.stderr.tail() == ["hanging on purpose"]
    hung_pid = hung.stderr.pid
    assert hung_pid is not None and await gone_soon([hung_pid]) == []


async def test_stop_ends_every_server_and_what_it_started(managers: Managers, notes: Path) -> None:
    manager = await connected(managers(stdio_spec("a", notes), stdio_spec("b", notes)))
    await manager.call("mcp__a__spawn_child", {})
    everything = pids(notes)
    assert len(everything) == 3 and all(alive(p) for p in everything)
    started = time.monotonic()
    await manager.stop()
    assert time.monotonic() - started < 3
    assert await gone_soon(everything) == []
    assert {s.state for s in manager.servers} == {"stopped"}


async def test_a_missing_command_fails_with_its_name(managers: Managers, notes: Path) -> None:
    spec = ServerSpec("gone", "user", "test", "stdio", command="no-such-mcp-server-here")
    manager = await connected(managers(spec))
    assert (
        manager.servers[0].state == "failed"
        and "command not found: no-such-mcp-server-here" in manager.servers[0].reason
    )


async def test_disabled_servers_never_start(managers: Managers, notes: Path) -> None:
    manager = await connected(managers(stdio_spec("off", notes, enabled=False)))
    assert manager.servers[0].state == "disabled" and manager.counts() == (0, 0) and pids(notes) == []


async def test_enabled_and_disabled_tools(managers: Managers, notes: Path) -> None:
    spec = stdio_spec("t", notes, enabled_tools=("echo", "slow"), disabled_tools=("slow",))
    manager = await connected(managers(spec))
    assert list(manager.servers[0].tools) == ["mcp__t__echo"]


async def test_tool_search_stands_in_when_schemas_exceed_the_share(
    managers: Managers, notes: Path, workspace: Path
) -> None:
    manager = await connected(managers(stdio_spec("t", notes)))
    builtin = Tool("Read", "read", {"type": "object"}, run=lambda args, ctx: None)  # type: ignore[arg-type, return-value]
    room = [1e9]
    tools = ToolSet([builtin], manager, schema_room=lambda: room[0], hidden=lambda name: name == "mcp__t__crash")
    names = [t.name for t in tools]
    assert "mcp__t__echo" in names and "mcp__t__crash" not in names and SEARCH_NAME not in names
    room[0] = 500  # a small window: a tenth of it cannot hold the schemas
    assert [t.name for t in tools] == ["Read", SEARCH_NAME]
    search = tools[1]
    found = await run(search, {"query": "say the text back"}, workspace)
    assert "mcp__t__echo" in found.output
    assert "mcp__t__echo" in [t.name for t in tools]  # loaded: sent from the next request
    loaded = await run(search, {"names": ["mcp__t__picture", "mcp__t__nope"]}, workspace)
    assert "mcp__t__picture" in [t.name for t in tools] and "No such tool: mcp__t__nope" in loaded.output
    with pytest.raises(ToolError):
        await search.run({}, ToolContext("c", workspace))


@pytest.mark.parametrize("images", [True, False])
async def test_an_mcp_tools_image_follows_its_result_for_a_model_that_accepts_images(
    workspace: Path, notes: Path, images: bool
) -> None:
    from contextlib import aclosing

    from todo_agent.core.model.scripted import ScriptedModel
    from todo_agent.core.runtime import Runtime
    from todo_agent.core.settings import Config

    config = Config(
        workspace=workspace,
        model="script:x",
        permission_mode="bypassPermissions",
        mcp_servers=[stdio_spec("t", notes)],
        images=images,
    )
    model = ScriptedModel.from_data([{"tool_calls": [{"name": "mcp__t__picture", "arguments": {}}]}, "a red dot"])
    runtime = Runtime.create(config, model=model)
    try:
        assert await runtime.mcp.connect() == []
        async with aclosing(runtime.turn.run("look")) as events:
            async for _ in events:
                pass
        second = model.requests[1]
        (at,) = [i for i, m in enumerate(second) if m["role"] == "tool"]
        assert second[at]["content"] == "[image: image/png, 70 bytes]"
        after = second[at + 1 :]
        if images:
            (message,) = after
            parts = message["content"]
            assert message["role"] == "user" and parts[0]["text"].startswith("<system-reminder>")
            assert "mcp__t__picture" in parts[0]["text"]
            assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
        else:
            assert after == []
    finally:
        await runtime.mcp.stop()
        runtime.close()


async def test_an_http_server_that_went_away_is_reconnected_at_the_next_call(managers: Managers, notes: Path) -> None:
    with http_server(notes) as url:
        manager = await connected(managers(ServerSpec("web", "user", "test", "http", url=url)))
        assert (await manager.call("mcp__web__echo", {"text": "one"})).parts[0].text == "one"
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with pytest.raises(CallFailed):
        await manager.call("mcp__web__echo", {"text": "nobody there"})
    with http_server(notes, port):
        assert (await manager.call("mcp__web__echo", {"text": "two"})).parts[0].text == "two"
        await manager.stop()


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("import sys; print('no such database: prod', file=sys.stderr); sys.exit(2)", "no such database: prod"),
        ("print('not json at all')", "it did not complete the MCP handshake"),
    ],
)
async def test_a_server_that_exits_at_start_says_why(managers: Managers, script: str, said: str) -> None:
    spec = ServerSpec("bad", "user", "test", "stdio", command=sys.executable, args=("-c", script))
    manager = await connected(managers(spec))
    (server,) = manager.servers
    assert server.state == "failed" and said in server.reason
    assert server.reason.startswith("it did not complete the MCP handshake")
