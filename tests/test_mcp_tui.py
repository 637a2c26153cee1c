"""MCP in the app: the status line, approvals naming the server, "all tools of this
server", `/mcp`, and the question before a project's servers start (Pilot, real servers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_helpers import pids, stdio_spec, wait_gone
from textual.widgets import Static
from tui_helpers import SIZE, main_screen, make_app, screen_text, send, trust_question, turn_done, wait_until

from todo_agent.core.mcp.trust import is_trusted
from todo_agent.tui.screens.approval import ApprovalScreen
from todo_agent.tui.screens.mcp_trust import McpTrustScreen

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="watches server processes in /proc")


def call(name: str, arguments: dict[str, object], call_id: str) -> dict[str, object]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def mcp_status(app: object) -> str:
    label = main_screen(app).status.query_one("#status-mcp", Static)  # type: ignore[arg-type]
    return str(label.render()) if label.display else ""


async def test_an_mcp_call_asks_naming_the_server_and_s_allows_the_whole_server(workspace: Path, notes: Path) -> None:
    script = [
        call("mcp__t__echo", {"text": "from the model"}, "c1"),
        call("mcp__t__structured", {"count": 1}, "c2"),
        "both ran",
    ]
    app = make_app(workspace, script, mcp_servers=[stdio_spec("t", notes)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: mcp_status(app) == "mcp 1/1")
        await send(pilot, "use the server")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        modal = app.screen
        assert isinstance(modal, ApprovalScreen)
        assert modal.request.tool == "mcp__t__echo" and modal.request.server_rule == "mcp__t"
        await wait_until(pilot, lambda: modal.fitted)
        text = screen_text(app)
        assert "Allow mcp__t__echo?" in text and "MCP server t · tool echo" in text
        assert '"text": "from the model"' in text  # the arguments, whole
        assert "don't ask again for all tools of this server mcp__t" in text
        await pilot.press("s")
        await turn_done(pilot)
        screen = main_screen(app)
        assert [str(r) for r in screen.runtime.permissions.session_allow] == ["mcp__t"]
        outputs = [m["content"] for m in screen.runtime.sessions.history if m["role"] == "tool"]
        assert outputs[0] == "from the model" and json.loads(outputs[1]) == {"count": 1, "items": [0]}
        await send(pilot, "/mcp")
        await wait_until(pilot, lambda: "MCP servers (1/1 connected)" in screen_text(app))
        assert "t  connected · 14 tools  (user settings)" in screen_text(app)
    assert wait_gone(pids(notes)) == []  # quitting stopped the server


async def test_s_means_nothing_for_a_tool_that_is_not_an_mcp_servers(workspace: Path) -> None:
    script = [{"tool_calls": [{"id": "b", "name": "Bash", "arguments": {"command": "true"}}]}, "ok"]
    app = make_app(workspace, script)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "run it")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, ApprovalScreen)  # still asking
        assert "all tools of this server" not in screen_text(app)
        await pilot.press("y")
        await turn_done(pilot)


async def test_a_projects_servers_start_only_after_the_person_says_yes(workspace: Path, notes: Path) -> None:
    spec = stdio_spec("proj", notes, source="mcp.json")
    app = make_app(workspace, [], mcp_servers=[spec])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "Start this project's MCP servers?" in screen_text(app))
        text = screen_text(app)
        assert "Start this project's MCP servers?" in text and "proj" in text and "TEST_SERVER_DIR" in text
        assert pids(notes) == [] and mcp_status(app) == "mcp 0/1"
        await trust_question(pilot, McpTrustScreen)
        await pilot.press("y")
        await wait_until(pilot, lambda: mcp_status(app) == "mcp 1/1")
        assert is_trusted(workspace, spec)
    assert wait_gone(pids(notes)) == []


async def test_declined_project_servers_do_not_start(workspace: Path, notes: Path) -> None:
    app = make_app(workspace, [], mcp_servers=[stdio_spec("proj", notes, source="mcp.json")])
    async with app.run_test(size=SIZE) as pilot:
        await trust_question(pilot, McpTrustScreen)
        await pilot.press("n")
        await wait_until(pilot, lambda: "not started this session" in screen_text(app))
        await send(pilot, "/mcp")
        await wait_until(pilot, lambda: "untrusted" in screen_text(app))
        assert pids(notes) == [] and not is_trusted(workspace, app.runtime.mcp.servers[0].spec)  # type: ignore[union-attr]


async def test_a_failing_server_is_said_and_listed_with_its_stderr(workspace: Path, notes: Path) -> None:
    spec = stdio_spec("h", notes, hang=True, startup_timeout=0.5)
    app = make_app(workspace, [], mcp_servers=[spec])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "MCP server h failed" in screen_text(app))
        assert mcp_status(app) == "mcp 0/1"
        await send(pilot, "/mcp")
        await wait_until(pilot, lambda: "stderr: hanging on purpose" in screen_text(app))


async def test_keys_typed_as_the_question_appears_do_not_answer_it(
    workspace: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from todo_agent.tui.screens import trust

    monkeypatch.setattr(trust, "TYPING_GRACE", 600.0)  # "right after it appeared", however slow the machine
    app = make_app(workspace, [], mcp_servers=[stdio_spec("proj", notes, source="mcp.json")])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, McpTrustScreen) and app.screen.shown_at < 1e18)
        await pilot.press("y")  # right away: part of something typed for the prompt
        await pilot.pause()
        assert isinstance(app.screen, McpTrustScreen) and pids(notes) == []
        await trust_question(pilot, McpTrustScreen)
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, McpTrustScreen))
        await send(pilot, "/mcp trust")
        await trust_question(pilot, McpTrustScreen)  # asked again
        await pilot.press("y")
        await wait_until(pilot, lambda: mcp_status(app) == "mcp 1/1")
        await send(pilot, "/mcp trust")
        await wait_until(pilot, lambda: "no project MCP server is waiting" in screen_text(app))
