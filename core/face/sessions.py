"""`runtime.sessions`: which session the runtime works in and what it holds: its id and
file, the conversation to draw and the history the model sees, the others to resume, a
new one, the SessionStart hooks, and `/rewind` to an earlier prompt with `/redo`."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from ..changes.prompt_rewind import Outcome, PromptPlan, PromptRow, Scope
from ..events import Event
from ..hooks.wiring import SessionSource
from ..model.base import Message
from ..session.directory import SessionInfo, list_sessions
from ..session.transcript import TranscriptItem

if TYPE_CHECKING:
    from ..runtime import Runtime


class Sessions:
    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    @property
    def id(self) -> str:
        return self._rt.session.id

    @property
    def path(self) -> Path:
        """The session's transcript file (`/export` writes beside it and reads its records)."""
        return self._rt.session.path

    @property
    def transcript(self) -> list[TranscriptItem]:
        """The whole conversation to draw, compactions marked (the model sees `history`)."""
        return self._rt.session.transcript

    @property
    def history(self) -> list[Message]:
        """The messages the model's next request starts from."""
        return self._rt.agent.history

    def keep(self, by: str) -> None:
        """Write the session's file now, before anything is said (a new session waits for its
        first message, so a launch quit at once leaves none behind): a client that was
        handed its id (an ACP editor, `by`) may load it later."""
        self._rt.session.note({"type": "opened", "by": by})

    def tool_status(self, call_id: str) -> str | None:
        """How a past tool call ended (`ok`, `denied`, …), for drawing a resumed transcript."""
        return self._rt.session.tool_status.get(call_id)

    def saved(self) -> list[SessionInfo]:
        """The workspace's sessions, newest first (`/resume`)."""
        return list_sessions(self._rt.config.workspace)

    def new(self) -> None:
        """`/new`: a fresh session (and task list); refused while a turn runs."""
        self._rt.switch_session(None)

    def resume(self, session_id: str) -> None:
        """Work in an earlier session of this workspace (a prefix of its id will do); raises
        `SessionError` for an unknown one, RuntimeError while a turn runs."""
        self._rt.switch_session(session_id)

    async def start(self, source: SessionSource) -> list[Event]:
        """Run the SessionStart hooks (start-up, `/new` → clear, resume); their context goes
        to the model with the next prompt. Returns their events for the front end to show."""
        return await self._rt.hooks.session_start(source)

    # --- `/rewind` to a prompt, `/redo` ---------------------------------------------------

    def prompts(self) -> list[PromptRow]:
        """The prompts since the last compaction, newest first, with what came after each."""
        return self._rt.prompts.prompts()

    async def rewind_plan(self, checkpoint_id: str) -> PromptPlan:
        """What rewinding to just before that prompt would do, file by file (read in a thread)."""
        return await asyncio.to_thread(self._rt.prompts.plan, checkpoint_id)

    async def rewind_to(self, plan: PromptPlan, scope: Scope, chosen: Collection[str]) -> Outcome:
        """`/rewind`: to just before `plan`'s prompt; refused while a turn runs."""
        rt = self._rt
        if rt.agent.busy:
            raise RuntimeError("cannot rewind while a turn is running")
        return await asyncio.to_thread(rt.prompts.apply, plan, scope, chosen)

    async def redo(self) -> Outcome:
        """`/redo`: undo the latest `/rewind`; refused while a turn runs."""
        rt = self._rt
        if rt.agent.busy:
            raise RuntimeError("cannot redo while a turn is running")
        return await asyncio.to_thread(rt.prompts.redo)
