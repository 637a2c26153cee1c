"""Time from a fresh interpreter to the TUI's first painted frame, and proof openai waits.

Usage: python benchmarks/first_frame.py [--runs 5]
Each run is a new process that builds the real app on a scripted model (headless
driver), exits right after the first refresh, and reports the elapsed time and
whether `openai` and the agent core (`core.runtime`, built in a thread after the first
frame) had been imported by then.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
started = time.perf_counter()
from todo_agent.core.settings import Config
from todo_agent.tui.app import TodoAgentApp

workspace = Path(tempfile.mkdtemp())
script = workspace / "s.json"
script.write_text('{"steps": []}')
app = TodoAgentApp.starting(Config(workspace=workspace, model=f"script:{script}"))
seen = {}

def first_frame() -> None:
    seen["elapsed"] = time.perf_counter() - started
    seen["openai"] = "openai" in sys.modules
    seen["core"] = "todo_agent.core.runtime" in sys.modules
    app.exit()

app.call_after_refresh(first_frame)
app.run(headless=True, size=(120, 36))
app.starter.join()
if app.starter.runtime is not None:
    app.starter.runtime.close()
print(json.dumps(seen))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    times = [r["elapsed"] for r in results]
    openai_loaded = any(r["openai"] for r in results)
    core_loaded = any(r["core"] for r in results)
    print(
        f"first frame: median {statistics.median(times) * 1000:.0f} ms over {args.runs} runs "
        f"(imports + app build + first paint); openai imported before it: {openai_loaded}; core.runtime: {core_loaded}"
    )


if __name__ == "__main__":
    main()
