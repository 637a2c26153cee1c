"""The `Approver` the core awaits: one modal at a time, answered through a Future.

The agent calls `approve(request)`; the broker waits its turn (requests queue in order),
asks the attached presenter to show the modal, and returns the answer the modal resolves
the Future with. A turn cancelled while it waits closes its modal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest

Resolve = Callable[[ApprovalAnswer | None], None]

NO_UI = ApprovalAnswer("no")
"""The answer when nothing can show the question (the app has not started or has closed)."""


class Presenter(Protocol):
    """Shows one approval request; returns a function that closes it unanswered."""

    def __call__(self, request: ApprovalRequest, resolve: Resolve, queued: int) -> Callable[[], None]: ...


class ApprovalBroker:
    """Implements `core.permissions.Approver` for the TUI. Requests from several agents
    (sub-agents ask too) wait in one queue; `on_waiting` hears how many wait, so the open
    dialog can say how many more are behind it."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._presenter: Presenter | None = None
        self.waiting = 0
        self.on_waiting: Callable[[int], None] | None = None

    def attach(self, presenter: Presenter | None) -> None:
        self._presenter = presenter

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.waiting += 1
        if self.on_waiting is not None:
            self.on_waiting(self.waiting)
        try:
            async with self._lock:
                presenter = self._presenter
                if presenter is None:
                    return NO_UI
                future: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()

                def resolve(answer: ApprovalAnswer | None) -> None:
                    if not future.done():
                        future.set_result(answer if answer is not None else NO_UI)

                close = presenter(request, resolve, self.waiting - 1)
                try:
                    return await future
                finally:
                    if future.cancelled() or not future.done():  # interrupted, or the app closes
                        future.cancel()
                        close()
        finally:
            self.waiting -= 1
            if self.on_waiting is not None:
                self.on_waiting(self.waiting)
