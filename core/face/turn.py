"""`runtime.turn`: what the person starts and stops: a prompt's turn, a `!command`, a goal,
a compaction; a word sent while a turn runs; esc; what the next request holds; and what a
prompt may name on its way in (custom slash commands, `@` files).

A prompt gets a checkpoint first (`/rewind`), open while its turn runs; a goal is one
prompt to rewind to. The custom commands' files are read in a thread and never on an
event loop (`commands` gives the last reading and renews an old one for the next look)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncGenerator, Collection
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..events import Event
from ..goal import GoalLimits, GoalRun
from ..hooks.wiring import NotificationKind
from ..input.custom_commands import CommandSet, default_sources, load_commands, without
from ..input.file_index import FileIndex
from ..mcp.names import server_of
from ..settings import user_settings_path
from ..window.breakdown import Breakdown, Shape, breakdown

if TYPE_CHECKING:
    from ..runtime import Runtime

COMMANDS_MAX_AGE = 1.0
"""Seconds a reading of the custom command files is used before it is renewed."""


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Turn:
    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self.reserved_commands: frozenset[str] = frozenset()
        """Names the front end's own slash commands use: a custom command of that name loses."""
        self._renewing = threading.Lock()
        self._commands = self._read_commands()
        """When the custom commands' files were read, and what they held (`commands`)."""

    # --- turns -------------------------------------------------------------------------

    async def run(self, prompt: str) -> AsyncGenerator[Event, None]:
        """One turn; consume with `async with aclosing(runtime.turn.run(p))`. A custom
        command is expanded and `@` mentions are attached on the way (`core/input/`)."""
        async for event in self._checkpointed(prompt, self._rt.agent.run_turn(prompt)):
            yield event

    async def _checkpointed(self, prompt: str, turn: AsyncGenerator[Event, None]) -> AsyncGenerator[Event, None]:
        """`turn` under a checkpoint of its prompt, open while it runs."""
        prompts = self._rt.prompts
        await asyncio.to_thread(prompts.begin, prompt)
        try:
            async with aclosing(turn) as events:
                async for event in events:
                    yield event
        finally:
            prompts.end()

    def run_shell(self, command: str) -> AsyncGenerator[Event, None]:
        """The person's `!command`, run like a turn (esc kills it); its output goes into the history."""
        self._rt.file_index.mark_stale()
        return self._rt.agent.run_shell(command)

    def run_goal(self, goal: str) -> AsyncGenerator[Event, None]:
        """`/goal [TEXT]`, `--goal`: turns until every task is completed and every check
        passes, or a goal budget ends it (`core/goal.py`); empty: the current list is the goal."""
        rt = self._rt
        config = rt.config
        limits = GoalLimits(config.goal_max_turns, config.goal_max_tokens, config.goal_max_minutes)
        rt.goal = GoalRun(rt.agent, rt.store, goal, limits)
        # The whole goal is one prompt to `/rewind` to: its turns are the harness's.
        return self._checkpointed(goal or "/goal", rt.goal.run())

    @property
    def goal(self) -> GoalRun | None:
        """The latest goal (`goal.over` once it ended)."""
        return self._rt.goal

    def compact(self, focus: str = "") -> AsyncGenerator[Event, None]:
        """`/compact [focus]`, run like a turn."""
        return self._rt.agent.compact(focus)

    def compact_soon(self, focus: str = "") -> None:
        """`/compact` while a turn runs (its sub-agents at work): before its next request."""
        self._rt.agent.compact_soon(focus)

    def interrupt(self) -> bool:
        """End the running turn (and the goal it serves) as soon as possible. False when
        none runs in the core (the front end may still be waiting for its first event)."""
        rt = self._rt
        goal = rt.goal
        if goal is not None:
            goal.stop()
        if not rt.agent.busy:
            return goal is not None and not goal.over
        rt.agent.interrupt()
        return True

    @property
    def busy(self) -> bool:
        """Whether a turn (or a compaction) is running."""
        return self._rt.agent.busy

    def steer(self, text: str) -> None:
        """A word while the turn works: it goes with the turn's next request (`Steered`)."""
        self._rt.agent.steer(text)

    @property
    def steering(self) -> list[str]:
        """Words sent mid-turn that the turn ended without delivering (send them next)."""
        return self._rt.agent.steering

    async def notification(self, message: str, kind: NotificationKind, terminal_focused: bool) -> list[Event]:
        """Run the `Notification` hooks: the agent waits for the person (`kind` says why)."""
        return await self._rt.hooks.notification(message, kind, terminal_focused)

    def notifies(self, kind: NotificationKind) -> bool:
        """Whether any Notification hook would run for `kind`."""
        return bool(self._rt.hooks.runner.matching("Notification", kind))

    # --- what the next request holds -----------------------------------------------------

    def context_usage(self) -> tuple[int, int | None]:
        """Tokens in use and the window (the status line's `ctx 12k/128k (9%)`). With MCP
        servers, what the next request would take: their tools join between requests."""
        rt = self._rt
        used = rt.agent.context_tokens
        if rt.mcp_manager.configured:
            used = max(used, rt.agent.prompt_estimate())
        return used, rt.budget.window

    def context_breakdown(self) -> Breakdown:
        """What the next request holds, by part (`/context`, the `-p` json `usage.context`)."""
        rt = self._rt
        agent = rt.agent
        shape = Shape(
            instructions=[found.text.strip() for found in rt.system.instructions],
            plan_line=rt.plan_line,
            attachment=rt.is_attachment,
            server_of=server_of,
        )
        return breakdown(agent.request_messages(), agent.schemas(), rt.counter, rt.budget, shape)

    def fit_problem(self) -> str | None:
        """Why the window cannot hold the fixed prompt plus room to work, when it cannot."""
        rt = self._rt
        return rt.budget.prefix_problem(rt.agent.prefix_tokens())

    def summarize(self, tool: str, arguments: dict[str, Any]) -> str:
        """The short `⏺ Name(...)` form of a call, as the tool itself words it."""
        found = next((t for t in self._rt.tools if t.name == tool), None)
        try:
            return found.summarize(arguments) if found else ""
        except Exception:  # cosmetic only; a resumed history may hold odd arguments
            return ""

    # --- what a prompt may name -----------------------------------------------------------

    @property
    def files(self) -> FileIndex:
        """The workspace's files for `@` completion; built when first refreshed."""
        return self._rt.file_index

    def commands(self) -> CommandSet:
        """The custom slash commands as their files were last read. Never blocks an event
        loop: a reading older than a second is renewed in a thread, for the next look
        (without a loop, as a plain call, it is renewed at once)."""
        read_at, found = self._commands
        if time.monotonic() - read_at >= COMMANDS_MAX_AGE:
            if _on_event_loop():
                self._renew_commands_soon()
            else:
                read_at, found = self._read_commands()
        return without(found, self.reserved_commands)

    async def fresh_commands(self) -> CommandSet:
        """The custom commands as their files are now, read in a thread (a prompt naming
        one is expanded from the file as it is, and asks again if it changed)."""
        await asyncio.to_thread(self._read_commands)
        return without(self._commands[1], self.reserved_commands)

    def reserve_command_names(self, names: Collection[str]) -> None:
        """The front end's own commands (`/help`…): custom commands of those names are not used."""
        self.reserved_commands = frozenset(names)

    def _read_commands(self) -> tuple[float, CommandSet]:
        """Blocking: the command files read (`core/repo_files.py`), kept for `commands`."""
        sources = default_sources(self._rt.config.workspace, user_settings_path().parent)
        self._commands = (time.monotonic(), load_commands(sources))
        return self._commands

    def _renew_commands_soon(self) -> None:
        if self._renewing.locked():
            return

        def renew() -> None:
            with self._renewing:
                self._read_commands()

        threading.Thread(target=renew, name="todo-agent-commands", daemon=True).start()
