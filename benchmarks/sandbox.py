"""What the sandbox costs a small command: `true` through todo-agent's Bash path (bash in
its own process group, output collected), unsandboxed, inside bubblewrap, and inside with
a domain allow-list (the relay, a Python process, starts first).

    python benchmarks/sandbox.py --runs 200

Each run is the whole call as the model's Bash pays it (`run_command`), the runs of the
two interleaved so a busy machine slows both; prints min / median / max in ms and the
median difference. The workspace is a fresh temporary folder with a `.git` (so the
protected mounts are there too).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from todo_agent.core.sandbox import Sandbox, SandboxSettings, probe
from todo_agent.core.tools.bash import child_env, run_command


async def timed(command: str, workspace: Path, sandbox: Sandbox | None) -> float:
    began = time.perf_counter()
    result = await run_command(command, workspace, 30, child_env(), sandbox=sandbox)
    elapsed = (time.perf_counter() - began) * 1000
    if result.is_error:
        raise SystemExit(f"`{command}` failed: {result.output}")
    return elapsed


async def main(runs: int) -> None:
    found = probe()
    if not found.works:
        raise SystemExit(found.problem)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        await asyncio.to_thread(subprocess.run, ["git", "init", "-q", folder], check=True)
        boxed = Sandbox(workspace, SandboxSettings("workspace-write"), found=found)
        proxied = Sandbox(workspace, SandboxSettings("workspace-write", network=("pypi.org",)), found=found)
        plain: list[float] = []
        inside: list[float] = []
        relayed: list[float] = []
        for _ in range(runs):
            plain.append(await timed("true", workspace, None))
            inside.append(await timed("true", workspace, boxed))
            relayed.append(await timed("true", workspace, proxied))
        proxied.close()
    for name, times in (("unsandboxed", plain), ("sandboxed", inside), ("with proxy", relayed)):
        print(f"{name:12} min {min(times):6.2f}  median {statistics.median(times):6.2f}  max {max(times):6.2f} ms")
    base = statistics.median(plain)
    print(
        f"median cost: sandbox {statistics.median(inside) - base:+.2f} ms, with the domain proxy "
        f"{statistics.median(relayed) - base:+.2f} ms ({found.version})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    asyncio.run(main(parser.parse_args().runs))
