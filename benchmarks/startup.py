"""Start-up costs a user feels: `todo-agent --version`, importing the core, and `import openai`.

Usage: python benchmarks/startup.py [--runs 10]
Each figure is the median wall time of fresh interpreter processes.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time


def timed(command: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    python = sys.executable
    script = shutil.which("todo-agent") or "todo-agent"
    rows = [
        ("python -c pass (baseline)", [python, "-c", "pass"]),
        ("todo-agent --version", [script, "--version"]),
        ("import todo_agent.core.runtime", [python, "-c", "import todo_agent.core.runtime"]),
        ("import todo_agent.tui.app", [python, "-c", "import todo_agent.tui.app"]),
        ("import openai (kept off start-up)", [python, "-c", "import openai"]),
    ]
    for label, command in rows:
        print(f"{label:40s} {timed(command, args.runs) * 1000:7.0f} ms")


if __name__ == "__main__":
    main()
