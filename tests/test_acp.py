"""`todo-agent --acp` over a real subprocess and stdio: with the SDK's own client side
(`acp.spawn_agent_process`), and with a plain JSON-RPC client reading stdout line by line.

The model is a script (`script:`) or the fake OpenAI server; the commands, files, hooks
and the process groups are real."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    McpServerStdio,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ResourceContentBlock,
    ToolCallUpdate,
    WriteTextFileResponse,
)
from fake_openai import run_in_thread

TIMEOUT = 60
MCP_TEST_SERVER = Path(__file__).parent / "mcp_servers" / "test_server.py"


def tc(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def agent_command() -> list[str]:
    script = Path(sys.executable).with_name("todo-agent")
    return [str(script)] if script.exists() else [sys.executable, "-m", "todo_agent.frontends.cli"]


class Client:
    """An ACP client that records every update and answers permissions from `answers`
    (option kinds, in order; `cancel` answers cancelled); none left: the first allow."""

    def __init__(self, answers: list[str] | None = None, buffers: dict[str, str] | None = None) -> None:
        self.updates: list[dict[str, Any]] = []
        self.asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.answers = list(answers or [])
        self.buffers = buffers
        self.written: dict[str, str] = {}
        self.changed = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        pass

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append((tool_call, options))
        kind = self.answers.pop(0) if self.answers else "allow"
        if kind == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        chosen = next(o for o in options if o.kind.startswith(kind))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))
        self.changed.set()

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> ReadTextFileResponse:
        assert self.buffers is not None and path in self.buffers, path
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.written[path] = content
        return WriteTextFileResponse()

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["sessionUpdate"] == kind]

    async def wait_for(self, test: Any) -> dict[str, Any]:
        async with asyncio.timeout(TIMEOUT):
            while True:
                found = next((u for u in self.updates if test(u)), None)
                if found is not None:
                    return found
                self.changed.clear()
                await self.changed.wait()


@asynccontextmanager
async def acp_agent(workspace: Path, client: Client, *flags: str, fs: bool = False) -> AsyncIterator[tuple[Any, str]]:
    """`todo-agent --acp FLAGS`, initialized, with one new session in `workspace`."""
    command, *args = agent_command()
    async with spawn_agent_process(
        client, command, *args, "--acp", *flags, env=dict(os.environ), cwd=workspace, transport_kwargs={"stderr": None}
    ) as (conn, _process):
        capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs))
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities)
        assert init.protocol_version == 1 and init.agent_info.name == "todo-agent"
        assert init.agent_capabilities.load_session
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        yield conn, session.session_id


def script(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(data))
    return f"script:{path}"


async def test_a_prompt_plans_edits_with_a_diff_runs_a_command_live_and_answers(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "hello.py").write_text('print("hi")\n')
    (workspace / ".claude" / "commands").mkdir(parents=True)
    (workspace / ".claude" / "commands" / "review.md").write_text("---\ndescription: Review the diff\n---\nReview it\n")
    model = script(
        tmp_path,
        {
            "steps": [
                {"tool_calls": [tc("TaskCreate", subject="Edit hello"), tc("TaskCreate", subject="Run it")]},
                {"tool_calls": [tc("TaskUpdate", taskId="1", status="in_progress")]},
                {"tool_calls": [tc("Edit", file_path="hello.py", old_string="hi", new_string="hello")]},
                {"tool_calls": [tc("TaskUpdate", taskId="1", status="completed")]},
                {"tool_calls": [tc("TaskUpdate", taskId="2", status="in_progress")]},
                {"tool_calls": [tc("Bash", command="python3 hello.py; sleep 0.5; echo second", description="run it")]},
                {"tool_calls": [tc("TaskUpdate", taskId="2", status="completed")]},
                {"text": "hello.py now says hello."},
            ]
        },
    )
    client = Client()
    async with acp_agent(workspace, client, "--model", model) as (conn, session_id):
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("make it say hello")])
    assert answer.stop_reason == "end_turn"
    assert (workspace / "hello.py").read_text() == 'print("hello")\n'

    commands = client.of_kind("available_commands_update")[0]["availableCommands"]
    assert {"compact", "context", "todos", "goal", "review"} <= {c["name"] for c in commands}

    plans = [[(e["content"], e["status"]) for e in u["entries"]] for u in client.of_kind("plan")]
    assert plans[0] == [("#1 Edit hello", "pending"), ("#2 Run it", "pending")]
    assert [("#1 Edit hello", "in_progress"), ("#2 Run it", "pending")] in plans
    assert [("#1 Edit hello", "completed"), ("#2 Run it", "in_progress")] in plans
    assert plans[-1] == [("#1 Edit hello", "completed"), ("#2 Run it", "completed")]
    meta = client.of_kind("plan")[0]["entries"][0]["_meta"]["todo_agent"]
    assert meta["id"] == "1" and meta["blockedBy"] == [] and meta["verified"] is False and "owner" in meta

    (edit_call, edit_options), (bash_call, _) = client.asked
    assert edit_call.kind == "edit" and edit_call.title == "Edit(hello.py)"
    diff = next(c for c in edit_call.content or [] if c.type == "diff")
    assert (diff.path, diff.old_text, diff.new_text) == (str(workspace / "hello.py"), "hi", "hello")
    kinds = [o.kind for o in edit_options]
    assert kinds == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert "Edit(hello.py)" in edit_options[1].name  # the rule "always" adds, named
    assert bash_call.kind == "execute" and "python3 hello.py" in bash_call.content[0].content.text

    bash_id = next(u["toolCallId"] for u in client.of_kind("tool_call") if u["kind"] == "execute")
    progress = [u for u in client.of_kind("tool_call_update") if u["toolCallId"] == bash_id]
    live = [u for u in progress if u["status"] == "in_progress"]
    assert live and "hello" in live[0]["content"][-1]["content"]["text"]
    assert "second" not in live[0]["content"][-1]["content"]["text"]  # shown before the command ended
    assert progress[-1]["status"] == "completed" and "second" in progress[-1]["content"][-1]["content"]["text"]

    text = "".join(u["content"]["text"] for u in client.of_kind("agent_message_chunk"))
    assert "hello.py now says hello." in text
    usage = client.of_kind("usage_update")
    assert usage and usage[-1]["used"] > 0 and usage[-1]["size"] > 0


async def test_a_rejected_edit_is_not_made_and_reject_always_stops_asking(workspace: Path, tmp_path: Path) -> None:
    (workspace / "notes.txt").write_text("v1\n")
    edit = tc("Edit", file_path="notes.txt", old_string="v1", new_string="v2")
    model = script(
        tmp_path,
        {"steps": [{"tool_calls": [edit]}, {"tool_calls": [edit]}, {"tool_calls": [edit]}, {"text": "left it"}]},
    )
    client = Client(["reject_once", "reject_always"])
    async with acp_agent(workspace, client, "--model", model) as (conn, session_id):
        first = await conn.prompt(session_id=session_id, prompt=[text_block("edit")])
        second = await conn.prompt(session_id=session_id, prompt=[text_block("edit again")])
        third = await conn.prompt(session_id=session_id, prompt=[text_block("and again")])
    assert (first.stop_reason, second.stop_reason, third.stop_reason) == ("end_turn", "end_turn", "end_turn")
    assert len(client.asked) == 2  # the third edit was denied by the rule "reject always" added, unasked
    assert (workspace / "notes.txt").read_text() == "v1\n"
    failed = [u for u in client.of_kind("tool_call_update") if u["status"] == "failed"]
    assert len(failed) == 3


async def test_modes_switch_and_bypass_is_offered_only_when_started_in_it(workspace: Path, tmp_path: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    model = script(tmp_path, {"steps": [{"tool_calls": [tc("Write", file_path="a.txt", content="b\n")]}, "done"]})
    client = Client()
    command, *args = agent_command()
    async with spawn_agent_process(
        client, command, *args, "--acp", "--model", model, env=dict(os.environ), cwd=workspace
    ) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes is not None
        assert [m.id for m in session.modes.available_modes] == ["default", "acceptEdits", "plan"]
        with pytest.raises(RequestError, match=r"(?i)invalid") as refused:
            await conn.set_session_mode(session_id=session.session_id, mode_id="bypassPermissions")
        assert "not a mode" in json.dumps(refused.value.data)
        await conn.set_session_mode(session_id=session.session_id, mode_id="acceptEdits")
        await conn.prompt(session_id=session.session_id, prompt=[text_block("write")])
    assert client.of_kind("current_mode_update")[-1]["currentModeId"] == "acceptEdits"
    assert client.asked == [] and (workspace / "a.txt").read_text() == "b\n"  # acceptEdits: unasked

    bypass = Client()
    async with acp_agent(workspace, bypass, "--model", model, "--permission-mode", "bypassPermissions") as (conn, _):
        pass
    assert bypass.asked == []


async def test_cancel_stops_the_running_command_and_its_process_group(workspace: Path, tmp_path: Path) -> None:
    command = 'echo $$ > shell.pid; sleep 120 & echo $! > child.pid; echo RUN""NING; wait'
    model = script(tmp_path, {"steps": [{"tool_calls": [tc("Bash", command=command)]}, "never reached"]})
    client = Client()
    async with acp_agent(workspace, client, "--model", model) as (conn, session_id):
        running = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("run")]))
        await client.wait_for(lambda u: u.get("status") == "in_progress" and "RUNNING" in json.dumps(u))
        await conn.cancel(session_id=session_id)
        async with asyncio.timeout(TIMEOUT):
            answer = await running
    assert answer.stop_reason == "cancelled"
    shell, child = int((workspace / "shell.pid").read_text()), int((workspace / "child.pid").read_text())
    assert _gone(child) and _gone(shell)
    assert _group_gone(shell)  # the command's whole group, reaped


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether `pid` is gone (or a zombie) within `within` seconds: a killed process takes a moment."""
    deadline = time.monotonic() + within
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _group_gone(pgid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(")")[-1].split()[0] == "Z")


async def test_load_replays_a_saved_session(workspace: Path, tmp_path: Path) -> None:
    model = script(
        tmp_path, {"steps": [{"tool_calls": [tc("TaskCreate", subject="Remember me")]}, {"text": "planned it"}]}
    )
    first = Client()
    async with acp_agent(workspace, first, "--model", model) as (conn, session_id):
        await conn.prompt(session_id=session_id, prompt=[text_block("plan something")])
    again = Client()
    command, *args = agent_command()
    async with spawn_agent_process(
        again, command, *args, "--acp", "--model", model, env=dict(os.environ), cwd=workspace
    ) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        loaded = await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        assert loaded is not None and loaded.modes is not None
        with pytest.raises(Exception, match=r"(?i)not found"):
            await conn.load_session(cwd=str(workspace), session_id="no-such-session", mcp_servers=[])
    kinds = [u["sessionUpdate"] for u in again.updates]
    assert kinds[:2] == ["user_message_chunk", "tool_call"]
    assert again.updates[0]["content"]["text"] == "plan something"
    assert again.of_kind("tool_call")[0]["title"] == "TaskCreate(Remember me)"
    assert any("planned it" in u["content"]["text"] for u in again.of_kind("agent_message_chunk"))
    assert [e["content"] for e in again.of_kind("plan")[-1]["entries"]] == ["#1 Remember me"]


async def test_a_client_task_edit_reaches_the_next_request_once(workspace: Path) -> None:
    responses = [
        {"tool_calls": [tc("TaskCreate", subject="First"), tc("TaskCreate", subject="Second")]},
        {"text": "planned"},
        {"text": "second answer"},
        {"text": "third answer"},
    ]
    client = Client()
    with run_in_thread(responses) as server:
        async with acp_agent(workspace, client, "--base-url", server.base_url, "--model", "m") as (conn, session_id):
            await conn.prompt(session_id=session_id, prompt=[text_block("plan")])
            done = await conn.ext_method(
                "todo_agent/task_update",
                {"sessionId": session_id, "action": "set_status", "taskId": "1", "status": "completed"},
            )
            added = await conn.ext_method(
                "todo_agent/task_update",
                {"sessionId": session_id, "action": "add", "subject": "Third, from the editor"},
            )
            with pytest.raises(RequestError, match=r"(?i)invalid"):
                await conn.ext_method("todo_agent/task_update", {"sessionId": session_id, "action": "set_status",
                                                                 "taskId": "99", "status": "completed"})  # fmt: skip
            await conn.prompt(session_id=session_id, prompt=[text_block("go on")])
            await conn.prompt(session_id=session_id, prompt=[text_block("and on")])
        requests = list(server.requests)
    assert done["task"]["status"] == "completed" and added["task"]["subject"] == "Third, from the editor"
    plan = client.of_kind("plan")[-1]["entries"]
    assert [(e["content"], e["status"]) for e in plan] == [
        ("#1 First", "completed"), ("#2 Second", "pending"), ("#3 Third, from the editor", "pending")
    ]  # fmt: skip

    def told(body: dict[str, Any]) -> int:
        return sum("The user edited the task list:" in json.dumps(m) for m in body["messages"])

    assert [told(r) for r in requests] == [0, 0, 1, 1]  # once, and kept in the history after
    last_user = [m for m in requests[2]["messages"] if m["role"] == "user"]
    assert any("The user edited the task list:" in json.dumps(m) for m in last_user)


async def test_a_sub_agent_shows_live_as_its_agent_calls_content(workspace: Path, tmp_path: Path) -> None:
    model = script(
        tmp_path,
        {
            "steps": [
                {"tool_calls": [tc("TaskCreate", subject="Look around")]},
                {"tool_calls": [tc("Agent", description="Look", prompt="look around", task_id="1")]},
                {"text": "it looked"},
            ],
            "agents": [
                {
                    "match": "look around",
                    "steps": [
                        {"tool_calls": [tc("Glob", pattern="*")]},
                        {"tool_calls": [tc("Write", file_path="found.txt", content="found\n")]},
                        {"tool_calls": [tc("TaskUpdate", taskId="1", status="completed")]},
                        {"text": "looked"},
                    ],
                }
            ],
        },
    )
    client = Client()
    async with acp_agent(workspace, client, "--model", model) as (conn, session_id):
        await conn.prompt(session_id=session_id, prompt=[text_block("delegate")])
    agent_call = next(u for u in client.of_kind("tool_call") if u["title"].startswith("Agent("))
    progress = [u for u in client.of_kind("tool_call_update") if u["toolCallId"] == agent_call["toolCallId"]]
    live = [u for u in progress if u["status"] == "in_progress"]
    assert live[0]["_meta"]["todo_agent"]["taskId"] == "1"
    assert live[0]["_meta"]["todo_agent"]["agentId"] == "general-1"
    shown = "\n".join(u["content"][0]["content"]["text"] for u in live)
    assert "general-1 on #1 Look around: started" in shown and "⏺ Glob(*)" in shown
    assert progress[-1]["status"] == "completed" and "general-1 completed" in json.dumps(progress[-1])
    plans = client.of_kind("plan")
    assert any(e["status"] == "in_progress" and e["_meta"]["todo_agent"]["owner"] == "general-1"
               for u in plans for e in u["entries"])  # fmt: skip
    assert plans[-1]["entries"][0]["status"] == "completed"
    ((asked, _),) = client.asked  # the sub-agent's Write, asked through the editor with its name and task
    assert asked.title == "general-1 · #1 Look · Write(found.txt)"
    assert (workspace / "found.txt").read_text() == "found\n"


async def test_reads_and_edits_go_through_the_editors_buffers(workspace: Path, tmp_path: Path) -> None:
    path = workspace / "app.py"
    path.write_text("x = 1\n")  # the disk; the editor holds an unsaved change
    model = script(
        tmp_path,
        {
            "steps": [
                {"tool_calls": [tc("Read", file_path="app.py")]},
                {"tool_calls": [tc("Edit", file_path="app.py", old_string="x = 2", new_string="x = 3")]},
                {"text": "edited"},
            ]
        },
    )
    client = Client(buffers={str(path): "x = 2  # unsaved\n"})
    async with acp_agent(workspace, client, "--model", model, "--permission-mode", "acceptEdits", fs=True) as (
        conn,
        session_id,
    ):
        await conn.prompt(session_id=session_id, prompt=[text_block("bump x")])
    read = next(u for u in client.of_kind("tool_call_update") if "unsaved" in json.dumps(u))
    assert read["status"] == "completed"
    assert client.written == {str(path): "x = 3  # unsaved\n"}
    assert path.read_text() == "x = 1\n"  # the disk is the editor's to save


async def test_resource_links_are_attached_and_embedded_text_goes_with_the_prompt(workspace: Path) -> None:
    (workspace / "notes.md").write_text("the notes on disk\n")
    client = Client()
    with run_in_thread([{"text": "read them"}]) as server:
        async with acp_agent(workspace, client, "--base-url", server.base_url, "--model", "m") as (conn, session_id):
            link = ResourceContentBlock(type="resource_link", uri=(workspace / "notes.md").as_uri(), name="notes.md")
            embedded = {"type": "resource", "resource": {"uri": "file:///elsewhere/buf.py", "text": "unsaved = True"}}
            await conn.prompt(session_id=session_id, prompt=[text_block("look at"), link, embedded])
        body = json.dumps(server.requests[0]["messages"])
    assert "the notes on disk" in body  # the link became an @ attachment
    assert "unsaved = True" in body and "as open in the editor" in body


def test_nothing_but_json_rpc_on_stdout_even_when_hooks_and_commands_print(workspace: Path, tmp_path: Path) -> None:
    """A plain JSON-RPC client: every stdout line is a JSON-RPC 2.0 message. A project hook
    (accepted through the trust question) writes to the agent's own fd 1, a command prints,
    an MCP server (the editor's) runs beside them."""
    settings = workspace / ".todo-agent" / "settings.toml"
    settings.parent.mkdir()
    settings.write_text(
        '[[hooks.PreToolUse]]\ncommand = "echo HOOK-STDOUT; echo LEAKED > /proc/$PPID/fd/1; echo HOOK-ERR >&2"\n'
    )
    model = script(tmp_path, {"steps": [{"tool_calls": [tc("Bash", command="echo FROM-BASH; echo E >&2")]}, "ok"]})
    process = subprocess.Popen(
        [*agent_command(), "--acp", "--model", model],
        cwd=workspace,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    lines: list[bytes] = []
    asked: list[dict[str, Any]] = []

    def send(message: dict[str, Any]) -> None:
        process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        process.stdin.flush()

    def until(request_id: int) -> dict[str, Any]:
        while True:
            line = process.stdout.readline()
            assert line, "the agent closed stdout"
            lines.append(line)
            message = json.loads(line)
            if message.get("method") == "session/request_permission":
                asked.append(message["params"])
                allow = next(o for o in message["params"]["options"] if o["kind"].startswith("allow"))
                send(
                    {"id": message["id"], "result": {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}}
                )
            if message.get("id") == request_id and "method" not in message:
                return message

    try:
        send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
        assert until(1)["result"]["protocolVersion"] == 1
        server = {"name": "t", "command": sys.executable, "args": [str(MCP_TEST_SERVER), "stdio"], "env": []}
        send({"id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": [server]}})
        session_id = until(2)["result"]["sessionId"]
        prompt = [{"type": "text", "text": "go"}]
        send({"id": 3, "method": "session/prompt", "params": {"sessionId": session_id, "prompt": prompt}})
        assert until(3)["result"]["stopReason"] == "end_turn"
    finally:
        process.stdin.close()
        stderr = process.stderr.read().decode() if process.stderr else ""
        rest = process.stdout.read()
        process.wait(timeout=TIMEOUT)
    lines += rest.splitlines(keepends=True)
    assert [a["toolCall"]["title"] for a in asked] == ["Run this project's hooks?", "Bash(echo FROM-BASH; echo E >&2)"]
    assert "LEAKED" in asked[0]["toolCall"]["content"][0]["content"]["text"]  # every byte of the hook shown
    for line in lines:
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0", line
    output = b"".join(lines).decode()
    assert "FROM-BASH" in output  # the command's output, inside a JSON-RPC update
    assert "LEAKED" in stderr  # the hook's write to fd 1 went to stderr
    assert process.returncode == 0


async def test_a_cancelled_question_is_a_no_and_leaves_the_project_untrusted(workspace: Path, tmp_path: Path) -> None:
    settings = workspace / ".todo-agent" / "settings.toml"
    settings.parent.mkdir()
    settings.write_text('[[hooks.PreToolUse]]\ncommand = "touch hook-ran"\n')
    (workspace / "a.txt").write_text("a\n")
    model = script(tmp_path, {"steps": [{"tool_calls": [tc("Write", file_path="a.txt", content="b\n")]}, "left it"]})
    client = Client(["cancel", "cancel"])
    async with acp_agent(workspace, client, "--model", model) as (conn, session_id):
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("write")])
    assert answer.stop_reason == "end_turn"
    assert [call.title for call, _ in client.asked] == ["Run this project's hooks?", "Write(a.txt)"]
    assert (workspace / "a.txt").read_text() == "a\n" and not (workspace / "hook-ran").exists()
    again = Client()  # a new process asks again: nothing was remembered
    async with acp_agent(workspace, again, "--model", model) as (conn, session_id):
        await conn.prompt(session_id=session_id, prompt=[text_block("write")])
    assert again.asked[0][0].title == "Run this project's hooks?" and (workspace / "hook-ran").exists()


async def test_one_process_serves_sessions_in_two_folders(workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    model = script(tmp_path, {"steps": [{"tool_calls": [tc("TaskCreate", subject="Here")]}, "planned"]})
    client = Client()
    async with acp_agent(workspace, client, "--model", model) as (conn, first):
        second = (await conn.new_session(cwd=str(other), mcp_servers=[])).session_id
        await conn.prompt(session_id=first, prompt=[text_block("plan")])
        await conn.prompt(session_id=second, prompt=[text_block("/todos")])
        with pytest.raises(RequestError):
            await conn.new_session(cwd="relative/path", mcp_servers=[])
    assert first != second
    todos = [u["content"]["text"] for u in client.of_kind("agent_message_chunk") if "No tasks" in u["content"]["text"]]
    assert todos  # the second folder's session has its own, empty, list
    assert [e["content"] for e in client.of_kind("plan")[-1]["entries"]] == ["#1 Here"]


async def test_the_editors_mcp_servers_join_the_session(workspace: Path) -> None:
    stdio = McpServerStdio(name="ed", command=sys.executable, args=[str(MCP_TEST_SERVER), "stdio"], env=[])
    client = Client()
    with run_in_thread([{"text": "I see the tools"}]) as server:
        command, *args = agent_command()
        async with spawn_agent_process(
            client, command, *args, "--acp", "--base-url", server.base_url, "--model", "m", env=dict(os.environ)
        ) as (conn, _):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[stdio])
            await conn.prompt(session_id=session.session_id, prompt=[text_block("what can you do?")])
        tools = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert "mcp__ed__echo" in tools
    assert client.asked == []  # the person's own servers: no trust question


async def test_a_session_the_client_was_given_loads_before_anything_was_said(workspace: Path, tmp_path: Path) -> None:
    model = script(tmp_path, {"steps": ["hello again"]})
    async with acp_agent(workspace, Client(), "--model", model) as (_conn, session_id):
        pass
    client = Client()
    command, *args = agent_command()
    async with spawn_agent_process(client, command, *args, "--acp", "--model", model, env=dict(os.environ)) as (
        conn,
        _,
    ):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("hi")])
    assert answer.stop_reason == "end_turn"
    assert "hello again" in json.dumps(client.of_kind("agent_message_chunk"))


async def test_sessions_are_listed_newest_first_with_their_titles(workspace: Path, tmp_path: Path) -> None:
    model = script(tmp_path, {"steps": ["one", "two"]})
    async with acp_agent(workspace, Client(), "--model", model) as (conn, first):
        await conn.prompt(session_id=first, prompt=[text_block("the first question")])
        second = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=second, prompt=[text_block("the second question")])
        listed = await conn.list_sessions(cwd=str(workspace))
    titles = {s.session_id: s.title for s in listed.sessions}
    assert titles[first] == "the first question" and titles[second] == "the second question"
    assert listed.sessions[0].session_id == second and listed.next_cursor is None


async def test_a_project_commands_shell_lines_are_asked_about_through_the_editor(workspace: Path) -> None:
    commands = workspace / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "status.md").write_text("What changed?\n!`echo BRANCH-IS-main`\n")
    client = Client(["allow_always"])
    with run_in_thread([{"text": "main it is"}, {"text": "still main"}]) as server:
        async with acp_agent(workspace, client, "--base-url", server.base_url, "--model", "m") as (conn, session_id):
            await conn.prompt(session_id=session_id, prompt=[text_block("/status")])
            await conn.prompt(session_id=session_id, prompt=[text_block("/status")])
        sent = [json.dumps(r["messages"][-1]) for r in server.requests]
    ((asked, options),) = client.asked  # this version of the file is remembered: asked once
    assert asked.title.startswith("/status(.claude/commands/status.md runs 1 shell command")
    assert "echo BRANCH-IS-main" in asked.content[0].content.text
    assert [o.name for o in options][:2] == ["Allow once", "Allow this version of .claude/commands/status.md"]
    assert all("BRANCH-IS-main" in body for body in sent)


async def test_a_cancel_while_a_trust_question_is_open_ends_the_prompt_before_the_model(workspace: Path) -> None:
    settings = workspace / ".todo-agent" / "settings.toml"
    settings.parent.mkdir()
    settings.write_text('[[hooks.PreToolUse]]\ncommand = "true"\n')
    connection: list[Any] = []

    class Cancelling(Client):
        async def request_permission(
            self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
        ) -> RequestPermissionResponse:
            await connection[0].cancel(session_id=session_id)  # the person pressed stop; the question goes
            return await super().request_permission(session_id, tool_call, options)

    client = Cancelling(["cancel"])
    with run_in_thread([], check_unused=False) as server:
        async with acp_agent(workspace, client, "--base-url", server.base_url, "--model", "m") as (conn, session_id):
            connection.append(conn)
            answer = await conn.prompt(session_id=session_id, prompt=[text_block("go")])
        assert server.requests == []
    assert answer.stop_reason == "cancelled"


async def test_the_demo_runs_in_an_editor_with_both_sub_agents_and_the_plan_done(workspace: Path) -> None:
    prompt = json.loads((Path(__file__).parents[1] / "examples" / "demo_script.json").read_text())["prompt"]
    client = Client()
    async with acp_agent(workspace, client, "--demo") as (conn, session_id):
        answer = await conn.prompt(session_id=session_id, prompt=[text_block(prompt)])
    assert answer.stop_reason == "end_turn"
    said = "".join(u["content"]["text"] for u in client.of_kind("agent_message_chunk"))
    assert "own copy of the demo project" in said and "Pagination is in" in said
    assert {e["status"] for e in client.of_kind("plan")[-1]["entries"]} == {"completed"}
    agents = [u for u in client.of_kind("tool_call") if u["title"].startswith("Agent(")]
    assert len(agents) == 2 and os.listdir(workspace) == []  # the client's folder untouched
    plans = [json.dumps(u["entries"]) for u in client.of_kind("plan")]
    assert len(plans) == len(set(plans))  # each plan update says something new


async def test_a_model_that_cannot_start_is_said_and_the_session_stays_loadable(
    workspace: Path, tmp_path: Path
) -> None:
    model = script(tmp_path, {"steps": ["fine"]})
    async with acp_agent(workspace, Client(), "--model", model) as (conn, session_id):
        await conn.prompt(session_id=session_id, prompt=[text_block("hi")])
    broken = tmp_path / "broken.json"
    broken.write_text("{ not json")
    command, *args = agent_command()
    async with spawn_agent_process(
        Client(), command, *args, "--acp", "--model", f"script:{broken}", env=dict(os.environ)
    ) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        for _ in range(2):  # the second try finds the session free, not held by the first
            with pytest.raises(RequestError) as failed:
                await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
            assert "broken.json" in json.dumps(failed.value.data)


async def test_the_model_and_the_effort_are_pickers_the_editor_can_set(workspace: Path) -> None:
    client = Client()
    with run_in_thread([{"text": "from m"}, {"text": "from big"}], models=["m", "big"]) as server:
        async with acp_agent(workspace, client, "--base-url", server.base_url, "--model", "m") as (conn, session_id):
            await conn.prompt(session_id=session_id, prompt=[text_block("one")])
            changed = await conn.set_config_option(config_id="model", session_id=session_id, value="big")
            await conn.set_config_option(config_id="reasoning_effort", session_id=session_id, value="high")
            with pytest.raises(RequestError):
                await conn.set_config_option(config_id="reasoning_effort", session_id=session_id, value="max")
            await conn.prompt(session_id=session_id, prompt=[text_block("two")])
        bodies = list(server.requests)
    model = next(o for o in changed.config_options if o.id == "model")
    assert model.current_value == "big" and [o.value for o in model.options] == ["big", "m"]
    assert [b["model"] for b in bodies] == ["m", "big"]
    assert bodies[1].get("reasoning_effort") == "high" and "reasoning_effort" not in bodies[0]
    updates = client.of_kind("config_option_update")
    assert [next(o["currentValue"] for o in u["configOptions"] if o["id"] == "reasoning_effort") for u in updates] == [
        "default", "high"
    ]  # fmt: skip
