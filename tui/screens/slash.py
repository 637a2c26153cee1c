"""Carrying out a slash command on the main screen (`/todos`, `/mode plan`, `/model NAME`…).

The table of commands (names, usage, `/help`) is `tui/commands.py`; this module reads a
parsed command's argument, refuses what cannot be done, and asks the screen (`CommandHost`)
for the rest. What is screen state (a turn, the drawn session) stays on the screen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from todo_agent.core.export.formats import ExportError, Saved, beside, save
from todo_agent.core.export.source import exported, plan_rows
from todo_agent.core.permissions.modes import MODES
from todo_agent.core.runtime import Runtime
from todo_agent.core.sandbox import SandboxMode
from todo_agent.core.settings import EFFORTS
from todo_agent.core.tasks.history import render as render_history
from todo_agent.core.tasks.render import render_tasks
from todo_agent.core.window.breakdown import render_breakdown

from ..commands import SlashCommand, help_text, parse
from ..transcript import Entry, NoticeEntry, PlainEntry


class CommandHost(Protocol):
    """What a slash command may ask of the screen."""

    runtime: Runtime
    tasks_seen: str
    """The task list as last shown to the person, rendered."""

    async def say(self, entry: Entry) -> None:
        """Add `entry` to the conversation."""

    async def new_session(self) -> None: ...

    def choose_session(self) -> None: ...

    def open_shells(self) -> None:
        """`/shells`: the background commands (`tui/screens/shells.py`)."""

    def open_rewind(self) -> None:
        """`/rewind`: back to before an earlier prompt (`tui/screens/prompt_rewind.py`)."""

    async def redo(self) -> None:
        """`/redo`: undo the latest `/rewind`."""

    def start_compact(self, focus: str) -> None: ...

    async def start_goal(self, goal: str) -> None:
        """`/goal [TEXT]`: turns until the plan is proven (`core/goal.py`)."""

    async def cycle_mode(self) -> None: ...

    async def show_mode(self) -> None:
        """The status line's mode and a notice, after the mode changed."""

    def show_sandbox(self) -> None:
        """The status line's `⛶`, after `/sandbox` switched it."""

    def switch_model(self, spec: str) -> bool:
        """Use the model `spec` from now on; False when a running turn forbids it."""

    def quit(self) -> None: ...

    def set_effort(self, effort: str) -> None:
        """The reasoning effort from the next request on, and in the status line."""

    def manage_mcp(self, action: str, name: str) -> object:
        """`/mcp reconnect|enable|disable NAME` or `/mcp trust`, in the background."""

    def custom_slash_commands(self) -> list[SlashCommand]:
        """The person's own commands (`.claude/commands/…`), as the table lists commands."""

    def copy_to_clipboard(self, text: str) -> None:
        """Put `text` on the clipboard, through the terminal (OSC 52)."""

    def in_background(self, job: Callable[[], Awaitable[None]], name: str) -> object:
        """Run a command's slow part (`job`, named `name` if it fails) while the screen goes
        on taking keys and drawing."""


async def run_slash(host: CommandHost, text: str) -> None:
    """Carry out `text` if it is a known command (`parse`); anything else is ignored."""
    parsed = parse(text)
    if parsed is None:
        return
    command, argument = parsed
    read = _READ_ARGUMENT.get(command.name)
    if read is not None:
        await read(host, argument)
        return
    match command.name:
        case "/new":
            await host.new_session()
        case "/resume":
            host.choose_session()
        case "/shells":
            host.open_shells()
        case "/rewind":
            host.open_rewind()
        case "/redo":
            await host.redo()
        case "/compact":
            host.start_compact(argument)
        case "/goal":
            await host.start_goal(argument)
        case "/help":
            await host.say(PlainEntry(help_text(host.custom_slash_commands()), "help"))
        case "/quit":
            host.quit()


async def _todos(host: CommandHost, argument: str) -> None:
    runtime = host.runtime
    if argument == "history":
        await host.say(PlainEntry(render_history(runtime.plan.versions(), skipped=runtime.plan.history_skipped)))
    elif argument:
        await host.say(NoticeEntry(f"/todos takes no argument but history, not {argument!r}", "warning"))
    else:
        host.tasks_seen = render_tasks(runtime.plan.tasks(), spend=False)
        listing = render_tasks(runtime.plan.tasks(), runtime.plan.task_files())
        cost = runtime.plan.spend().line()
        await host.say(PlainEntry(f"{listing}\n{cost[0].upper()}{cost[1:]}."))


async def _context(host: CommandHost, argument: str) -> None:
    if argument:
        await host.say(NoticeEntry(f"/context takes no argument, not {argument[:40]!r}", "warning"))
        return
    runtime = host.runtime
    await host.say(PlainEntry(render_breakdown(runtime.turn.context_breakdown(), runtime.plan.spend()), "context"))


async def _effort(host: CommandHost, argument: str) -> None:
    levels = ", ".join((*EFFORTS, "default"))
    level = argument.strip().lower()
    if level and level not in (*EFFORTS, "default"):
        await host.say(NoticeEntry(f"/effort takes one of {levels}, not {argument[:40]!r}", "warning"))
        return
    if level:
        host.set_effort("" if level == "default" else level)
    effort = host.runtime.reasoning_effort or "the server's default"
    await host.say(NoticeEntry(f"reasoning effort: {effort} (levels: {levels})"))


async def _mcp(host: CommandHost, argument: str) -> None:
    action, _, name = argument.partition(" ")
    name = name.strip()
    if not argument:
        await host.say(PlainEntry(mcp_listing(host.runtime)))
    elif action in ("reconnect", "enable", "disable") and name:
        host.manage_mcp(action, name)
    elif action == "trust" and not name:
        host.manage_mcp("trust", "")
    else:
        usage = "usage: /mcp, /mcp reconnect NAME, /mcp enable NAME, /mcp disable NAME, /mcp trust"
        await host.say(NoticeEntry(usage, "warning"))


_SOURCES = {
    "flag": "--mcp-config",
    "project": ".todo-agent/settings.toml",
    "mcp.json": ".mcp.json",
    "user": "user settings",
}


def mcp_listing(runtime: Runtime) -> str:
    """Each server: state (tools, or why it failed and its last stderr lines), where it came from."""
    servers = runtime.mcp.servers
    if not servers:
        return (
            "No MCP servers configured. Add them to .mcp.json (as Claude Code writes it), [mcp_servers.NAME] in "
            ".todo-agent/settings.toml or your user settings, or pass --mcp-config FILE."
        )
    connected, total = runtime.mcp.counts()
    lines = [f"MCP servers ({connected}/{total} connected)"]
    width = max(len(s.name) for s in servers) + 2
    for server in servers:
        if server.state == "connected":
            state = f"connected · {len(server.tools)} tool{'s' if len(server.tools) != 1 else ''}"
        elif server.state == "starting":
            state = "starting…"
        else:
            state = server.state + (f": {server.reason}" if server.reason else "")
        lines.append(f"  {server.name:<{width}}{state}  ({_SOURCES[server.spec.source]})")
        if server.state == "connected":
            continue
        pad = " " * (width + 2)
        lines.append(f"{pad}{server.spec.as_written()}")
        if server.state == "failed":
            lines += [f"{pad}stderr: {line}" for line in server.stderr.tail(5)]
        if server.log_path is not None and server.log_path.exists():
            lines.append(f"{pad}log: {server.log_path}")
    lines.append("/mcp reconnect NAME · enable NAME · disable NAME · trust (start the project's servers)")
    return "\n".join(lines)


async def _mode(host: CommandHost, argument: str) -> None:
    if not argument:
        await host.cycle_mode()
    elif mode := next((m for m in MODES if m.lower() == argument.lower()), None):
        host.runtime.set_mode(mode)
        await host.show_mode()
    else:
        await host.say(NoticeEntry(f"Unknown mode {argument!r}; use one of {', '.join(MODES)}.", "warning"))


async def _model(host: CommandHost, argument: str) -> None:
    runtime = host.runtime
    config = runtime.config
    if argument and config.demo:  # the demo promises nothing leaves the machine
        await host.say(
            NoticeEntry("the demo runs a scripted model; start todo-agent without --demo to use a real one", "warning")
        )
        return
    if argument and not argument.startswith("script:") and not (config.api_key or config.base_url):
        await host.say(  # every request would fail: say so now, not at the first one
            NoticeEntry(
                f"cannot use {argument}: {config.api_key_env} is not set and there is no --base-url; "
                f"set one and start todo-agent again (the model stays {runtime.model_name})",
                "warning",
            )
        )
        return
    if argument:
        host.switch_model(argument)
    await host.say(NoticeEntry(f"model: {runtime.model_name}"))


CLIPBOARD = "copied to the clipboard through the terminal (in tmux: set -g set-clipboard on)"


async def _export(host: CommandHost, argument: str) -> None:
    """`/export [FILE]`: the session as Markdown, or as the name says (`.json`, `.html`),
    walked and written in a thread while the screen goes on (`in_background`). No FILE:
    Markdown on the clipboard and in a file beside the session. A relative FILE is the
    workspace's; one outside it is fine (the person named it)."""
    runtime = host.runtime
    named = argument.strip()
    if len(named) > 1 and named[0] == named[-1] and named[0] in "\"'":
        named = named[1:-1]
    session_path, workspace = runtime.sessions.path, runtime.config.workspace
    # Taken now, on the event loop: a turn may go on appending while the thread writes.
    transcript, plan = list(runtime.sessions.transcript), plan_rows(runtime.plan.tasks(), runtime.plan.task_files())

    def write() -> Saved:
        target = workspace / Path(named).expanduser() if named else beside(session_path)
        return save(exported(session_path, transcript, runtime.sessions.tool_status, plan, workspace=workspace), target)

    async def finish() -> None:
        try:
            saved = await asyncio.to_thread(write)
        except ExportError as exc:
            await host.say(NoticeEntry(str(exc), "warning"))
            return
        if not named:
            host.copy_to_clipboard(saved.text)
        await host.say(NoticeEntry(saved.line() if named else f"{saved.line()}; {CLIPBOARD}"))

    host.in_background(finish, "/export")


_SANDBOX_WORDS: dict[str, SandboxMode] = {
    "on": "workspace-write",
    "workspace-write": "workspace-write",
    "read-only": "read-only",
    "off": "off",
    "auto": "auto",
}


async def _sandbox(host: CommandHost, argument: str) -> None:
    sandbox = host.runtime.sandbox
    word = argument.strip().lower()
    if word and word not in _SANDBOX_WORDS:
        await host.say(NoticeEntry(f"/sandbox takes on, off, auto or read-only, not {argument[:40]!r}", "warning"))
        return
    if word:
        sandbox.set_mode(_SANDBOX_WORDS[word])
        host.show_sandbox()
    unable = sandbox.active == "off" and sandbox.mode != "off"
    await host.say(NoticeEntry("\n".join(sandbox.describe()), "warning" if unable else "info"))


_READ_ARGUMENT: dict[str, Callable[[CommandHost, str], Awaitable[None]]] = {
    "/context": _context,
    "/export": _export,
    "/sandbox": _sandbox,
    "/todos": _todos,
    "/mode": _mode,
    "/model": _model,
    "/effort": _effort,
    "/mcp": _mcp,
}
"""Commands whose argument is read here before the screen is asked."""
