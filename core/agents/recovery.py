"""Claims left behind by a process that died (kill -9, a crash, a closed machine).

A claim names the session and the process that runs its sub-agent. When a session is
opened, its own list's claims are all dead: the session lock says no other process has it
open, so whatever ran its sub-agents is gone. On a shared list (`--task-list`) another
process's claim is dead only when that process no longer exists. Each dead claim is given
back with the attempt recorded (`lost`, and the files its task's change record shows).
"""

from __future__ import annotations

import os
import time

from ..changes.log import ChangeLog
from ..pipes import process_alive
from ..tasks.model import Attempt, Claim, Task
from ..tasks.store import TaskStore


def release_dead_claims(store: TaskStore, changes: ChangeLog, session_id: str) -> tuple[Task, ...]:
    """Give back every dead claim on `store`; the tasks released."""

    def dead(claim: Claim) -> bool:
        return claim.session == session_id or (claim.pid != os.getpid() and not process_alive(claim.pid))

    def attempt(task: Task) -> Attempt:
        files = tuple(f"{c.path}  +{c.added} −{c.removed}" for c in changes.files_of(task.id))
        claim = task.claim
        return Attempt(
            claim.agent if claim else "?",
            "lost",
            "its process ended while it worked (killed or crashed); what it changed is listed",
            files,
            time.time(),
            claim.session if claim else "",
        )

    return store.release_dead(dead, attempt)
