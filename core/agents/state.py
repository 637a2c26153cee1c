"""What the front ends show of a sub-agent: plain values, no behaviour.

Apart from the team (`team.py`) so that the task panel can name them without loading
the engine: a leaf module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Phase = Literal["waiting", "running", "done"]


@dataclass(frozen=True)
class AgentRow:
    """One sub-agent as the panel row of its task shows it."""

    agent_id: str
    task_id: str | None
    phase: Phase
    activity: str
    """What it does now: its task's activeForm, the tool it runs (`Read posts.py`), `thinking`."""
    started: float
    """When it started running (wall clock; 0 while it waits for a slot)."""
    elapsed: float
    """Seconds it ran, once done."""
    tokens: int
    status: str = ""
    """Once done: completed, partial, failed or cancelled."""
