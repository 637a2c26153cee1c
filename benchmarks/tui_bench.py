"""todo-agent against a bare Textual app, in tmux, against a local streaming server.

Usage: python benchmarks/tui_bench.py [--rounds 3] [--only launch,burst,...] [--json OUT]

Both apps run as real processes in a private tmux server (120×40, or `--size`) and are
read the way a person reads them: by the screen (`capture-pane`). Rounds are interleaved
(each round runs every scenario for every app, the order alternating), and each figure
is reported as min / median / max over the rounds, with todo-agent's ratio to the
baseline taken within the same round, so a busy machine slows both sides of a ratio alike.
`--paced MODEL` changes the paced scenario's answer (e.g. `bytes=84000,chunk=40,rate=100`:
line-sized chunks), `--bare-fps N` the bare app's frame rate.

Scenarios (each a fresh launch):
- launch:  launch → first frame → a typed key is on screen ("input usable"); the prompt
           is sent at that moment; time until the answer's first token is on screen,
           counted from Enter and from the server's first byte (200-chunk answer).
- burst:   2,000 chunks written at once: Enter → the last chunk on screen; CPU used.
- thought: the same 2,000 chunks as a reasoning model's thought (`reasoning_content`),
           drawn in the open thinking block; todo-agent only (compare with its `burst`).
- paced:   2,100 chunks at 100/s: how far the screen is behind the server at the end; CPU.
- keys:    a key every 100 ms during a 1,000-chunk answer at 100/s: time until each key
           is on screen (p50/p99); todo-agent also with a resumed 2,000-message history.
- idle:    CPU per key typed while idle, empty session and 2,000-message history;
           resuming that history (`--continue`) → input usable; resident memory.
- mcp:     launch → input usable with three MCP servers configured (two built with the
           SDK, one whose start hangs) beside none; and until the status line says `mcp 2/3`.
- big:     a 2 MB answer (256-byte chunks, at once): Enter → last chunk on screen, and the
           slowest key meanwhile (todo-agent only).
- fence:   as `big`, a 1 MB answer that is one code fence (a model writing a long file).
- lines:   as `big`, a 2 MB answer of 10,000-character lines without a blank line (one
           Markdown paragraph: pasted output).
- line:    as `big`, a 2 MB answer that is one line (a blob, minified code).
- resume:  `--continue` of an empty session and of a 2,000-message one, nothing typed:
           launch → the status line says `ready` with the history drawn (the last answer
           and the resume notice on screen): when the conversation and the agent are
           there, not only the start screen's prompt.
- agents:  three sub-agents streaming at once (1,000 chunks at 100/s each): the key probe
           meanwhile (p50/p99) and the CPU from Enter to the end; beside it `agents1` (one
           sub-agent streaming) and `solo` (the main agent streaming one answer), measured
           the same way, for the CPU ratios (todo-agent only).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stream_server import FIRST_MARK, LAST_MARK
from tmux_driver import Tmux, cpu_seconds, rss_mb, settle

HERE = Path(__file__).resolve().parent
STALL = 10.0
"""A key not on screen after this many seconds is taken as lost (and counted that late)."""
USABLE_MARK = "ZZ:"
PROBE_MARK = "KP:"
PROBE_KEYS = "abcdefghijklmnopqrstuvwxyz0123456789"
HISTORY_EXCHANGES = 500  # 4 messages each: 2,000 messages

MODELS = {
    "launch": "chunks=200",
    "burst": "chunks=2000",
    "thought": "chunks=2000,think=1",
    "paced": "chunks=2100,rate=100",
    "keys": "chunks=1000,rate=100",
    "idle": "chunks=10",
    "mcp": "chunks=10",
    "big": "bytes=2000000,chunk=256",
    "fence": "bytes=1000000,chunk=256,shape=fence",
    "lines": "bytes=2000000,chunk=256,shape=lines",
    "line": "bytes=2000000,chunk=256,shape=line",
    "resume": "chunks=10",
    "agents": "agents=3,chunks=1000,rate=100",
    "agents1": "agents=1,chunks=1000,rate=100",
    "solo": "chunks=1000,rate=100",
}


@dataclass(frozen=True)
class App:
    label: str
    kind: str  # "todo" or "bare"
    history: bool = False
    mcp: bool = False
    """Three MCP servers configured: two that start, one whose start hangs."""
    other: bool = False
    """The `--compare` build of todo-agent rather than the one measured."""


TODO, TODO_HISTORY, BARE = App("todo-agent", "todo"), App("todo-agent, 2,000 msgs", "todo", True), App("bare", "bare")
TODO_MCP = App("todo-agent, 3 MCP servers", "todo", mcp=True)
SCENARIO_APPS = {
    "launch": (BARE, TODO),
    "mcp": (BARE, TODO, TODO_MCP),
    "burst": (BARE, TODO),
    "thought": (TODO,),
    "paced": (BARE, TODO),
    "keys": (BARE, TODO, TODO_HISTORY),
    "idle": (TODO, TODO_HISTORY),
    "big": (TODO,),
    "fence": (TODO,),
    "lines": (TODO,),
    "line": (TODO,),
    "resume": (TODO, TODO_HISTORY),
    "agents": (TODO,),
    "agents1": (TODO,),
    "solo": (TODO,),
}


# --- the server and the apps ---------------------------------------------------------


class Server:
    def __init__(self, workdir: Path) -> None:
        self.log = workdir / "server.jsonl"
        self.log.touch()
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "stream_server.py"), "--log", str(self.log)], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        self._read = 0

    def mark(self) -> None:
        """Forget the events so far: `events()` returns only what comes after."""
        self._read = len(self.log.read_text().splitlines())

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()[self._read :]]

    def when(self, event: str, timeout: float = 60) -> float | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [e["t"] for e in self.events() if e["event"] == event]
            if found:
                return float(found[-1])
            time.sleep(0.01)
        return None

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=5)


MCP_SERVERS = HERE.parent / "tests" / "mcp_servers"


def write_mcp_servers(settings: Path, notes: Path) -> None:
    """Two servers built with the MCP SDK (each ~0.8 s to start) and one that never answers."""
    notes.mkdir()
    settings.parent.mkdir(parents=True)
    python, test_server, hang = (
        json.dumps(sys.executable),
        MCP_SERVERS / "test_server.py",
        MCP_SERVERS / "hang_server.py",
    )
    env = f"{{ TEST_SERVER_DIR = {json.dumps(str(notes))} }}"
    settings.write_text(
        "".join(
            f"[mcp_servers.{name}]\ncommand = {python}\nargs = {json.dumps(args)}\nenv = {env}\n"
            for name, args in (
                ("one", [str(test_server), "stdio"]),
                ("two", [str(test_server), "stdio"]),
                ("stuck", [str(hang)]),
            )
        ),
        encoding="utf-8",
    )


def build_history(workspace: Path, home: Path) -> None:
    from history import build_session

    build_session(workspace, HISTORY_EXCHANGES, (HERE / "history_answer.md").read_text(encoding="utf-8"), root=home)


LAST_ANSWER = f"module_{HISTORY_EXCHANGES - 1}.py"
"""Text of the history's last answer: on screen once the resumed conversation is drawn."""
RESUMED_NOTICE = "resumed session"
CODE_LINE = 'return [line.split(",") for line in text.splitlines()]'
"""The last answer's code, on screen once its fence is drawn."""


def is_ready(screen: str, *, history: bool) -> bool:
    """The status line says `ready` (the main screen is up: the start screen says
    `starting…`) and, for a resumed history, its end is drawn with the resume notice."""
    status = [line.strip() for line in screen.splitlines()[-3:]]
    if not any(line.startswith("ready ") for line in status):
        return False
    return not history or (LAST_ANSWER in screen and RESUMED_NOTICE in screen and CODE_LINE in screen)


@dataclass
class Running:
    tmux: Tmux
    name: str
    pid: int
    app: App
    placeholder: str
    launched: float = 0.0
    figures: dict[str, float] = field(default_factory=dict)

    def screen(self) -> str:
        return self.tmux.capture(self.name)

    def wait(self, seen: Callable[[str], bool], timeout: float = 60) -> float:
        found = self.tmux.wait_for(self.name, seen, timeout=timeout)
        if found is None:
            raise TimeoutError(f"{self.app.label}: not on screen within {timeout}s:\n{self.screen()}")
        return found

    def wait_text(self, text: str, timeout: float = 60) -> float:
        return self.wait(lambda screen: text in screen, timeout)


@dataclass(frozen=True)
class Options:
    size: tuple[int, int] = (120, 40)
    """The terminal, columns × rows."""
    bare_fps: int | None = None
    """`TEXTUAL_FPS` for the bare app (None: Textual's default, 60)."""


@dataclass
class Bench:
    tmux: Tmux
    server: Server
    workdir: Path
    todo_agent: Path
    """The `todo-agent` executable measured."""
    other: Path | None = None
    """Another `todo-agent` measured in the same rounds (`--compare`), e.g. the code before a change."""
    options: Options = field(default_factory=Options)


@contextmanager
def started(bench: Bench, app: App, model: str, *, type_first: bool = True) -> Iterator[Running]:
    """Launch `app` in a fresh workspace; measure the first frame and input usable on the way
    (`type_first`; else nothing is typed before the scenario runs)."""
    tmux, server = bench.tmux, bench.server
    run_dir = Path(tempfile.mkdtemp(dir=bench.workdir))
    workspace, home, config = run_dir / "project", run_dir / "home", run_dir / "config"
    for path in (workspace, home, config):
        path.mkdir()
    env = {"OPENAI_API_KEY": "bench", "TODO_AGENT_HOME": str(home), "XDG_CONFIG_HOME": str(config)}
    env["COLORTERM"] = "truecolor"
    if app.kind == "todo":
        if app.history:
            build_history(workspace, home)
        if app.mcp:
            write_mcp_servers(config / "todo-agent" / "settings.toml", run_dir / "notes")
        executable = bench.other if app.other and bench.other else bench.todo_agent
        argv = [
            str(executable),
            "--base-url",
            server.url,
            "--model",
            model,
            *(["--continue"] if app.history else []),
        ]
        placeholder = "Ask todo-agent…"
    else:
        argv = [sys.executable, str(HERE / "bare_textual.py"), server.url, model]
        placeholder = "Ask…"
        if bench.options.bare_fps:
            env["TEXTUAL_FPS"] = str(bench.options.bare_fps)
    name = f"bench-{run_dir.name}"
    os.sync()  # the session just written (725 KB) is not flushed to disk during the launch measured
    launched = time.monotonic()
    pid = tmux.launch(name, argv, cwd=workspace, env=env, size=bench.options.size)
    running = Running(tmux, name, pid, app, placeholder, launched)
    try:
        running.figures["first_frame"] = running.wait_text(placeholder) - launched
        if type_first:
            tmux.type(name, USABLE_MARK)
            running.figures["input_usable"] = running.wait_text(USABLE_MARK) - launched
        yield running
    finally:
        tmux.kill(name, pid)
        shutil.rmtree(run_dir, ignore_errors=True)


# --- measuring keys -----------------------------------------------------------------


def probe_keys(
    run: Running,
    *,
    every: float = 0.1,
    done: Callable[[str], bool] | None = None,
    count: int = 10_000,
    limit: float = 600,
) -> list[float]:
    """Press a key every `every` s until `done(screen)` (or `count` keys); the delay until each
    key was on screen.

    The keys go after `PROBE_MARK` in the prompt: 36 letters and digits typed one by one,
    then erased one by one with backspace, and again; each is on screen when the text
    after the mark has the length it should have. Before the direction turns, the last key
    must be on screen (else a key and its undoing could both land between two looks).
    After `limit` seconds it stops, and keys not yet on screen count as late as that.
    """
    pattern = re.compile(re.escape(PROBE_MARK) + "([a-z0-9]*)")
    run.tmux.type(run.name, PROBE_MARK)
    run.wait_text(PROBE_MARK)
    latencies: list[float] = []
    pending: list[tuple[int, bool, float]] = []  # length expected, typed (not erased), when
    length, growing, sent, next_at = 0, True, 0, time.monotonic()
    deadline = next_at + limit
    while True:
        now = time.monotonic()
        if now > deadline:
            return latencies + [now - when for _, _, when in pending]
        turning = length == (len(PROBE_KEYS) if growing else 0)
        if now >= next_at and sent < count and not (turning and pending):  # a turn waits for the screen
            growing = not growing if turning else growing
            if growing:
                run.tmux.type(run.name, PROBE_KEYS[length])
            else:
                run.tmux.key(run.name, "BSpace")
            length += 1 if growing else -1
            sent += 1
            pending.append((length, growing, now))
            next_at = max(next_at + every, now)
        screen = run.screen()
        seen_at = time.monotonic()
        match = pattern.search(screen)
        shown = len(match.group(1)) if match else -1
        while pending and (shown >= pending[0][0] if pending[0][1] else 0 <= shown <= pending[0][0]):
            latencies.append(seen_at - pending.pop(0)[2])
        if pending and seen_at - pending[0][2] > STALL:  # lost: count it as late, say so, go on
            latencies.extend(seen_at - when for _, _, when in pending)
            run.figures["keys_lost"] = run.figures.get("keys_lost", 0) + len(pending)
            print(f"{run.app.label}: keys not on screen after {STALL:.0f}s; the screen:\n{screen}", file=sys.stderr)
            pending, length = [], max(0, shown)
            if shown < 0:  # the mark is gone too: start again after a new one
                run.tmux.type(run.name, PROBE_MARK)
        if not pending and (sent >= count or (done is not None and done(screen))):
            return latencies
        time.sleep(0.004)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


# --- scenarios ------------------------------------------------------------------------


def send_prompt(run: Running, server: Server) -> float:
    """Send what the prompt holds; returns when Enter was pressed."""
    server.mark()
    sent = time.monotonic()
    run.tmux.key(run.name, "Enter")
    return sent


def scenario_launch(run: Running, server: Server) -> None:
    enter = send_prompt(run, server)
    first_visible = run.wait_text(FIRST_MARK)
    first_byte = server.when("first_byte")
    assert first_byte is not None
    run.figures["first_token_after_enter"] = first_visible - enter
    run.figures["first_token_after_byte"] = first_visible - first_byte
    run.wait_text(LAST_MARK)


def scenario_stream(run: Running, server: Server, prefix: str) -> None:
    before = settle(run.pid)
    enter = send_prompt(run, server)
    visible = run.wait_text(LAST_MARK, timeout=300)
    last_byte = server.when("last_byte")
    assert last_byte is not None
    run.figures[f"{prefix}_visible"] = visible - enter
    run.figures[f"{prefix}_lag"] = visible - last_byte
    run.figures[f"{prefix}_cpu"] = settle(run.pid) - before


def scenario_keys(run: Running, server: Server) -> None:
    settle(run.pid)
    send_prompt(run, server)
    run.wait_text(run.placeholder)  # the prompt was emptied: what is typed now stays
    latencies = probe_keys(run, done=lambda screen: LAST_MARK in screen)
    run.figures["key_p50"] = statistics.median(latencies)
    run.figures["key_p99"] = percentile(latencies, 0.99)
    run.figures["key_max"] = max(latencies)
    run.figures["keys_sampled"] = len(latencies)


def idle_rate(pid: int, window: float = 2.0) -> float:
    """CPU seconds per second while nothing happens (timers, the cursor, a spinner)."""
    start = cpu_seconds(pid)
    time.sleep(window)
    return (cpu_seconds(pid) - start) / window


def scenario_idle(run: Running, server: Server) -> None:
    settle(run.pid, quiet=1.0)
    run.figures["rss_mb"] = rss_mb(run.pid)
    idle_before = idle_rate(run.pid)
    before, began = cpu_seconds(run.pid), time.monotonic()
    keys = 144  # two rounds of typing and erasing
    probe_keys(run, count=keys)
    after = settle(run.pid)
    elapsed = time.monotonic() - began
    idle = min(idle_before, idle_rate(run.pid))
    spent = after - before - idle * elapsed
    run.figures["idle_cpu_per_key_ms"] = max(0.0, spent) / (keys + len(PROBE_MARK)) * 1000


BIG_LIMIT = 300.0
"""Seconds after which a big answer counts as never shown (reported as this limit)."""


def scenario_big(run: Running, server: Server, prefix: str) -> None:
    before = settle(run.pid)
    enter = send_prompt(run, server)
    run.wait_text(run.placeholder)
    latencies = probe_keys(run, done=lambda screen: LAST_MARK in screen, limit=BIG_LIMIT)
    run.figures[f"{prefix}_visible"] = min(BIG_LIMIT, time.monotonic() - enter)
    run.figures[f"{prefix}_cpu"] = cpu_seconds(run.pid) - before
    run.figures[f"{prefix}_key_p99"] = percentile(latencies, 0.99)
    run.figures[f"{prefix}_key_max"] = max(latencies)


def scenario_resume(run: Running, server: Server) -> None:
    history = run.app.history
    run.figures["ready"] = run.wait(lambda screen: is_ready(screen, history=history)) - run.launched
    run.figures["ready_cpu"] = cpu_seconds(run.pid)  # less noisy than the time on a busy machine
    settle(run.pid, quiet=1.0)  # the warm-up (`import openai`) after it, so the next launch is not slowed


def scenario_mcp(run: Running, server: Server) -> None:
    """Launch only (the harness measures it); with servers, also until two are up."""
    if run.app.mcp:
        run.figures["mcp_2_of_3"] = run.wait_text("mcp 2/3") - run.launched


def scenario_streams(run: Running, server: Server, prefix: str) -> None:
    """Keys typed while the answer(s) stream, and the CPU from Enter until all of it is in."""
    before = settle(run.pid)
    enter = send_prompt(run, server)
    run.wait_text(run.placeholder)
    latencies = probe_keys(run, done=lambda screen: LAST_MARK in screen, limit=120)
    run.figures[f"{prefix}_done"] = time.monotonic() - enter
    run.figures[f"{prefix}_cpu"] = settle(run.pid) - before
    run.figures[f"{prefix}_key_p50"] = statistics.median(latencies)
    run.figures[f"{prefix}_key_p99"] = percentile(latencies, 0.99)
    run.figures[f"{prefix}_key_max"] = max(latencies)


SCENARIOS: dict[str, Callable[[Running, Server], None]] = {
    "launch": scenario_launch,
    "mcp": scenario_mcp,
    "burst": lambda run, server: scenario_stream(run, server, "burst"),
    "thought": lambda run, server: scenario_stream(run, server, "thought"),
    "paced": lambda run, server: scenario_stream(run, server, "paced"),
    "keys": scenario_keys,
    "idle": scenario_idle,
    "big": lambda run, server: scenario_big(run, server, "big"),
    "fence": lambda run, server: scenario_big(run, server, "fence"),
    "lines": lambda run, server: scenario_big(run, server, "lines"),
    "line": lambda run, server: scenario_big(run, server, "line"),
    "resume": scenario_resume,
    "agents": lambda run, server: scenario_streams(run, server, "agents3"),
    "agents1": lambda run, server: scenario_streams(run, server, "agents1"),
    "solo": lambda run, server: scenario_streams(run, server, "solo"),
}


# --- rounds and the report ----------------------------------------------------------

Results = dict[str, dict[str, list[float]]]  # app label → figure → one value per round


def with_other(apps: tuple[App, ...]) -> tuple[App, ...]:
    """`apps` and, after each todo-agent, the same run of the `--compare` build."""
    both: list[App] = []
    for app in apps:
        both.append(app)
        if app.kind == "todo":
            both.append(App(f"{app.label} (compare)", "todo", app.history, other=True))
    return tuple(both)


COMPILE = """
import compileall, importlib, os
for name in ("todo_agent.core", "todo_agent.tui", "todo_agent.frontends"):
    compileall.compile_dir(os.path.dirname(importlib.import_module(name).__file__), quiet=1)
"""


def precompile(executable: Path) -> None:
    """Write the bytecode a user's install has, so no launch measures compiling source.

    `pip install .` compiles every module at install time; an editable checkout gets its
    `.pyc` files on first import, unless `PYTHONDONTWRITEBYTECODE` is set (as on the
    project's machines), in which case every launch would compile ~40 modules anew, a
    cost (~40 ms) no user pays. The bare app's Textual comes with its bytecode too.
    """
    interpreter = executable.with_name("python")  # the venv's, beside its `todo-agent`
    if not interpreter.exists():
        interpreter = Path(executable.read_text(encoding="utf-8").splitlines()[0].removeprefix("#!").strip())
    subprocess.run([str(interpreter), "-c", COMPILE], check=True)


def run_rounds(
    rounds: int, only: list[str], workdir: Path, todo_agent: Path, *, other: Path | None, options: Options
) -> Results:
    results: Results = {}
    for executable in (todo_agent, *([other] if other else [])):
        precompile(executable)
    server = Server(workdir)
    tmux = Tmux(f"todo-agent-bench-{os.getpid()}")
    bench = Bench(tmux, server, workdir, todo_agent, other, options)
    try:
        for number in range(rounds):
            for scenario in only:
                apps = with_other(SCENARIO_APPS[scenario]) if other else SCENARIO_APPS[scenario]
                for app in apps if number % 2 == 0 else tuple(reversed(apps)):
                    with started(bench, app, MODELS[scenario], type_first=scenario != "resume") as run:
                        SCENARIOS[scenario](run, server)
                    for figure, value in run.figures.items():
                        key = f"{scenario}.{figure}"
                        results.setdefault(app.label, {}).setdefault(key, []).append(value)
                    print(f"round {number + 1} {scenario:6} {app.label:24} {fmt_figures(run.figures)}", flush=True)
    finally:
        tmux.close()
        server.close()
    return results


def fmt_figures(figures: dict[str, float]) -> str:
    return "  ".join(f"{k}={v:.3f}" for k, v in figures.items())


def spread(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


def ratios(values: list[float], base: list[float]) -> str:
    """min / median / max of the ratios taken within each round."""
    return spread([v / b for v, b in zip(values, base, strict=False) if b])


def report(results: Results) -> str:
    """One row per figure: each app's min / median / max, each ratio to the baseline, and
    the resumed history's ratio to the empty session."""
    labels = sorted(results, key=lambda label: (label == BARE.label, label))
    others = [label for label in labels if label != BARE.label]
    bare = results.get(BARE.label, {})
    empty, history = results.get(TODO.label, {}), results.get(TODO_HISTORY.label, {})
    head = ["figure", *labels, *(f"{label} / bare" for label in others if bare)]
    if empty and history:
        head.append(f"{TODO_HISTORY.label} / {TODO.label}")
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    keys = sorted({key for figures in results.values() for key in figures})
    for key in keys:
        cells = [key, *(spread(results[label].get(key, [])) for label in labels)]
        if bare:
            cells.extend(ratios(results[label].get(key, []), bare.get(key, [])) for label in others)
        if empty and history:
            cells.append(ratios(history.get(key, []), empty.get(key, [])))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up tmux and the server on kill
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--only", default=",".join(SCENARIOS), help="comma-separated scenarios: " + ", ".join(SCENARIOS)
    )
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--size", default="120x40", help="the terminal both apps run in, COLUMNSxROWS")
    parser.add_argument(
        "--paced", default=MODELS["paced"], help="the paced scenario's answer (a stream_server.py model)"
    )
    parser.add_argument(
        "--bare-fps", type=int, help="the bare app's most frames a second (TEXTUAL_FPS; Textual's default is 60)"
    )
    parser.add_argument("--compare", type=Path, help="another todo-agent executable, measured in the same rounds")
    parser.add_argument(
        "--todo-agent",
        type=Path,
        default=Path(sys.executable).with_name("todo-agent"),
        help="the todo-agent executable to measure (default: this interpreter's; e.g. another checkout's venv)",
    )
    args = parser.parse_args()
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}")
    MODELS["paced"] = args.paced
    columns, _, rows = args.size.partition("x")
    options = Options((int(columns), int(rows)), args.bare_fps)
    with tempfile.TemporaryDirectory(prefix="todo-agent-bench-") as tmp:
        other = args.compare.resolve() if args.compare else None
        results = run_rounds(args.rounds, only, Path(tmp), args.todo_agent.resolve(), other=other, options=options)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
