"""`@` completion on a workspace of 100,000 files: keystroke → the right list on screen.

Usage: python benchmarks/mentions.py [--files 100000] [--git] [--rounds 3] [--json OUT]

Builds a tree of `--files` files (folders four deep, names from a fixed seed; `--git`
makes it a git repository with every file added, so the listing comes from `git ls-files`),
launches the real `todo-agent` in a private tmux server (120×40, a scripted model: no
server involved) and reads it by the screen, as a person would:

- launch → the file listing is ready: `@` typed once `ready` shows, until the list shows
  files rather than "listing the workspace's files…";
- then for each of the query words, `@` and the word a key at a time, each key timed from
  `send-keys` to the moment the rows above the prompt are exactly the first matches for
  what is typed so far (computed by the same ranking, in this process, on the same tree).

Each round is a fresh launch on the same tree. Reported: the listing's build time, and
per key min / p50 / p95 / max over every key of every round.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tmux_driver import Tmux

from todo_agent.core.input.file_index import FileIndex

WORDS = ["handlers", "models", "views", "client", "server", "utils", "billing", "auth", "search", "render"]
QUERIES = ("cli", "posts", "srvauth", "render_card", "billing/inv")
"""Typed after `@`: a short name, a whole name, letters spread over a path, a name with `_`, a folder and a name."""
PLAIN = "clipostsrvauth"
"""Typed without `@`, for the cost of any key on the machine at the time."""
LIST_ROWS = 9
"""Rows the completion list shows (its max-height)."""
STALL = 10.0


def build_tree(root: Path, count: int, *, git: bool) -> None:
    rng = random.Random(7)
    made = 0
    targets = ["frontends/cli.py", "src/posts.py", "services/auth/server_auth.py", "ui/render_card.tsx"]
    for target in targets:
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        (root / target).write_text("x\n")
        made += 1
    while made < count:
        folder = root.joinpath(*(rng.choice(WORDS) + str(rng.randrange(8)) for _ in range(rng.randint(2, 4))))
        folder.mkdir(parents=True, exist_ok=True)
        for _ in range(min(50, count - made)):
            stem = "_".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
            open(folder / f"{stem}_{made}.{rng.choice(['py', 'ts', 'md', 'json'])}", "w").close()
            made += 1
    (root / "billing").mkdir(exist_ok=True)
    (root / "billing" / "invoice.py").write_text("x\n")
    if git:
        for args in (["init", "-q"], ["add", "-A"]):
            subprocess.run(["git", *args], cwd=root, check=True)


def expected_rows(index: FileIndex, typed: str) -> list[str]:
    found = index.query(typed)
    assert found is not None
    return [m.path for m in found[:LIST_ROWS]]


def shows(screen: str, typed: str, rows: list[str]) -> bool:
    """The prompt shows `@typed` and the list's rows above it begin with `rows`, in order
    (a short list is padded with blank rows below it)."""
    # A row is the path, then blanks and, at the right edge, maybe the list's scrollbar.
    lines = [line.strip().split("  ")[0] for line in screen.splitlines()]
    prompt = next((n for n in range(len(lines) - 1, -1, -1) if lines[n].endswith("@" + typed)), None)
    if prompt is None or prompt < LIST_ROWS:
        return False
    shown = lines[prompt - LIST_ROWS : prompt]
    return shown[: len(rows)] == rows and (len(rows) > 0 or shown[0].startswith("no file matches"))


def clear(tmux: Tmux, name: str) -> None:
    """An empty prompt, and a moment before the next key: a key sent right behind ctrl+u
    is sometimes lost (it is so with any text in the prompt, `@` or not)."""
    tmux.key(name, "C-u")
    tmux.wait_for(name, lambda s: "Ask todo-agent" in s, timeout=STALL)
    time.sleep(0.1)


def one_round(tmux: Tmux, root: Path, todo_agent: str, index: FileIndex, run: int) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="mentions-home-"))
    script = home / "script.json"
    script.write_text('{"steps": []}')
    env = {"TODO_AGENT_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"), "COLORTERM": "truecolor"}
    name = f"mentions-{run}"
    launched = time.monotonic()
    pid = tmux.launch(name, [todo_agent, "--model", f"script:{script}"], cwd=root, env=env)
    keys: list[float] = []
    try:
        ready = tmux.wait_for(name, lambda s: " ready " in s, timeout=60)
        assert ready is not None, "the app never got ready"
        tmux.type(name, "@")
        first = expected_rows(index, "")
        listed = tmux.wait_for(name, lambda s: shows(s, "", first), timeout=120, interval=0.01)
        assert listed is not None, f"the listing never showed; expected {first}:\n{tmux.capture(name)}"
        figures: dict[str, Any] = {"launch_to_listing": listed - launched}
        plain: list[float] = []  # the same keys without `@`: what any key costs on this machine now
        clear(tmux, name)
        for n in range(1, len(PLAIN) + 1):
            sent = time.monotonic()
            tmux.type(name, PLAIN[n - 1])
            seen = tmux.wait_for(
                name, lambda s, t=PLAIN[:n]: any(x.strip() == t for x in s.splitlines()), timeout=STALL
            )
            plain.append((seen if seen is not None else sent + STALL) - sent)
        figures["plain_keys"] = plain
        for query in QUERIES:
            clear(tmux, name)
            for n in range(len(query) + 1):
                typed = query[:n]
                rows = expected_rows(index, typed)
                sent = time.monotonic()
                tmux.type(name, "@" if n == 0 else query[n - 1])
                seen = tmux.wait_for(name, lambda s, t=typed, r=rows: shows(s, t, r), timeout=STALL)
                keys.append((seen if seen is not None else sent + STALL) - sent)
        figures["keys"] = keys
        return figures
    finally:
        tmux.kill(name, pid)
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--git", action="store_true", help="make the tree a git repository")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--todo-agent", default=str(Path(sys.executable).parent / "todo-agent"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mentions-tree-"))
    tmux = Tmux(f"mentions-{os.getpid()}")
    try:
        started = time.monotonic()
        build_tree(root, args.files, git=args.git)
        print(f"tree of {args.files:,} files in {time.monotonic() - started:.1f} s ({'git' if args.git else 'plain'})")
        index = FileIndex(root)
        started = time.monotonic()
        index.build_now()
        print(f"listing built in this process: {time.monotonic() - started:.2f} s")
        rounds = [one_round(tmux, root, args.todo_agent, index, run) for run in range(args.rounds)]
    finally:
        tmux.close()
        shutil.rmtree(root, ignore_errors=True)
    keys = sorted(k for r in rounds for k in r["keys"])
    plain = sorted(k for r in rounds for k in r["plain_keys"])
    listing = [r["launch_to_listing"] for r in rounds]
    summary = {
        "load_average_after": os.getloadavg()[0],
        "files": args.files,
        "git": args.git,
        "launch_to_listing_s": [round(x, 2) for x in listing],
        "keys": len(keys),
        "plain_key_ms": {"p50": round(statistics.median(plain) * 1000, 1), "max": round(plain[-1] * 1000, 1)},
        "key_ms": {
            "min": round(keys[0] * 1000, 1),
            "p50": round(statistics.median(keys) * 1000, 1),
            "p95": round(keys[int(len(keys) * 0.95) - 1] * 1000, 1),
            "max": round(keys[-1] * 1000, 1),
        },
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=1))


if __name__ == "__main__":
    main()
