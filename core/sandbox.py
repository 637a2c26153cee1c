"""The OS sandbox around the model's commands: bubblewrap (`bwrap`), Linux only.

The permission gate reads each command and asks; it cannot read what `python3 -c "…"`, a
build script or a test does. With the sandbox on, every command the model runs (Bash, a
task's check, a custom command's `` !`cmd` `` lines) runs inside `bwrap`:

- the whole file system read-only, the workspace writable (`workspace-write`) or not
  (`read-only`), a private `/tmp` (the workspace is bound after it, so a workspace under
  `/tmp` stays visible), places named in `[sandbox] writable` writable too;
- inside the workspace, `PROTECTED` stays read-only where it exists: `.git/hooks` and
  `.git/config` (the rest of `.git` stays writable, so `git add`, `commit`, `checkout`
  work), `.todo-agent/`, `.claude/`, `.mcp.json`;
- todo-agent's own data (sessions, trust records: `places.data_root()`) hidden behind an
  empty folder, as are the literal paths of `Read(…)` deny rules (a deny glob cannot be
  hidden by a mount);
- new user, PID, IPC, UTS, cgroup and network namespaces (no network at all, the host's
  loopback included, unless `network = true`), `--die-with-parent`, `--new-session` (no
  terminal injection through TIOCSTI); bubblewrap sets no-new-privileges itself.

The command still runs in its own process group under todo-agent's control (`tools/bash.py`
kills everything on `escape` or its limit; with the PID namespace, everything it started
dies with it). A protected path that does not exist yet cannot be mounted read-only without
creating it in the person's workspace, so it is left as it is: the gate still refuses the
model's Edit and Write there, and a project file or server created that way still waits
for the person's trust.

Modes: `off` (the default in this release), `workspace-write`, `read-only`, and `auto`
(`workspace-write` where bubblewrap runs, `off` elsewhere). Where `bwrap` is missing or
cannot make namespaces, `auto` is off with one notice; an explicit mode refuses to run
commands rather than run them unconfined. Who may widen it: only the user file, `--sandbox`
and `/sandbox` (`core/settings.py` drops what a project file tries).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from .netproxy import RELAY_PORT, Connect, DomainProxy

SandboxMode = Literal["off", "workspace-write", "read-only", "auto"]
MODES: tuple[SandboxMode, ...] = ("off", "workspace-write", "read-only", "auto")
PROTECTED = (".git/hooks", ".git/config", ".todo-agent", ".claude", ".mcp.json")
"""Workspace places read-only inside the sandbox, relative to the workspace."""
INSTALL = "install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)"
PROXY_INSIDE = "/tmp/.todo-agent-proxy.sock"
"""Where the domain proxy's socket is inside the sandbox (its private /tmp)."""
RELAY_INSIDE = "/tmp/.todo-agent-relay.py"
"""Where `netrelay.py` is inside: todo-agent itself may be installed under /tmp, which is private there."""
MARK = "⛶"
"""How the tool block and the status line say a command ran sandboxed."""


@dataclass(frozen=True)
class SandboxSettings:
    """The `[sandbox]` table."""

    mode: SandboxMode = "off"
    network: bool | tuple[str, ...] = False
    """True: all of it; a tuple of domains: those only, through the proxy (`netproxy.py`)."""
    writable: tuple[str, ...] = ()
    auto_allow: bool = True
    """A command the rules would ask about runs without asking while it runs sandboxed."""
    allow_unsandboxed: bool = False
    """With an allow rule naming it, a command asked to run outside (`sandbox: false`) runs unasked."""


@dataclass(frozen=True)
class Probe:
    """Whether bubblewrap runs here: its path and version, or why not."""

    path: str | None
    version: str = ""
    problem: str = ""

    @property
    def works(self) -> bool:
        return self.path is not None and not self.problem


@functools.cache
def probe() -> Probe:
    """Find `bwrap` (`$TODO_AGENT_BWRAP`, else on `PATH`) and try it once (a sandbox with
    every namespace, running `true`)."""
    named = os.environ.get("TODO_AGENT_BWRAP")
    path = _bwrap_path()
    if path is None:
        where = f" at {named}" if named else ""
        return Probe(None, problem=f"bubblewrap (bwrap) is not installed{where}: {INSTALL}")
    try:
        version = subprocess.run(
            [path, "--version"], check=False, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        trial = subprocess.run(
            [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--new-session", "true"],
            check=False,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Probe(path, problem=f"bubblewrap cannot run here ({exc})")
    if trial.returncode != 0:
        why = (trial.stderr.strip().splitlines() or [f"exit {trial.returncode}"])[-1][:200]
        return Probe(path, version, f"bubblewrap cannot create its namespaces here ({why})")
    return Probe(path, version)


def _bwrap_path() -> str | None:
    return shutil.which(os.environ.get("TODO_AGENT_BWRAP") or "bwrap")


def installed() -> bool:
    """Whether a `bwrap` is there to try (`$TODO_AGENT_BWRAP`, else on `PATH`), without running it."""
    return _bwrap_path() is not None


class SandboxUnavailable(Exception):
    """A sandbox mode was asked for explicitly and bubblewrap cannot run: commands are refused."""


@dataclass
class Sandbox:
    """The session's sandbox: its settings, the mode `/sandbox` set, and how to wrap a command."""

    workspace: Path
    settings: SandboxSettings = field(default_factory=SandboxSettings)
    hidden: tuple[Path, ...] = ()
    """Places shown empty inside (todo-agent's data, literal `Read(…)` deny paths)."""
    found: Probe | None = None
    """Bubblewrap as probed (None: probed when first needed)."""
    proxy: DomainProxy | None = None
    """The domain proxy, once a command needed it (`network` names domains)."""
    connect: Connect | None = None
    """How the proxy reaches an allowed host (None: the network; a test's own server)."""
    trusted_code: Callable[[], Iterable[Path]] = lambda: ()
    """Workspace files an accepted project server or hook runs (the gate's `protected_code`):
    read-only inside too, or a sandboxed command could rewrite what runs as trusted."""

    @property
    def bwrap(self) -> Probe:
        if self.found is None:
            self.found = probe()
        return self.found

    @property
    def mode(self) -> SandboxMode:
        return self.settings.mode

    @property
    def active(self) -> Literal["off", "workspace-write", "read-only"]:
        """The mode in force: `auto` resolved by whether bubblewrap runs here."""
        mode = self.settings.mode
        if mode == "auto":
            return "workspace-write" if self.bwrap.works else "off"
        return mode

    @property
    def domains(self) -> tuple[str, ...]:
        network = self.settings.network
        return network if isinstance(network, tuple) else ()

    async def prepare(self) -> None:
        """Before a command: start the domain proxy when the network is a list of domains."""
        if self.active != "off" and self.domains:
            if self.proxy is None or self.proxy.domains != self.domains:
                self.close()
                self.proxy = DomainProxy(self.domains, self.connect)
            await self.proxy.start()

    def close(self) -> None:
        if self.proxy is not None:
            self.proxy.close()
            self.proxy = None

    def set_mode(self, mode: SandboxMode) -> None:
        self.settings = replace(self.settings, mode=mode)

    @property
    def allows_unasked(self) -> bool:
        """Whether a command the rules would ask about runs unasked (on, and `auto_allow`)."""
        return self.active != "off" and self.settings.auto_allow

    def start_notice(self) -> str | None:
        """One line at start: the sandbox is available but off, or `auto` could not turn it on.
        Off, bubblewrap is only looked for on PATH (no trial run: the launch stays quick);
        `/sandbox on` tries it and says if it cannot run."""
        if self.settings.mode == "off":
            available = installed() if self.found is None else self.found.works
            if not available:
                return None
            return (
                "bubblewrap is available: /sandbox on runs the model's commands in a sandbox "
                "(writes held to the workspace, no network)"
            )
        if self.settings.mode == "auto" and not self.bwrap.works:
            return f"sandbox off: {self.bwrap.problem}"
        if self.settings.mode in ("workspace-write", "read-only") and not self.bwrap.works:
            return f"sandbox {self.settings.mode} cannot run, so the model's commands are refused: {self.bwrap.problem}"
        return None

    def describe(self) -> list[str]:
        """What `/sandbox` shows."""
        active = self.active
        lines = [f"sandbox: {active}" + (f" (mode {self.mode})" if self.mode != active else "")]
        if active != "off":
            lines.append(f"writable: {', '.join(self.writable_places()) or 'nothing'} (and a private /tmp)")
            lines.append(f"read-only inside the workspace: {', '.join(PROTECTED)}")
            lines.append(f"network: {_network_line(self.settings.network)}")
            asks = "run without asking (auto_allow)" if self.settings.auto_allow else "ask as the rules say"
            lines.append(f"commands the rules would ask about: {asks}; deny rules and plan mode still apply")
        lines.append(f"bubblewrap: {self.bwrap.version or self.bwrap.path or 'not found'}")
        if self.bwrap.problem:
            lines.append(self.bwrap.problem)
        return lines

    def writable_places(self) -> list[str]:
        places = [str(self.workspace)] if self.active == "workspace-write" else []
        return places + [str(Path(p).expanduser()) for p in self.settings.writable]

    def wrap(self, argv: Sequence[str], cwd: Path) -> list[str]:
        """`argv` as it runs: inside bwrap when the sandbox is on, as it is when off.
        SandboxUnavailable when a mode was set explicitly and bubblewrap cannot run."""
        active = self.active
        if active == "off":
            return list(argv)
        if not self.bwrap.works or self.bwrap.path is None:
            raise SandboxUnavailable(
                f"the sandbox ({active}) cannot run, so this command was not run: {self.bwrap.problem}. "
                "The person can /sandbox off to run commands unconfined."
            )
        args = bwrap_arguments(self, active, cwd)
        if self.domains and self.proxy is not None:  # `prepare` started it
            args += ["--bind", str(self.proxy.path), PROXY_INSIDE]
            for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
                args += ["--setenv", name, f"http://127.0.0.1:{RELAY_PORT}"]
            args += _relay_mounts()
            argv = [os.path.realpath(sys.executable), "-I", RELAY_INSIDE, PROXY_INSIDE, str(RELAY_PORT), "--", *argv]
        return [self.bwrap.path, *args, "--", *argv]


def bwrap_arguments(sandbox: Sandbox, active: str, cwd: Path) -> list[str]:
    """bubblewrap's arguments (mounts in order: a later one covers an earlier one)."""
    workspace = sandbox.workspace.resolve()
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    args += ["--bind" if active == "workspace-write" else "--ro-bind", str(workspace), str(workspace)]
    for place in sandbox.settings.writable:
        path = Path(place).expanduser()
        if path.exists():
            args += ["--bind", str(path), str(path)]
    held = protected_paths(workspace)
    held += [p for p in _existing(sandbox.trusted_code()) if p.is_relative_to(workspace) and p not in held]
    for path in held:
        args += ["--ro-bind", str(path), str(path)]
    for path in _existing(sandbox.hidden):
        args += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    args += ["--unshare-all"]
    if sandbox.settings.network is True:
        args += ["--share-net"]
    args += ["--die-with-parent", "--new-session", "--chdir", str(cwd)]
    return args


NESTED_DEPTH = 4
"""How deep a folder's own `.todo-agent/` (its project settings) is looked for."""
_NESTED_BUDGET = 5_000
"""Folders looked at, at most, per command: a huge tree is not walked."""
_SKIP = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", "target"})


def _relay_mounts() -> list[str]:
    """The relay script, and the Python that runs it when that lives under /tmp (a venv
    there points at its base interpreter, which `-I` runs with the standard library only)."""
    mounts = ["--ro-bind", str(Path(__file__).with_name("netrelay.py")), RELAY_INSIDE]
    base = Path(sys.base_prefix).resolve()
    python = Path(os.path.realpath(sys.executable))
    for place in {base, python.parent}:
        if place.is_relative_to("/tmp"):
            mounts += ["--ro-bind", str(place), str(place)]
    return mounts


def _network_line(network: bool | tuple[str, ...]) -> str:
    if network is True:
        return "on"
    if network:
        return f"only {', '.join(network)} (and their subdomains), through todo-agent's proxy"
    return "off (not even the host loopback)"


def protected_paths(workspace: Path) -> list[Path]:
    """The `PROTECTED` places of `workspace` that exist (links left alone: a mount would
    follow one out), and a sub-folder's own `.todo-agent/` down to `NESTED_DEPTH`."""
    found = [workspace / name for name in PROTECTED if _is_place(workspace / name)]
    found += [p for p in _nested_settings(workspace) if p not in found]
    return found


def _is_place(path: Path) -> bool:
    return not path.is_symlink() and path.exists()


def _nested_settings(workspace: Path) -> list[Path]:
    found: list[Path] = []
    level, seen = [workspace], 0
    for _ in range(NESTED_DEPTH):
        below: list[Path] = []
        for folder in level:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if seen > _NESTED_BUDGET or entry.is_symlink():
                    continue
                if entry.name == ".todo-agent":
                    if folder != workspace:
                        found.append(Path(entry.path))
                elif entry.name not in _SKIP and entry.is_dir(follow_symlinks=False):
                    below.append(Path(entry.path))
        level = below
    return found


_READ_TOOLS = ("Read", "Grep", "Glob")
_GLOB_CHARS = frozenset("*?[")


def literal_read_denials(deny: Iterable[str], workspace: Path) -> tuple[Path, ...]:
    """The paths that `Read(…)` (Grep, Glob) deny rules name literally, to hide inside the
    sandbox; a glob (`Read(**/.env)`) cannot be a mount, so it is left to the gate."""
    found = []
    for rule in deny:
        tool, _, rest = rule.partition("(")
        spec = rest[:-1] if rest.endswith(")") else ""
        if tool.strip() not in _READ_TOOLS or not spec.strip() or _GLOB_CHARS & set(spec):
            continue
        path = Path(spec.strip()).expanduser()
        found.append(path if path.is_absolute() else workspace / path)
    return tuple(found)


def _existing(paths: Iterable[Path]) -> list[Path]:
    return [p for p in paths if p.exists() and not p.is_symlink()]


SANDBOX_HINTS = (
    ("Read-only file system", "writes outside its writable places"),
    ("Network is unreachable", "the network (off in the sandbox)"),
    ("Temporary failure in name resolution", "the network (off in the sandbox)"),
    ("Could not resolve host", "the network (off in the sandbox)"),
    ("Name or service not known", "the network (off in the sandbox)"),
    ("Connection refused", "the network (off in the sandbox: not even the host's loopback)"),
    ("CONNECT tunnel failed, response 403", "hosts not in [sandbox] network"),
    ("Tunnel connection failed: 403", "hosts not in [sandbox] network"),
    ("is not in [sandbox] network", "hosts not in [sandbox] network"),
    ("Couldn't connect to server", "the network (off in the sandbox: not even the host's loopback)"),
    ("Failed to establish a new connection", "the network (off in the sandbox: not even the host's loopback)"),
)


def failure_note(output: str, sandbox: Sandbox) -> str:
    """For a failed sandboxed command whose output looks like the sandbox refused it: a
    line saying so, naming the writable places, so the model neither retries blindly nor
    thinks the code is broken; "" otherwise."""
    tail = output[-4_000:]
    causes = list(dict.fromkeys(cause for needle, cause in SANDBOX_HINTS if needle in tail))
    if not causes or (sandbox.settings.network is True and all("network" in c for c in causes)):
        return ""
    writable = ", ".join(sandbox.writable_places()) or "nothing"
    return (
        f"{MARK} This command ran in todo-agent's sandbox ({sandbox.active}), which refuses {' and '.join(causes)}. "
        f"Writable: {writable} and a private /tmp; {', '.join(PROTECTED)} are read-only. "
        "If it must run outside, say why and ask the person."
    )
