"""What handing a task to a sub-agent costs: the claim (lock, read, write, history line)
and the settle that gives it back, alone and with several processes claiming at once.

Usage: python benchmarks/claims.py [--rounds 200] [--processes 4]
Prints the median and p95 of `TaskStore.claim` and `TaskStore.settle` on a 20-task list,
then the same for `--processes` processes each claiming and settling its own tasks of one
shared list at the same moment (they take turns at the list's lock).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from todo_agent.core.tasks.model import AgentRef, Attempt, Claim
from todo_agent.core.tasks.store import TaskStore

TASKS = 20


async def measure(path: Path, rounds: int, name: str, offset: int = 0, stride: int = 1) -> dict[str, list[float]]:
    store = TaskStore.load(path)
    ref = AgentRef(name, f"bench-{name}")
    samples: dict[str, list[float]] = {"claim": [], "settle": []}
    for n in range(rounds):
        task_id = str((offset + n * stride) % TASKS + 1)
        started = time.perf_counter()
        await store.claim(task_id, Claim(ref.agent, ref.session, 0, time.time()))
        samples["claim"].append(time.perf_counter() - started)
        started = time.perf_counter()
        await store.settle(task_id, ref, Attempt(ref.agent, "partial"))
        samples["settle"].append(time.perf_counter() - started)
    return samples


def prepare(path: Path) -> None:
    async def plan() -> None:
        store = TaskStore.load(path)
        for n in range(TASKS):
            await store.create(f"task {n}", active_form=f"doing task {n}")

    asyncio.run(plan())


def line(label: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return (
        f"{label}: median {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms ({len(ordered)} samples)"
    )


WORKER = """
import asyncio, json, sys, time
path, rounds, number, start, here, stride = sys.argv[1:7]
sys.path.insert(0, here)
from claims import measure
from pathlib import Path
while time.time() < float(start):  # every process starts at the same moment
    time.sleep(0.001)
samples = asyncio.run(measure(Path(path), int(rounds), "p" + number, int(number), int(stride)))
print(json.dumps(samples))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--processes", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "alone.tasks.json"
        prepare(path)
        alone = asyncio.run(measure(path, args.rounds, "solo"))
        print(line("claim, one process", alone["claim"]))
        print(line("settle, one process", alone["settle"]))
        shared = Path(tmp) / "shared.tasks.json"
        prepare(shared)
        start = time.time() + 1.0
        here = str(Path(__file__).resolve().parent)
        rounds, count = str(args.rounds // args.processes), str(args.processes)
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", WORKER, str(shared), rounds, str(n), str(start), here, count],
                stdout=subprocess.PIPE,
                text=True,
            )
            for n in range(args.processes)
        ]
        results = [json.loads(w.communicate()[0]) for w in workers]
        for kind in ("claim", "settle"):
            print(line(f"{kind}, {args.processes} processes at once", [s for r in results for s in r[kind]]))


if __name__ == "__main__":
    main()
