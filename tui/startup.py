"""Building the core in a thread while the first frame is up (see `screens/starting.py`).

`Runtime.create` imports the agent core (tools, hooks, permissions) and opens the
session (file I/O, a lock): a good part of start-up, kept off the event loop and out of
the way of the first frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from todo_agent.core.runtime import Runtime


class RuntimeStarter:
    """Runs `create` once in a thread of its own; its result or error is kept here.

    `done` is called on the event loop that called `start`, if that loop still runs. If
    a prompt is waiting then (`hurry()`: sent on the start screen, or given on the command
    line), the thread goes on to warm the runtime up (`Runtime.warm_up`: the server asked,
    the model client built), so that the prompt does not wait for the main screen to
    start that; the main screen's own warm-up waits for this one and reports its error,
    if any. With nothing waiting, the main screen starts the warm-up after its first
    frame: `import openai` (~0.4 s of CPU) would otherwise share the interpreter lock
    with drawing that frame, and a resumed conversation would come up twice as slowly.
    The thread is joined by whoever owns the app (`run_app`), so a person who quits
    before the core is ready leaves no thread behind and the runtime is still closed.
    """

    def __init__(self, create: Callable[[], Runtime]) -> None:
        self._create = create
        self._thread: threading.Thread | None = None
        self.runtime: Runtime | None = None
        self.error: BaseException | None = None

    def start(self, done: Callable[[], object], hurry: Callable[[], bool] = lambda: True) -> None:
        loop = asyncio.get_running_loop()

        def build() -> None:
            try:
                self.runtime = self._create()
            except Exception as exc:  # shown by the app, raised again by `run_app`
                self.error = exc
            with contextlib.suppress(RuntimeError):  # the app has already quit
                loop.call_soon_threadsafe(done)
            if self.runtime is not None and not loop.is_closed() and hurry():
                with contextlib.suppress(Exception):  # said by the main screen's warm-up
                    self.runtime.warm_up()

        self._thread = threading.Thread(target=build, name="todo-agent-start", daemon=True)
        self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()
