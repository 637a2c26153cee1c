"""What a command costs the change records: the workspace scan before and after it.

Usage: python benchmarks/change_scan.py [--files 10000] [--rounds 5]

Since `/rewind` (issue 32), every Bash call is scanned around, task in progress or none
(the per-task record and the prompt's checkpoint share the one scan). This builds a
workspace of N small files in 100 folders, once as a git checkout and once as a plain
folder, and times the scan before, the scan after and the comparison, as the recorder
does around a command that changed nothing. Median and minimum over the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from todo_agent.core.changes.log import ChangeLog
from todo_agent.core.changes.scan import changed, scan


def build(root: Path, files: int, git: bool) -> None:
    for n in range(files):
        folder = root / f"pkg{n % 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"module_{n}.py").write_text(f"VALUE = {n}\n" * 20)
    if git:
        for command in (
            ["init", "-q"],
            ["add", "-A"],
            ["-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "x"],
        ):
            subprocess.run(["git", *command], cwd=root, check=True, capture_output=True)


def measure(root: Path, rounds: int) -> list[float]:
    log = ChangeLog(None, root)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        before = log.scan()
        changed(before, scan(root), root)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"$ python benchmarks/change_scan.py --files {args.files} --rounds {args.rounds}")
    with tempfile.TemporaryDirectory() as tmp:
        for git in (True, False):
            root = Path(tmp) / ("git" if git else "plain")
            root.mkdir()
            build(root, args.files, git)
            times = measure(root, args.rounds)
            kind = "git checkout" if git else "plain folder"
            print(
                f"{kind}, {args.files:,} files: scan before + after + compare "
                f"median {statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f} ms"
            )


if __name__ == "__main__":
    main()
