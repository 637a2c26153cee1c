"""The per-call context every tool receives. Tools never reach for globals."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..events import Event
    from ..lifecycle import Gate, TaskChange
    from ..sandbox import Sandbox
    from ..session.transcript import Session
    from ..tasks.model import AgentRef
    from ..tasks.store import TaskStore
    from .channel import FileChannel
    from .images import Image
    from .ledger import FileLedger
    from .shells import Shells

HIDDEN_ENV = frozenset({"OPENAI_API_KEY"})
"""Variables a command never sees by default: the model's API key is not the command's business."""


@dataclass
class ToolContext:
    """What one tool call may see and do.

    `emit()` queues an event; the loop forwards queued events after the whole tool
    batch, coalesced, so tools never talk to the UI directly.
    """

    call_id: str
    workspace: Path
    session: Session | None = None
    tasks: TaskStore | None = None
    """The session's task list, which the task tools change; None when there is none."""
    hidden_env: frozenset[str] = HIDDEN_ENV
    """Environment variables a command the tools run never sees (the model's API key)."""
    pending_events: list[Event] = field(default_factory=list)
    read_denied: Callable[[str], bool] = field(default=lambda path: False)
    """Whether a deny rule covers reading this path: search tools leave it out of results."""
    task_gates: Sequence[Gate[TaskChange]] | None = None
    """Asked before a task tool creates or completes a task (TaskCreated/TaskCompleted hooks)."""
    agent: AgentRef | None = None
    """The sub-agent making the call (None: the main agent): the task tools let it touch
    only its own task and subtasks."""
    files: FileLedger | None = None
    """What this agent last read of each file: Edit and Write refuse a file that changed
    since, or that another agent's task holds (`ledger.py`)."""
    channel: FileChannel | None = None
    """Where Read, Edit and Write take and put a file's text when not the disk (an ACP
    client's editor, `channel.py`); None: the disk."""
    live: Callable[[Event], None] | None = None
    """Shows an event now, while the call still runs (a sub-agent's progress); None where
    nothing is shown live. `emit` is for what the call leaves behind, shown after the batch."""
    interrupted_output: str = ""
    """What a call cut short by an interrupt had done: set before it re-raises, it becomes
    its result instead of a bare "cancelled" (a sub-agent's partial work)."""
    host_allowed: Callable[[str], bool] = field(default=lambda host: False)
    """Whether an allow rule names this very host (`WebFetch(domain:localhost)`): only then
    may WebFetch reach a private or local address."""
    ask_model: Callable[[str, str], Awaitable[str]] | None = None
    """A separate short request to the session's model (system text, user text) → its answer;
    raises `ToolError`. WebFetch answers its `prompt` from a page with it."""

    command_denied: Callable[[str], str] = field(default=lambda command: "")
    """Why a deny rule refuses running this command now (a task's check), or ""."""
    check_timeout: float = 600.0
    """Seconds a task's check may run before it is killed (the Bash tool's longest)."""
    sandbox: Sandbox | None = None
    """Where the model's commands run (`core/sandbox.py`); None: unconfined."""
    shells: Shells | None = None
    """The session's background commands (`shells.py`); None where there are none."""
    images: list[Image] | None = None
    """Where an image the call returns waits for the agent's next request (`images.py`);
    None: the model takes no images (Read says what an image file is instead)."""

    def emit(self, event: Event) -> None:
        self.pending_events.append(event)

    def resolve(self, path: str) -> Path:
        """A model-given path: relative ones resolve against the workspace root."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.workspace / p
