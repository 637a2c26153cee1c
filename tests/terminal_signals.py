"""Start a child process with its signals as a terminal gives them, whatever started the suite.

A signal a process ignores stays ignored in every program it execs, so a suite run under
`nohup` (SIGHUP ignored) or as a background job of a script (SIGINT ignored) starts
todo-agent with those signals ignored too, and todo-agent rightly keeps them ignored. A
test that sends one of them must start the app as a terminal would: every stop signal
at its default. A handler of our own is reset to the default by exec, so while the
child starts, each ignored stop signal gets a handler that does nothing (for the suite
itself, still as good as ignored). A child forked by hand calls `terminal_defaults()`
before its exec instead.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

TERMINAL_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM)


def _ignore(signum: int, frame: object) -> None:
    """Ignore the signal, as SIG_IGN does, but in a way exec resets."""


@contextmanager
def as_from_a_terminal() -> Iterator[None]:
    """Processes started (fork/exec, Popen) inside this block get the stop signals at
    their defaults. Call it from the main thread (where `signal.signal` works)."""
    ignored = [sig for sig in TERMINAL_SIGNALS if signal.getsignal(sig) == signal.SIG_IGN]
    for sig in ignored:
        signal.signal(sig, _ignore)
    try:
        yield
    finally:
        for sig in ignored:
            signal.signal(sig, signal.SIG_IGN)


def terminal_defaults() -> None:
    """In a forked child before exec: every stop signal at its default."""
    for sig in TERMINAL_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
