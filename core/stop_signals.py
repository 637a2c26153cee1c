"""SIGHUP and SIGTERM end todo-agent the way quitting does, not mid-step.

By default Python dies at once on either signal: a terminal window closed under the
TUI, `kill`, a CI job's timeout. Nothing after that point runs, so a `Bash` command in
progress (its own process group, so the terminal's hang-up does not reach it) is left
running with no one to stop it, and neither the session's end hooks nor the close of
the runtime happen. `on_stop_signals` asks the front end to stop instead: the TUI exits
as on ctrl+q, headless interrupts the turn as on ctrl+c; both then kill what is running
and save the history.

A signal the parent set to be ignored (`nohup todo-agent -p …`) stays ignored. After the
first signal, a SIGTERM ends the process at once (an escape hatch when a clean stop
hangs); further hang-ups are ignored, since one closed terminal sends several (the
kernel to the foreground group, the terminal emulator or tmux to the process).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

STOP_SIGNALS = (signal.SIGHUP, signal.SIGTERM) if hasattr(signal, "SIGHUP") else (signal.SIGTERM,)


def on_stop_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[signal.Signals], None]) -> Callable[[], None]:
    """Call `stop(sig)` on `loop` at the first SIGHUP or SIGTERM; then a SIGTERM kills.

    Returns the function that gives the signals back to their default."""
    caught: list[signal.Signals] = []
    stopping = False

    def release() -> None:
        while caught:
            loop.remove_signal_handler(caught.pop())

    def handle(sig: signal.Signals) -> None:
        nonlocal stopping
        if stopping:  # only a hang-up is still handled: the same closed terminal again
            return
        stopping = True
        if signal.SIGTERM in caught:
            caught.remove(signal.SIGTERM)
            loop.remove_signal_handler(signal.SIGTERM)  # back to the default: a second one is fatal
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
