"""Textual's terminal driver, made safe for a terminal that goes away.

A closed terminal window sends SIGHUP and SIGCONT, and the app then quits as on ctrl+q
(`core/stop_signals.py`). Textual's POSIX driver takes any SIGCONT as the end of a
ctrl+z suspension and restarts its output: a second writer thread beside the first.
Once the terminal was gone that writer died on its first write (EIO), its queue filled,
and quitting waited on it forever: the process hung instead of exiting. So here:

- a SIGCONT restarts the output only after the driver's own suspension (ctrl+z);
- writes to a terminal that is gone are dropped, so the writer never dies and quitting
  never waits on it.

And one key: a terminal without the kitty keyboard protocol (tmux, most xterms) sends
`alt+enter` as ESC then CR, which Textual's parser reads as a plain `enter`; here it is
`alt+enter`, so "send it now" (`tui/widgets/prompt.py`) works there too (`_KeyParser`).

`TodoAgentApp.get_driver_class` uses this in place of `LinuxDriver` (which Textual uses
on macOS too); Windows keeps its own driver. It relies on two attributes of Textual's
driver (`_file`, `_must_signal_resume`); if a Textual release renames them, the driver
still works as Textual's own does.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable
from typing import Any, TextIO, cast

from textual import events
from textual._xterm_parser import XTermParser
from textual.drivers import linux_driver
from textual.drivers.linux_driver import LinuxDriver

_GONE = frozenset({errno.EIO, errno.EPIPE, errno.ENXIO, errno.EBADF})
"""What writing to a terminal that hung up or was closed fails with. Anything else
(EAGAIN on a terminal someone made non-blocking) is raised, as Textual's own driver does."""


class _KeyParser(XTermParser):
    """Textual's parser, but ESC CR is `alt+enter` (Textual drops the alt for enter)."""

    def _sequence_to_key_events(self, sequence: str, alt: bool = False) -> Iterable[events.Key]:
        if alt and sequence == "\r":
            yield events.Key("alt+enter", None)
            return
        yield from super()._sequence_to_key_events(sequence, alt)


# The driver's input thread builds its parser by this module-level name (Textual 8); set
# once, for the one driver this app uses on POSIX terminals.
linux_driver.XTermParser = _KeyParser  # type: ignore[attr-defined]


class _TerminalOutput:
    """The terminal as the driver's writer thread sees it: a write to a terminal that is
    gone is dropped, as is everything after it."""

    def __init__(self, file: TextIO) -> None:
        self._file = file
        self.gone = False

    def write(self, text: str) -> None:
        if self.gone:
            return
        try:
            self._file.write(text)
        except OSError as exc:
            if exc.errno not in _GONE:
                raise
            self.gone = True

    def flush(self) -> None:
        if self.gone:
            return
        try:
            self._file.flush()
        except OSError as exc:
            if exc.errno not in _GONE:
                raise
            self.gone = True

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return self._file.isatty()


class TerminalDriver(LinuxDriver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        file = getattr(self, "_file", None)
        if file is not None:
            self._file = cast(Any, _TerminalOutput(file))  # typed as Textual's file; used as one

    def _sigcont_application(self, *args: Any) -> None:
        if getattr(self, "_must_signal_resume", True):  # set by the driver's own SIGTSTP
            super()._sigcont_application(*args)
