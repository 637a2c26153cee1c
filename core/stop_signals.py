"""SIGHUP and SIGTERM end todo-agent the way quitting does, not mid-step.

By default Python dies at once on either signal: a terminal window closed under the
TUI, `kill`, a CI job's timeout. Nothing after that point runs, so a `Bash` command in
progress (its own process group, so the terminal's hang-up does not reach it) is left
running with no one to stop it, and neither the session's end hooks nor the close of
the runtime happen. `on_stop_signals` asks the front end to stop instead: the TUI exits
as on ctrl+q, headless interrupts the turn as on ctrl+c; both then kill what is running
and save the history.

A signal the parent set to be ignored (`nohup todo-agent -p …`) stays ignored. The first
signal removes the handlers, so a second one ends the process at once (an escape hatch
when a clean stop hangs).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

STOP_SIGNALS = (signal.SIGHUP, signal.SIGTERM) if hasattr(signal, "SIGHUP") else (signal.SIGTERM,)


def on_stop_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[signal.Signals], None]) -> Callable[[], None]:
    """Call `stop(sig)` on `loop` at the first SIGHUP or SIGTERM, then let the next one kill.

    Returns the function that gives the signals back to their default (called by the
    first signal too)."""
    caught: list[signal.Signals] = []

    def release() -> None:
        while caught:
            loop.remove_signal_handler(caught.pop())

    def handle(sig: signal.Signals) -> None:
        release()
        stop(sig)

    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_DFL:
            continue
        try:
            loop.add_signal_handler(sig, handle, sig)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows' loops; a loop outside the main thread
            break
        caught.append(sig)
    return release


def exit_status(sig: signal.Signals) -> int:
    """What a shell reports for a process ended by `sig` (129 for SIGHUP, 143 for SIGTERM)."""
    return 128 + int(sig)
