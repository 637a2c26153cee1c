"""`todo-agent --continue` of a 2,000-message session, and the session picker, in fresh processes.

Usage: python benchmarks/resume.py [--messages 2000] [--sessions 20] [--runs 3]

Builds `--sessions` sessions of `--messages` messages each in a temporary data dir (each
exchange: a prompt, a Read call, its 1.5 KB result, a Markdown answer), then, in a new
interpreter per run, measures:
- core: from process start to a `Runtime` resumed with `--continue` semantics (picking the
  latest session, reading it, repairing nothing, estimating its size); how many times any
  session file was opened, counted with an audit hook;
- app: from process start to the TUI's first painted frame with the resumed conversation
  loaded and the prompt focused (the point where typing works), `openai` still not imported;
- picker: `list_sessions` over all the sessions, and the bytes it read from them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
started = time.perf_counter()
from pathlib import Path
workspace, mode = Path(sys.argv[1]), sys.argv[2]
opens = []
def audit(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].endswith(".jsonl"):
        opens.append(args[0])
sys.addaudithook(audit)
from todo_agent.core.settings import Config
result = {}
if mode == "core":
    from todo_agent.core.model.scripted import ScriptedModel
    from todo_agent.core.runtime import Runtime
    config = Config(workspace=workspace, model="script:x")
    imported = time.perf_counter()
    runtime = Runtime.create(config, continue_latest=True, model=ScriptedModel([]))
    result = {"elapsed": time.perf_counter() - started, "create": time.perf_counter() - imported,
              "messages": len(runtime.sessions.history),
              "tokens": runtime.turn.context_usage()[0], "opens": len(opens), "files": len(set(opens))}
elif mode == "picker":
    from todo_agent.core.session.directory import list_sessions
    t = time.perf_counter()
    infos = list_sessions(workspace)
    result = {"elapsed": time.perf_counter() - t, "sessions": len(infos), "opens": len(opens)}
else:
    from todo_agent.core.model.scripted import ScriptedModel
    from todo_agent.tui.app import TodoAgentApp
    app = TodoAgentApp.for_config(Config(workspace=workspace, model="script:x"), continue_latest=True,
                                  model=ScriptedModel([]))
    def ready() -> bool:
        screens = [s for s in app.screen_stack if type(s).__name__ == "MainScreen"]
        return bool(screens) and bool(screens[0].conversation.entries) and app.focused is not None
    def check() -> None:
        if ready():
            result.update(elapsed=time.perf_counter() - started, openai="openai" in sys.modules,
                          entries=len(app.screen_stack[-1].conversation.entries))
            app.exit()
        else:
            app.call_after_refresh(check)
    app.call_after_refresh(check)
    app.run(headless=True, size=(120, 36))
print(json.dumps(result))
"""

ANSWER = (
    "Here is what I found in `module_{n}.py`:\n\n- the loader reads **every** file twice\n- `parse()` ignores errors\n"
)


def build(home: Path, workspace: Path, messages: int, sessions: int) -> None:
    import os

    os.environ["TODO_AGENT_HOME"] = str(home)
    from todo_agent.core.session.transcript import Session

    for s in range(sessions):
        session = Session.create(workspace)
        session.id = f"{session.id}-{s:02d}"
        session.path = session.path.with_name(f"{session.id}.jsonl")
        for n in range(messages // 4):
            read = {"name": "Read", "arguments": '{"file_path": "m.py"}'}
            call = {"id": f"c{n}", "type": "function", "function": read}
            session.append({"role": "user", "content": f"Look at module {n} and tell me what is wrong"})
            session.append({"role": "assistant", "content": None, "tool_calls": [call]})
            session.append({"role": "tool", "tool_call_id": f"c{n}", "content": "     1\tdef parse(text):\n" * 70})
            session.append({"role": "assistant", "content": ANSWER.format(n=n)})
        session.close()


def run(home: Path, workspace: Path, mode: str, runs: int) -> list[dict[str, object]]:
    env = {"TODO_AGENT_HOME": str(home), "PATH": "/usr/bin:/bin"}
    out = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(workspace), mode], capture_output=True, text=True, check=True, env=env
        )
        out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "project"
        workspace.mkdir()
        build(home, workspace, args.messages, args.sessions)
        size = sum(p.stat().st_size for p in home.rglob("*.jsonl")) / args.sessions
        core = run(home, workspace, "core", args.runs)
        app = run(home, workspace, "app", args.runs)
        picker = run(home, workspace, "picker", args.runs)
    ms = lambda rows: statistics.median(float(r["elapsed"]) for r in rows) * 1000  # noqa: E731
    print(f"{args.sessions} sessions of {args.messages} messages ({size / 1e6:.1f} MB each):")
    print(
        f"  --continue, core: {ms(core):.0f} ms from process start to a resumed Runtime, of which "
        f"{statistics.median(float(r['create']) for r in core) * 1000:.0f} ms creating it (finding the latest "
        f"session, reading and checking it, estimating its {core[0]['messages']} messages at "
        f"~{core[0]['tokens']:,} tokens); session files opened: {core[0]['opens']} (one read, the rest headers)"
    )
    print(
        f"  --continue, app: {ms(app):.0f} ms from process start to the first frame with the conversation "
        f"loaded and the prompt focused ({app[0]['entries']} entries); openai imported by then: {app[0]['openai']}"
    )
    print(f"  picker: {ms(picker):.1f} ms to list {picker[0]['sessions']} sessions; files opened: {picker[0]['opens']}")


if __name__ == "__main__":
    main()
