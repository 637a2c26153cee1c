"""The `todo-agent` command: parse flags, then run headless (`-p`) or the full-screen app.

The headless path never imports Textual, and nothing here imports `openai`: both are
imported only when needed, so `--version` and the first frame stay fast.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from todo_agent.core import __version__
from todo_agent.core.permissions.modes import MODES
from todo_agent.core.sandbox import MODES as SANDBOX_MODES
from todo_agent.core.settings import EFFORTS, WIRE_APIS, Config, SettingsError, load_config
from todo_agent.core.stop_signals import exit_status, on_stop_signals

NO_MODEL = (
    "no model configured: set OPENAI_API_KEY (OpenAI), or pass --base-url for a local server "
    "(Ollama: http://localhost:11434/v1, llama.cpp: http://localhost:8080/v1), or try --demo"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="todo-agent",
        description="A terminal coding agent that keeps a task list and stays on plan.",
    )
    parser.add_argument(
        "-p", "--print", dest="prompt", metavar="PROMPT", help="run one turn headless and print the answer"
    )
    parser.add_argument("--model", help="model name, or script:PATH for a scripted conversation")
    parser.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://localhost:11434/v1")
    parser.add_argument(
        "--reasoning-effort", choices=EFFORTS, help="how hard a reasoning model thinks (sent as reasoning_effort)"
    )
    parser.add_argument(
        "--wire-api", choices=WIRE_APIS, help="chat, responses (OpenAI's Responses API) or auto (the default)"
    )
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        help="run the model's commands in bubblewrap: workspace-write, read-only, auto or off (the default)",
    )
    parser.add_argument("--permission-mode", choices=MODES, help="default, acceptEdits, plan or bypassPermissions")
    parser.add_argument(
        "--tasks", choices=("v1", "v2", "off"), help="task tools: v2 TaskCreate/Update/List/Get, v1 TodoWrite, off none"
    )
    parser.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text")
    parser.add_argument(
        "--goal",
        action="store_true",
        help="with -p: the prompt is a goal; work until every task is completed and every check passes (exit 6: "
        "a goal budget ran out first)",
    )
    parser.add_argument(
        "--max-turns", type=_positive, metavar="N", help="stop a turn after N model requests (default 200)"
    )
    parser.add_argument(
        "--context-window", type=_window, metavar="TOKENS", help="the model's context window (default: ask the server)"
    )
    parser.add_argument(
        "-c", "--continue", dest="continue_latest", action="store_true", help="resume the latest session"
    )
    parser.add_argument("--resume", nargs="?", const="", metavar="ID", help="resume a session (no ID: pick one)")
    parser.add_argument(
        "--task-list",
        metavar="NAME",
        help="work the shared task list NAME (with every todo-agent that names it) instead of the session's own",
    )
    parser.add_argument(
        "--allow-project-hooks",
        action="store_true",
        help="run the hooks in .todo-agent/settings.toml without asking (needed for them in -p mode)",
    )
    parser.add_argument(
        "--mcp-config",
        metavar="FILE",
        help="MCP servers from FILE (.mcp.json-style JSON, or TOML with [mcp_servers.NAME]); it wins over the others",
    )
    parser.add_argument(
        "--allow-project-mcp",
        action="store_true",
        help="start the MCP servers of .mcp.json and .todo-agent/settings.toml without asking (needed in -p mode)",
    )
    parser.add_argument("--demo", action="store_true", help="run the bundled scripted demo (offline, no key)")
    parser.add_argument(
        "--acp",
        action="store_true",
        help="serve the Agent Client Protocol on stdin/stdout (for editors: Zed, Neovim, …)",
    )
    parser.add_argument("--version", action="version", version=f"todo-agent {__version__}")
    parser.epilog = "todo-agent export SESSION [-o FILE] writes a session as Markdown, JSON or HTML (export --help)."
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _window(text: str) -> int:
    value = _positive(text)
    if value < 512:
        raise argparse.ArgumentTypeError("must be at least 512 tokens")
    return value


def export_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="todo-agent export",
        description="Write a session as Markdown (to stdout, or FILE), or as JSON or HTML by FILE's name.",
    )
    parser.add_argument(
        "session", metavar="SESSION", help="a session id as /resume lists them for this directory, or a session file"
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write to FILE: .json the records, .html one page, else Markdown"
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    # The one subcommand, only as the very first word: a prompt (`-p export`) or any flag
    # form stays the app's, as before subcommands existed.
    exporting = argv[:1] == ["export"]
    args = export_parser().parse_args(argv[1:]) if exporting else build_parser().parse_args(argv)
    try:
        code = run_export(args) if exporting else run(args)
    except KeyboardInterrupt:  # the turn has already repaired and saved its history
        print("todo-agent: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:  # `todo-agent -p … | head -1`: the reader left; leave quietly
        code = 141
    if code == 141:  # stdout's reader is gone: the flush at exit must not complain either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code)


def run_export(args: argparse.Namespace) -> int:
    """`todo-agent export SESSION [-o FILE]`: read the session's files (no agent, no model)."""
    from todo_agent.core.export.formats import ExportError, render, save
    from todo_agent.core.export.source import from_disk
    from todo_agent.core.session.directory import SessionError, find_session

    workspace = Path.cwd()
    try:
        given = Path(args.session).expanduser()
        if not given.is_file() and (os.sep in args.session or given.suffix == ".jsonl"):
            return fail(f"no session file at {given}")
        path = given if given.is_file() else find_session(workspace, args.session)
        source = from_disk(path, workspace)
        if args.output is None:
            sys.stdout.buffer.write(render(source, "markdown").encode("utf-8"))
            sys.stdout.flush()
            return 0
        saved = save(source, Path(args.output).expanduser())
    except (SessionError, ExportError) as exc:
        return fail(str(exc))
    print(f"todo-agent: {saved.line()}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.demo:
        with demo_workspace() as (workspace, model, prompt):
            return run_in(args, workspace, model, prompt)
    return run_in(args, Path.cwd(), args.model, None)


def run_in(args: argparse.Namespace, workspace: Path, model: str | None, initial_prompt: str | None) -> int:
    flags = setting_flags(args, model)
    if args.acp:
        if args.prompt is not None or args.goal or args.resume is not None or args.continue_latest:
            return fail("--acp takes no prompt, --goal, --resume or --continue: the client opens and loads sessions")
        from todo_agent.frontends.acp.server import run_acp

        # `--demo`: every session works in the one fresh copy of the demo project, whatever
        # folder the client names (the scripted demo knows only that project).
        return run_acp({**flags, "demo": args.demo}, demo_workspace=workspace if args.demo else None)
    try:
        config = load_config(workspace, flags=flags, headless=args.prompt is not None)
    except SettingsError as exc:  # running without the deny rules it may hold is worse than not running
        return fail(f"{exc}\nFix that settings file (or move it away): todo-agent does not start without its rules.")
    config.demo = args.demo
    if args.goal and args.prompt is None:
        return fail("--goal goes with -p PROMPT (the prompt is the goal); in the app, type /goal TEXT")
    if args.prompt is not None:
        return run_print(config, args)
    from todo_agent.tui.app import run_app

    try:
        return run_app(config, resume=args.resume, continue_latest=args.continue_latest, initial_prompt=initial_prompt)
    except Exception as exc:  # the session and script errors are imported only when there is one
        from todo_agent.core.model.scripted import ScriptError
        from todo_agent.core.session.directory import SessionError

        if isinstance(exc, SessionError | ScriptError):
            return fail(str(exc))
        raise


def setting_flags(args: argparse.Namespace, model: str | None) -> dict[str, Any]:
    """The flags that become settings (None: not given), for the app, `-p` and `--acp`."""
    return {
        "model": model,
        "base_url": args.base_url,
        "permission_mode": args.permission_mode,
        "tasks": args.tasks,
        "max_turns": args.max_turns,
        "context_window": args.context_window,
        "reasoning_effort": args.reasoning_effort,
        "wire_api": args.wire_api,
        "sandbox": args.sandbox,
        "allow_project_hooks": args.allow_project_hooks or None,
        "mcp_config": args.mcp_config,
        "allow_project_mcp": args.allow_project_mcp or None,
        "task_list": args.task_list,
    }


def run_print(config: Config, args: argparse.Namespace) -> int:
    from todo_agent.core.model.base import ModelError
    from todo_agent.core.model.scripted import ScriptError
    from todo_agent.core.runtime import Runtime
    from todo_agent.core.session.directory import SessionError
    from todo_agent.frontends.headless import run_headless

    if not config.has_model:
        return fail(NO_MODEL)
    if args.resume == "":
        return fail("--resume needs a session id in -p mode (run `todo-agent --resume` to pick one)")
    try:
        runtime = Runtime.create(config, resume=args.resume, continue_latest=args.continue_latest)
        runtime.warm_up()
    except ModelError as exc:
        return fail(exc.message)
    except (SessionError, ScriptError) as exc:
        return fail(str(exc))
    if runtime.window_source != "default" and (problem := runtime.turn.fit_problem()) is not None:
        runtime.close()  # the window cannot hold the fixed prompt: say so instead of a 400
        return fail(problem)
    for notice in runtime.server_notices:
        if notice.level == "warning":
            print(f"todo-agent: {notice.text}", file=sys.stderr)
    # Bytes, decoded leniently: a prompt piped from a file in another encoding must not crash.
    raw = sys.stdin.buffer.read() if args.prompt == "-" else os.fsencode(args.prompt)
    prompt = raw.decode("utf-8", "replace")
    if "\ufffd" in prompt and "\ufffd" not in raw.decode("utf-8", "ignore"):
        print("todo-agent: the prompt is not valid UTF-8; its undecodable bytes became U+FFFD", file=sys.stderr)
    try:
        return asyncio.run(
            _until_stopped(run_headless(runtime, prompt, args.output_format, sys.stdout, sys.stderr, goal=args.goal))
        )
    except SessionError as exc:  # the transcript cannot be written (a full or read-only disk)
        print(f"todo-agent: {exc}", file=sys.stderr)
        return 1
    finally:
        runtime.close()


async def _until_stopped(run: Coroutine[Any, Any, int]) -> int:
    """`run`, cancelled by SIGHUP or SIGTERM as ctrl+c cancels it: the turn stops, a
    running command is killed, the history is saved; the exit status names the signal."""
    task = asyncio.current_task()
    assert task is not None
    stopped: list[signal.Signals] = []

    def stop(sig: signal.Signals) -> None:
        stopped.append(sig)
        task.cancel()

    release = on_stop_signals(asyncio.get_running_loop(), stop)
    try:
        code = await run
    except asyncio.CancelledError:
        if not stopped:
            raise
        code = 0
    finally:
        release()
    if stopped:
        print(f"todo-agent: stopped by {stopped[0].name}", file=sys.stderr)
        return exit_status(stopped[0])
    return code


def fail(message: str) -> int:
    print(f"todo-agent: {message}", file=sys.stderr)
    return 2


@contextmanager
def demo_workspace() -> Iterator[tuple[Path, str, str | None]]:
    """`--demo`: a fresh copy of the demo project to work in, gone again on exit.

    Yields the project directory (also the current directory meanwhile), the `script:`
    model spec and the opening prompt. The demo's sessions are kept in the same
    temporary directory, so a demo leaves nothing behind, not even a session to resume.
    """
    workspace, model, prompt = prepare_demo()
    root = workspace.parent
    before, home = Path.cwd(), os.environ.get("TODO_AGENT_HOME")
    os.environ["TODO_AGENT_HOME"] = str(root / "home")
    os.chdir(workspace)
    try:
        yield workspace, model, prompt
    finally:
        os.chdir(before)
        if home is None:
            os.environ.pop("TODO_AGENT_HOME", None)
        else:
            os.environ["TODO_AGENT_HOME"] = home
        shutil.rmtree(root, ignore_errors=True)


def prepare_demo() -> tuple[Path, str, str | None]:
    """Copy the bundled demo project to a fresh temporary directory.

    Returns the project directory, the `script:` model spec and the script's opening prompt.
    """
    bundle = resources.files("todo_agent.examples")
    target = Path(tempfile.mkdtemp(prefix="todo-agent-demo-")) / "demo_project"
    with resources.as_file(bundle.joinpath("demo_project")) as source:
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    with resources.as_file(bundle.joinpath("demo_script.json")) as script:
        script_copy = target.parent / "demo_script.json"
        shutil.copyfile(script, script_copy)
    prompt = json.loads(script_copy.read_text(encoding="utf-8")).get("prompt")
    return target, f"script:{script_copy}", prompt if isinstance(prompt, str) else None


if __name__ == "__main__":  # `python -m todo_agent.frontends.cli`, where no console script is installed
    main()
