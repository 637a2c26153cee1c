"""How long a task-list change takes to be durable (temp file, fsync, rename, dir fsync, lock).

Usage: python benchmarks/task_store.py [--tasks 20] [--rounds 200]
Prints the median and p95 latency of TaskStore.update() on a list of --tasks tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from todo_agent.core.tasks.store import TaskStore


async def measure(tasks: int, rounds: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = TaskStore.load(Path(tmp) / "bench.tasks.json")
        for n in range(tasks):
            await store.create(f"task {n}", active_form=f"doing task {n}")
        samples = []
        for n in range(rounds):
            task_id = str(n % tasks + 1)
            status = "in_progress" if (n // tasks) % 2 == 0 else "pending"  # every update changes state
            started = time.perf_counter()
            await store.update(task_id, status=status)
            samples.append(time.perf_counter() - started)
        return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    samples = sorted(asyncio.run(measure(args.tasks, args.rounds)))
    p95 = samples[int(len(samples) * 0.95) - 1]
    print(
        f"TaskStore.update, {args.tasks} tasks, {args.rounds} rounds: "
        f"median {statistics.median(samples) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"
    )


if __name__ == "__main__":
    main()
