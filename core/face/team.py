"""`runtime.team`: the session's sub-agents as the front ends see them: their rows, one
stopped, what one did, how each ended."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..agents.state import AgentRow
from ..session.directory import SessionError
from ..session.transcript import Session, TranscriptItem

if TYPE_CHECKING:
    from ..runtime import Runtime


class TeamFace:
    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    def rows(self) -> list[AgentRow]:
        """This session's sub-agents, running and finished, for the panel."""
        return self._rt.team_runner.rows()

    def stop(self, agent_id: str) -> bool:
        """Stop one sub-agent (its running command is killed); its siblings go on."""
        return self._rt.team_runner.stop(agent_id)

    def transcript(self, agent_id: str) -> list[TranscriptItem] | None:
        """What a sub-agent of this session did, read from its transcript; None if unknown."""
        path = self._rt.team_runner.transcript_path(agent_id)
        if path is None:
            return None
        try:
            return Session.view(path).transcript
        except SessionError:
            return None

    def results(self) -> list[dict[str, Any]]:
        """Every sub-agent of this session with how it ended (for `-p --output-format json`)."""
        return [
            {
                "agent_id": r.agent_id,
                "agent_type": r.agent_type,
                "description": r.description,
                "task_id": r.task_id,
                "status": r.status,
                **{k: v for k, v in r.details.items() if k not in ("agent_id", "task_id", "status")},
            }
            for r in self._rt.team_runner.records()
        ]
