"""What the plan (the task list) costs in prompt tokens over a long scripted run.

Usage: python benchmarks/plan_cost.py [--json PATH]

The real `todo-agent -p` runs in a subprocess (`--permission-mode bypassPermissions`,
`--context-window 32768`) against `tests/fake_openai.py` with `context_limit=32768`, in a
fresh workspace and a private HOME / TODO_AGENT_HOME, once per task-tool set:

- `--tasks v2`: the model plans with three TaskCreate calls, then sets each task
  in_progress before its work and completed after it (TaskUpdate);
- `--tasks v1`: a TodoWrite with the whole list at the same points;
- `--tasks off`: no task calls (the app sends no task tools and no reminders).

The work between those points is the same 41 tool calls in all three, one a response:
three tasks over a small package copied from this interpreter's standard library
(colorsys, bisect, fnmatch, glob, sched, reprlib) with a generated 36-test unittest
module; Read of whole files (3,900-10,500 characters as numbered) and of two parts; Bash
running find, grep, diff, cat, a Python snippet and the unittest run (11-55 lines each);
Grep, Glob, and 14 Edit calls that must succeed (the edited files are checked afterwards).
Each call has an id of the same length in every variant, and the script is positional:
the reminders the app appends change nothing in it. The run must make at least 40
requests with tools and pass the compaction threshold at least once (else it stops and
says so); the summary requests (the ones without `tools`) get a fixed summary.

Counted from the request bodies the server received, requests with tools only (the
agent's own; summary requests are reported apart, refused ones are not counted): prompt
tokens as the server reported them (`count_tokens`: messages and tools as JSON, 4
characters a token), and the plan's share, in the same unit (characters of JSON / 4),
summed over every request: (a) the task tools' schemas in `tools`, (b) `<system-reminder>`
user messages other than the compaction summary, (c) the assistant messages' task-tool
calls, (d) the `tool` messages answering them. The target: the plan at most 5 % of the
v2 run's prompt tokens (PASS/MISS is printed; nothing fails).
"""

from __future__ import annotations

import argparse
import bisect
import colorsys
import fnmatch
import glob
import json
import os
import reprlib
import sched
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from fake_openai import count_tokens, run_in_thread  # noqa: E402

WINDOW = 32_768
TARGET = 0.05
MIN_REQUESTS = 40
VARIANTS = ("v2", "v1", "off")
TASK_TOOLS = frozenset({"TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TodoWrite"})
COMPACTED = "<system-reminder>\nThis conversation was compacted"
REMINDER = "<system-reminder>"
PROMPT = "Tidy the shades package: annotate convert.py, document sorted_list.py, check match.py; keep the tests green."
SUMMARY: dict[str, Any] = {
    "text": "## Goal\nTidy the shades package in three tasks.\n## Done so far\nThe files read and edited above.\n"
    "## Remaining\nThe unfinished tasks on the list."
}
FINAL = "All three tasks are done: convert.py is annotated, sorted_list.py documented, match.py checked."
SOURCES: dict[str, ModuleType] = {
    "src/shades/convert.py": colorsys,
    "src/shades/sorted_list.py": bisect,
    "src/shades/match.py": fnmatch,
    "src/shades/paths.py": glob,
    "src/shades/schedule.py": sched,
    "src/shades/short_repr.py": reprlib,
}
SUBJECTS = ("Annotate convert.py", "Document sorted_list.py", "Check match.py")
ACTIVE = ("Annotating convert.py", "Documenting sorted_list.py", "Checking match.py")
COLOURS = ("red", "green", "blue", "cyan", "magenta", "yellow", "grey", "navy", "olive", "teal", "plum", "coral")
RGB = {
    "red": (1.0, 0.0, 0.0),
    "green": (0.0, 0.5, 0.0),
    "blue": (0.0, 0.0, 1.0),
    "cyan": (0.0, 1.0, 1.0),
    "magenta": (1.0, 0.0, 1.0),
    "yellow": (1.0, 1.0, 0.0),
    "grey": (0.5, 0.5, 0.5),
    "navy": (0.0, 0.0, 0.5),
    "olive": (0.5, 0.5, 0.0),
    "teal": (0.0, 0.5, 0.5),
    "plum": (0.87, 0.63, 0.87),
    "coral": (1.0, 0.5, 0.31),
}

Call = dict[str, Any]


def call(name: str, **arguments: Any) -> Call:
    return {"name": name, "arguments": arguments}


def unittest_source() -> str:
    """tests/test_shades.py: 36 round trips (12 colours through YIQ, HLS and HSV)."""
    lines = [
        "import sys",
        "import unittest",
        "",
        'sys.path.insert(0, "src")',
        "",
        "from shades import convert",
        "",
        f"RGB = {RGB!r}",
        "",
        "",
        "class RoundTrip(unittest.TestCase):",
    ]
    for space in ("yiq", "hls", "hsv"):
        for colour in COLOURS:
            lines += [
                f"    def test_{space}_{colour}(self):",
                f"        there = convert.rgb_to_{space}(*RGB[{colour!r}])",
                f"        back = convert.{space}_to_rgb(*there)",
                f"        for got, want in zip(back, RGB[{colour!r}]):",
                "            self.assertAlmostEqual(got, want, places=6)",
                "",
            ]
    lines += ["", 'if __name__ == "__main__":', "    unittest.main()", ""]
    return "\n".join(lines)


def sources() -> dict[str, str]:
    """Every file of the workspace: the package, its tests, and the upstream copies `diff -u` compares with."""
    files: dict[str, str] = {}
    for path, module in SOURCES.items():
        origin = Path(str(module.__file__))
        files[path] = files[f"upstream/{origin.name}"] = origin.read_text(encoding="utf-8")
    files["src/shades/__init__.py"] = '"""Colour conversions, sorted lists and file patterns."""\n'
    files["tests/test_shades.py"] = unittest_source()
    return files


# The edits: (file, old, new), each old string occurring exactly once when it is applied.
ANNOTATE = [
    ("def rgb_to_yiq(r, g, b):", "def rgb_to_yiq(r: float, g: float, b: float) -> tuple[float, float, float]:"),
    ("def yiq_to_rgb(y, i, q):", "def yiq_to_rgb(y: float, i: float, q: float) -> tuple[float, float, float]:"),
    ("def rgb_to_hls(r, g, b):", "def rgb_to_hls(r: float, g: float, b: float) -> tuple[float, float, float]:"),
    ("def hls_to_rgb(h, l, s):", "def hls_to_rgb(h: float, l: float, s: float) -> tuple[float, float, float]:"),
    ("def rgb_to_hsv(r, g, b):", "def rgb_to_hsv(r: float, g: float, b: float) -> tuple[float, float, float]:"),
    ("def hsv_to_rgb(h, s, v):", "def hsv_to_rgb(h: float, s: float, v: float) -> tuple[float, float, float]:"),
]
DOCUMENT = [
    (
        "def insort_right(a, x, lo=0, hi=None, *, key=None):\n",
        "def insort_right(a, x, lo=0, hi=None, *, key=None):\n    # Keeps `a` sorted: x goes after any equal items.\n",
    ),
    (
        "def insort_left(a, x, lo=0, hi=None, *, key=None):\n",
        "def insort_left(a, x, lo=0, hi=None, *, key=None):\n    # Keeps `a` sorted: x goes before any equal items.\n",
    ),
    (
        "def bisect_right(a, x, lo=0, hi=None, *, key=None):\n",
        "def bisect_right(a, x, lo=0, hi=None, *, key=None):\n    # The index after the last item <= x.\n",
    ),
    (
        "def bisect_left(a, x, lo=0, hi=None, *, key=None):\n",
        "def bisect_left(a, x, lo=0, hi=None, *, key=None):\n    # The index of the first item >= x.\n",
    ),
]
CHECK = [
    ("def fnmatch(name, pat):", "def fnmatch(name: str, pat: str) -> bool:"),
    ("def filter(names, pat):", "def filter(names, pat: str) -> list:"),
    ("def fnmatchcase(name, pat):", "def fnmatchcase(name: str, pat: str) -> bool:"),
    ("def translate(pat):", "def translate(pat: str) -> str:"),
]
PATTERNS = """PYTHONPATH=src python3 - <<'EOF'
from shades.match import fnmatchcase, translate
for pattern in ("*.py", "*.[ch]", "[!_]*.py", "?onvert.py", "s*/*.py", "*_list.py", "test_*", "[a-m]*", "**", "*.txt"):
    for name in ("convert.py", "sorted_list.py", "test_shades.py"):
        print(f"{pattern:<12} {name:<16} {fnmatchcase(name, pattern)!s:<6} {translate(pattern)}")
EOF"""
TEST = "PYTHONPATH=src python3 -m unittest -v tests.test_shades 2>&1 | sed 's/in [0-9.]*s$/in Ns/'"


def edits(path: str, changes: list[tuple[str, str]]) -> list[Call]:
    """One Edit call per change, as a model makes them."""
    return [call("Edit", file_path=path, old_string=old, new_string=new) for old, new in changes]


def work() -> list[list[Call]]:
    """Each task's work, one tool call per model response; the same in every variant."""
    convert, sorted_list, match = "src/shades/convert.py", "src/shades/sorted_list.py", "src/shades/match.py"
    first = [
        call("Bash", command="find src tests upstream -type f | sort && wc -c src/shades/*.py tests/*.py"),
        call("Glob", pattern="**/*.py"),
        call("Read", file_path=convert),
        call("Grep", pattern="def rgb_to|def .*_to_rgb", path="src"),
        call("Read", file_path="tests/test_shades.py"),
        call("Bash", command=TEST),
        *edits(convert, ANNOTATE[:3]),
        call("Bash", command='grep -n "def \\|return" src/shades/convert.py src/shades/sorted_list.py'),
        *edits(convert, ANNOTATE[3:]),
        call("Bash", command="diff -u upstream/colorsys.py src/shades/convert.py"),
        call("Bash", command=TEST),
    ]
    second = [
        call("Read", file_path=sorted_list),
        call("Read", file_path="src/shades/schedule.py"),
        call("Bash", command='grep -rn "bisect\\|insort" src/shades | head -60'),
        call("Grep", pattern="key=None", path=sorted_list),
        *edits(sorted_list, DOCUMENT[:2]),
        call("Read", file_path="src/shades/short_repr.py"),
        *edits(sorted_list, DOCUMENT[2:]),
        call("Read", file_path="upstream/bisect.py", offset=1, limit=40),
        call("Bash", command="diff -u upstream/bisect.py src/shades/sorted_list.py"),
        call("Bash", command="python3 -m py_compile src/shades/*.py && cat -n src/shades/sorted_list.py | head -50"),
        call("Bash", command=TEST),
    ]
    third = [
        call("Read", file_path=match),
        call("Read", file_path="src/shades/paths.py"),
        call("Bash", command='grep -n "fnmatch\\|translate" src/shades/*.py'),
        call("Grep", pattern="import", path="src/shades"),
        *edits(match, CHECK[:2]),
        call("Bash", command=PATTERNS),
        *edits(match, CHECK[2:]),
        call("Bash", command="diff -u upstream/fnmatch.py src/shades/match.py"),
        call("Read", file_path=match, offset=1, limit=80),
        call("Glob", pattern="src/shades/*.py"),
        call("Bash", command=TEST),
    ]
    return [first, second, third]


def expected_files() -> dict[str, str]:
    """The three edited files as the run must leave them (every Edit applied once)."""
    files = sources()
    out = {}
    for path, changes in (
        ("src/shades/convert.py", ANNOTATE),
        ("src/shades/sorted_list.py", DOCUMENT),
        ("src/shades/match.py", CHECK),
    ):
        text = files[path]
        for old, new in changes:
            if text.count(old) != 1:
                raise SystemExit(f"{path}: {old!r} occurs {text.count(old)} times in this Python's copy, not once")
            text = text.replace(old, new)
        out[path] = text
    return out


def todos(*statuses: str) -> Call:
    items = [{"content": s, "status": st, "activeForm": a} for s, st, a in zip(SUBJECTS, statuses, ACTIVE, strict=True)]
    return call("TodoWrite", todos=items)


def plan_points(variant: str) -> list[list[Call]]:
    """The task-tool responses at the five points: plan, start 1, 1→2, 2→3, finish 3."""
    if variant == "v2":
        return [
            [
                call("TaskCreate", subject=s, description=f"{s}; the tests stay green.", activeForm=a)
                for s, a in zip(SUBJECTS, ACTIVE, strict=True)
            ],
            [call("TaskUpdate", taskId="1", status="in_progress")],
            [call("TaskUpdate", taskId="1", status="completed"), call("TaskUpdate", taskId="2", status="in_progress")],
            [call("TaskUpdate", taskId="2", status="completed"), call("TaskUpdate", taskId="3", status="in_progress")],
            [call("TaskUpdate", taskId="3", status="completed")],
        ]
    if variant == "v1":
        return [
            [todos("pending", "pending", "pending")],
            [todos("in_progress", "pending", "pending")],
            [todos("completed", "in_progress", "pending")],
            [todos("completed", "completed", "in_progress")],
            [todos("completed", "completed", "completed")],
        ]
    return [[] for _ in range(5)]


def script(variant: str) -> list[dict[str, Any]]:
    """The fake server's responses: the plan points around the three tasks' work, then the answer."""
    points = plan_points(variant)
    responses: list[dict[str, Any]] = []

    def answer(calls: list[Call], prefix: str) -> dict[str, Any]:
        """A response making `calls`, with ids of the same length in every variant."""
        return {"tool_calls": [{**one, "id": f"call_{prefix}{n}"} for n, one in enumerate(calls)]}

    for point in (0, 1):
        if points[point]:
            responses.append(answer(points[point], f"plan{point}_"))
    for number, task in enumerate(work()):
        responses += [answer([one], f"work{number}_{step:02d}_") for step, one in enumerate(task)]
        if points[number + 2]:
            responses.append(answer(points[number + 2], f"plan{number + 2}_"))
    responses.append({"text": FINAL})
    return responses


@dataclass
class Figures:
    variant: str
    requests: int = 0
    """The agent's requests (with tools) the server answered."""
    summary_requests: int = 0
    compactions: int = 0
    refused: int = 0
    prompt_tokens: int = 0
    summary_prompt_tokens: int = 0
    plan_tokens: float = 0.0
    schema_tokens: float = 0.0
    reminder_tokens: float = 0.0
    call_tokens: float = 0.0
    result_tokens: float = 0.0
    reminders: int = 0
    """Reminders the app appended (each counted once, however many requests carry it)."""
    reminders_carried: int = 0
    """Reminder messages summed over the requests."""
    task_calls: int = 0
    task_calls_carried: int = 0
    schema_chars: dict[str, int] = field(default_factory=dict)
    system_chars: int = 0
    """The system message's JSON characters (the task-tool line differs by variant)."""
    seconds: float = 0.0

    @property
    def share(self) -> float:
        return self.plan_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def is_reminder(message: dict[str, Any]) -> bool:
    """A `<system-reminder>` user message that is not the compaction summary."""
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, str)
        and content.startswith(REMINDER)
        and not content.startswith(COMPACTED)
    )


def measure(figures: Figures, bodies: list[dict[str, Any]], refused: set[int]) -> None:
    """Add up the prompt and the plan's parts over the agent's requests (see the docstring)."""
    call_ids: set[str] = set()
    for index, body in enumerate(bodies):
        if not body.get("tools"):
            figures.summary_requests += 1
            figures.summary_prompt_tokens += count_tokens(body)
            continue
        if index in refused:
            figures.refused += 1
            continue
        figures.requests += 1
        figures.prompt_tokens += count_tokens(body)
        for tool in body["tools"]:
            name = tool.get("function", {}).get("name")
            if name in TASK_TOOLS:
                size = len(json.dumps(tool))
                figures.schema_chars[name] = size
                figures.schema_tokens += size / 4
        messages: list[dict[str, Any]] = body["messages"]
        figures.system_chars = len(json.dumps(messages[0])) if messages[0].get("role") == "system" else 0
        last_answer = max((n for n, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        plan_ids: set[str] = set()  # the task calls of the latest assistant message
        for position, message in enumerate(messages):
            role = message.get("role")
            if is_reminder(message):
                figures.reminders += position > last_answer  # appended since the model last answered
                figures.reminders_carried += 1
                figures.reminder_tokens += len(json.dumps(message)) / 4
            elif role == "assistant":
                plan_ids = set()
                for tool_call in message.get("tool_calls") or []:
                    if tool_call.get("function", {}).get("name") in TASK_TOOLS:
                        plan_ids.add(tool_call["id"])
                        figures.task_calls_carried += 1
                        figures.call_tokens += len(json.dumps(tool_call)) / 4
                call_ids |= plan_ids
            elif role == "tool" and message.get("tool_call_id") in plan_ids:
                figures.result_tokens += len(json.dumps(message)) / 4
    figures.task_calls = len(call_ids)
    figures.plan_tokens = figures.schema_tokens + figures.reminder_tokens + figures.call_tokens + figures.result_tokens


def run(variant: str, scratch: Path) -> Figures:
    """One scripted run of the real CLI in `scratch` (a fresh directory: its path is in the
    system prompt, so every variant's is as long); SystemExit with the CLI's stderr if it fails."""
    workspace, home = scratch / "project", scratch / "home"
    for path, text in sources().items():
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text(text, encoding="utf-8")
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TODO_AGENT_"))}
    env.update(
        HOME=str(home),
        TODO_AGENT_HOME=str(home / "todo-agent"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local/state"),
        OPENAI_API_KEY="x",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    executable = Path(sys.executable).with_name("todo-agent")
    command = [str(executable)] if executable.exists() else [sys.executable, "-m", "todo_agent.frontends.cli"]
    thread = run_in_thread(script(variant), context_limit=WINDOW, without_tools=SUMMARY)
    started = time.monotonic()
    try:
        result = subprocess.run(
            [
                *command,
                *("-p", PROMPT, "--permission-mode", "bypassPermissions", "--tasks", variant),
                *("--base-url", thread.base_url, "--model", "bench", "--context-window", str(WINDOW)),
            ],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        thread.stop()
    server = thread.server
    figures = Figures(variant, seconds=time.monotonic() - started)
    problems = server.problems()
    if result.returncode != 0 or problems or result.stdout.strip() != FINAL:
        raise SystemExit(
            f"--tasks {variant}: exit {result.returncode}; server: {'; '.join(problems) or 'clean'}\n"
            f"stdout: {result.stdout.strip()[-500:]}\nstderr: {result.stderr.strip()[-3000:]}"
        )
    for path, text in expected_files().items():
        if (workspace / path).read_text(encoding="utf-8") != text:
            raise SystemExit(f"--tasks {variant}: {path} is not as the edits leave it (an Edit failed)")
    figures.compactions = sum(
        line.startswith("todo-agent: compacted the conversation") for line in result.stderr.splitlines()
    )
    measure(figures, list(server.requests), set(server.refused_requests))
    if figures.requests < MIN_REQUESTS or not figures.summary_requests:
        raise SystemExit(
            f"--tasks {variant}: {figures.requests} requests with tools and {figures.summary_requests} summary "
            f"requests; the run is meant to make at least {MIN_REQUESTS} and compact at least once"
        )
    return figures


def table(results: list[Figures]) -> str:
    header = (
        "| variant | requests | compactions (summary requests) | prompt tokens | plan tokens | plan share "
        "| plan tools' schemas (chars) |"
    )
    rows = [header, "|---|---|---|---|---|---|---|"]
    for f in results:
        schemas = ", ".join(f"{name} {size:,}" for name, size in f.schema_chars.items())
        schemas = f"{sum(f.schema_chars.values()):,} ({schemas})" if schemas else "0"
        rows.append(
            f"| `--tasks {f.variant}` | {f.requests} | {f.compactions} ({f.summary_requests}) | {f.prompt_tokens:,} "
            f"| {f.plan_tokens:,.0f} | {f.share:.1%} | {schemas} |"
        )
    return "\n".join(rows)


def parts(results: list[Figures]) -> str:
    header = (
        "| variant | schemas | reminders (sent, carried) | task calls (made, carried) | their results "
        "| summary requests' prompt tokens | run (s) |"
    )
    rows = [header, "|---|---|---|---|---|---|---|"]
    for f in results:
        rows.append(
            f"| `--tasks {f.variant}` | {f.schema_tokens:,.0f} | {f.reminder_tokens:,.0f} "
            f"({f.reminders}, {f.reminders_carried}) | {f.call_tokens:,.0f} ({f.task_calls}, {f.task_calls_carried}) "
            f"| {f.result_tokens:,.0f} | {f.summary_prompt_tokens:,} | {f.seconds:.1f} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    args = parser.parse_args()
    print("$ python " + " ".join(shlex.quote(a) for a in sys.argv), flush=True)
    results = []
    for variant in VARIANTS:
        with tempfile.TemporaryDirectory(prefix="plan-cost-") as scratch:
            results.append(run(variant, Path(scratch)))
    print(f"\nThe plan's cost: one scripted run per task-tool set, a {WINDOW:,}-token window (tokens: JSON / 4)\n")
    print(table(results))
    print("\nThe plan's tokens by part, summed over the agent's requests:\n")
    print(parts(results))
    v2, off = results[0], results[-1]
    print(
        f"\n--tasks v2 minus --tasks off: {v2.prompt_tokens - off.prompt_tokens:+,} prompt tokens "
        f"({v2.requests - off.requests:+} requests)"
    )
    for f in results[:-1]:
        line = (f.system_chars - off.system_chars) / 4
        print(
            f"--tasks {f.variant}: the system prompt's task-tool line, not counted above: {line:,.0f} tokens a "
            f"request, {line * f.requests:,.0f} over the run"
        )
    refused = ", ".join(f"{f.variant} {f.refused}" for f in results)
    print(f"requests the server refused as over the window (not counted): {refused}")
    verdict = "PASS" if v2.share <= TARGET else "MISS"
    print(f"target: the plan at most {TARGET:.0%} of the v2 run's prompt tokens: {v2.share:.1%} {verdict}")
    if args.json:
        data = [{**asdict(f), "plan_share": f.share} for f in results]
        Path(args.json).write_text(json.dumps({"window": WINDOW, "target": TARGET, "variants": data}, indent=2))
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
