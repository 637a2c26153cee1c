"""Launch → input usable in a plain tmux server, as a person's tmux runs it.

Usage: python benchmarks/plain_tmux.py [--rounds 5] [--todo-agent PATH]

Unlike `tui_bench.py`, nothing about tmux is set up: its default configuration, a new
`tmux new-session` (120×40) per launch, the screen read by separate `tmux capture-pane`
processes every 4 ms (what a script driving tmux does). Each round launches the bare
Textual app (`bare_textual.py`) and todo-agent, in a fresh temporary home each; a launch
is timed from `new-session` to its prompt on screen (first frame) and then to a typed
key on screen (input usable). Reported: each launch, the medians, and todo-agent / bare
from the medians.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOCKET = "todo-agent-plain-bench"
POLL = 0.004
HERE = Path(__file__).resolve().parent
SERVER = "http://127.0.0.1:9/v1"  # nothing listens: the launch never waits for it


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False).stdout


def wait_for(text: str, started: float, limit: float = 20.0) -> float | None:
    while time.monotonic() - started < limit:
        if text in tmux("capture-pane", "-p", "-t", "b"):
            return time.monotonic() - started
        time.sleep(POLL)
    return None


def launch(argv: list[str], placeholder: str) -> tuple[float | None, float | None]:
    """(first frame, input usable) of one launch, in seconds."""
    home = Path(tempfile.mkdtemp())
    workspace = home / "project"
    workspace.mkdir()
    env = {"TODO_AGENT_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"), "OPENAI_API_KEY": "x"}
    flags = [part for key, value in env.items() for part in ("-e", f"{key}={value}")]
    started = time.monotonic()
    tmux("new-session", "-d", "-s", "b", "-x", "120", "-y", "40", "-c", str(workspace), *flags, " ".join(argv))
    first = wait_for(placeholder, started)
    tmux("send-keys", "-t", "b", "-l", "Zq")
    usable = wait_for("Zq", started)
    tmux("kill-session", "-t", "b")
    time.sleep(0.5)
    shutil.rmtree(home, ignore_errors=True)
    return first, usable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--todo-agent", default=shutil.which("todo-agent") or "todo-agent")
    args = parser.parse_args()
    apps = {
        "bare": ([sys.executable, str(HERE / "bare_textual.py"), SERVER, "m"], "Ask…"),
        "todo-agent": ([args.todo_agent, "--base-url", SERVER, "--model", "m"], "Ask todo-agent…"),
    }
    results: dict[str, list[tuple[float | None, float | None]]] = {name: [] for name in apps}
    tmux("start-server")
    tmux("new-session", "-d", "-s", "keep", "sleep 99999")  # the server stays up between launches
    try:
        for _ in range(args.rounds):
            for name, (argv, placeholder) in apps.items():
                results[name].append(launch(argv, placeholder))
    finally:
        tmux("kill-server")
    medians = {}
    for name, runs in results.items():
        usable = [u for _, u in runs if u is not None]
        medians[name] = statistics.median(usable) if usable else float("nan")
        shown = ", ".join(f"{f or 0:.2f}/{u or 0:.2f}" for f, u in runs)
        print(f"{name:<11} first frame/input usable (s): {shown}; median input usable {medians[name]:.3f}")
    print(f"todo-agent / bare, from the medians: {medians['todo-agent'] / medians['bare']:.2f}")
    if os.environ.get("TMUX"):
        print("(run from inside tmux: the measured server is a separate one, -L " + SOCKET + ")")


if __name__ == "__main__":
    main()
