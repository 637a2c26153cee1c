"""What a hook costs: one event with N hooks of `true`, and an event with none configured.

Usage: python benchmarks/hooks.py [--hooks 1 4] [--rounds 50]
Prints the median and p95 wall time of HookRunner.run() per event. Hooks of one event run
concurrently, so 4 hooks should cost little more than 1 on a machine with spare cores.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from todo_agent.core.hooks.runner import HookRunner, hook_environment
from todo_agent.core.hooks.spec import HookSpec


async def measure(count: int, rounds: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        specs = [HookSpec("PreToolUse", "true") for _ in range(count)]
        runner = HookRunner(specs, workspace, env=hook_environment(workspace))
        fields = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "call_1"}
        samples = []
        for _ in range(rounds):
            started = time.perf_counter()
            await runner.run("PreToolUse", fields, target="Bash")
            samples.append(time.perf_counter() - started)
        return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hooks", type=int, nargs="+", default=[0, 1, 4])
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    for count in args.hooks:
        samples = sorted(asyncio.run(measure(count, args.rounds)))
        p95 = samples[max(0, int(len(samples) * 0.95) - 1)]
        print(
            f"PreToolUse with {count} hook(s), {args.rounds} rounds: "
            f"median {statistics.median(samples) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"
        )


if __name__ == "__main__":
    main()
