"""`todo-agent export` of a 2,000-message session: the command end to end, and in process.

Usage: python benchmarks/export.py [--messages 2000] [--runs 5]

Builds one session as `history.py`'s `build_session` does (each exchange: a prompt, a Read
call, its result, a Markdown answer with a list and a code fence) in a temporary data dir,
with a plan of 20 tasks (checks on half of them) and files changed under each, then measures:
- command: `todo-agent export ID` (Markdown to stdout) and `todo-agent export ID -o FILE` for
  `.md`, `.html` and `.json`, each a fresh process, from start to exit;
- in process: reading the session from disk (`from_disk`: the transcript walked into
  blocks, the task list, the record of changes) and rendering each format, timed apart.
Medians over `--runs`. Target: under 2 s for the command.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from history import build_session

HERE = Path(__file__).resolve().parent


def build(home: Path, workspace: Path, messages: int) -> Path:
    from todo_agent.core.changes.log import ABSENT, ChangeLog
    from todo_agent.core.session.directory import latest_session
    from todo_agent.core.tasks.store import TaskStore

    build_session(workspace, messages // 4, (HERE / "history_answer.md").read_text(encoding="utf-8"), root=home)
    path = latest_session(workspace, root=home)
    assert path is not None
    store = TaskStore.load(path.with_name(f"{path.stem}.tasks.json"), home=path.stem)
    log = ChangeLog.for_session(path, workspace)

    async def plan() -> None:
        for n in range(20):
            task = await store.create(f"Fix module {n}", verify="pytest -q" if n % 2 else "")
            await store.update(task.id, status="in_progress" if n % 2 or n > 15 else "completed")
            for f in range(3):
                log.record(task.id, f"pkg/module_{n}_{f}.py", ABSENT, log.keep(f"line\n{n}\n".encode()))

    asyncio.run(plan())
    log.save()
    return path


def command(args: list[str], workspace: Path, env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(args, cwd=workspace, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def in_process(path: Path, workspace: Path, runs: int) -> dict[str, float]:
    from todo_agent.core.export.formats import render
    from todo_agent.core.export.source import from_disk

    figures: dict[str, list[float]] = {"read": [], "markdown": [], "html": [], "json": []}
    for _ in range(runs):
        started = time.perf_counter()
        source = from_disk(path, workspace)
        figures["read"].append(time.perf_counter() - started)
        for form in ("markdown", "html", "json"):
            started = time.perf_counter()
            render(source, form)  # type: ignore[arg-type]
            figures[form].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "project"
        workspace.mkdir()
        os.environ["TODO_AGENT_HOME"] = str(home)
        path = build(home, workspace, options.messages)
        env = {"TODO_AGENT_HOME": str(home), "PATH": os.environ["PATH"], "HOME": tmp}
        exe = shutil.which("todo-agent") or sys.exit("todo-agent is not on PATH (activate the venv)")
        print(
            f"session of {options.messages:,} messages, {path.stat().st_size / 1e6:.1f} MB, 20 tasks; "
            f"medians of {options.runs} runs"
        )
        for out in ("", "s.md", "s.html", "s.json"):
            args = [exe, "export", path.stem, *(["-o", out] if out else [])]
            seconds = command(args, workspace, env, options.runs)
            shown = f"todo-agent export {path.stem}" + (f" -o {out}" if out else "")
            size = f", {(workspace / out).stat().st_size / 1e6:.1f} MB" if out else ""
            print(f"  {shown}: {seconds * 1000:.0f} ms{size}")
        figures = in_process(path, workspace, options.runs)
        print(
            "  in process: read {read:.0f} ms (the transcript walked, the tasks, the changes); "
            "render Markdown {markdown:.0f} ms, HTML {html:.0f} ms, JSON {json:.0f} ms".format(
                **{k: v * 1000 for k, v in figures.items()}
            )
        )


if __name__ == "__main__":
    main()
