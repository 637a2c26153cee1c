"""Telling the person that todo-agent waits for them, when they are in another window.

When an approval opens, or a turn ends after more than `LONG_TURN` seconds, and the
terminal does not have focus (the terminal reports focus changes; Textual keeps
`App.app_focus`), todo-agent writes to the terminal:

- the bell (`\\a`), which most terminals turn into a sound, a flash or an urgent window;
- with `[ui] notify = "auto"` (the default), a desktop notification: OSC 777 (`notify`)
  on foot and rxvt-unicode, OSC 9 elsewhere (iTerm2, kitty, WezTerm, Ghostty, Windows
  Terminal); inside tmux it is wrapped for tmux to pass on (tmux needs
  `set -g allow-passthrough on` for that, `all` from a window in the background, and
  `set -g focus-events on` to report focus);
- the window title, `todo-agent: <what it waits for>`, after saving the old one on the
  terminal's title stack, which is restored when the terminal has focus again (and on exit).

`notify = "bell"` leaves out the desktop notification; `"off"` writes nothing. A terminal
that never reports focus is taken to have it: nothing is written. Text in these
sequences is ours (a tool's name, a reason) and is cut to printable characters anyway.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from todo_agent.core.settings import NotifyMode

LONG_TURN = 10.0
"""Seconds after which the end of a turn is worth telling."""
BEL = "\x07"
_MAX_TEXT = 120


def _clean(text: str) -> str:
    """Printable text for inside an escape sequence: no controls, no `;` (OSC 777's separator)."""
    text = "".join(c if c.isprintable() else " " for c in text).replace(";", ",")
    return " ".join(text.split())[:_MAX_TEXT]


def desktop_notification(title: str, body: str, env: Mapping[str, str]) -> str:
    """The escape sequence that shows a desktop notification in this terminal."""
    term = env.get("TERM", "")
    if term.startswith(("foot", "rxvt-unicode")):
        sequence = f"\x1b]777;notify;{_clean(title)};{_clean(body)}{BEL}"
    else:
        sequence = f"\x1b]9;{_clean(title)}: {_clean(body)}{BEL}"
    if env.get("TMUX"):  # tmux passes on what is wrapped for it, its escapes doubled
        return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return sequence


def title(text: str) -> str:
    return f"\x1b]2;{_clean(text)}{BEL}"


SAVE_TITLE = "\x1b[22;2t"
RESTORE_TITLE = "\x1b[23;2t"


class Attention:
    """Rings and notifies when the terminal is not looked at; gives the title back after."""

    def __init__(
        self,
        mode: NotifyMode,
        write: Callable[[str], None],
        focused: Callable[[], bool],
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.mode = mode
        self._write = write
        self._focused = focused
        self._env = dict(os.environ) if env is None else env
        self._title_saved = False
        self.sent: list[str] = []
        """What was said, in order (for the person's hooks and for tests)."""

    def needed(self, message: str) -> bool:
        """The agent waits for the person (`message` says for what); whether it told the terminal."""
        if self.mode == "off" or self._focused():
            return False
        parts = [BEL]
        if self.mode == "auto":
            parts.append(desktop_notification("todo-agent", message, self._env))
        if not self._title_saved:
            parts.append(SAVE_TITLE)
            self._title_saved = True
        parts.append(title(f"todo-agent: {message}"))
        self._write("".join(parts))
        self.sent.append(message)
        return True

    def seen(self) -> None:
        """The terminal has focus again (or the app ends): the person's title back."""
        if self._title_saved:
            self._title_saved = False
            self._write(RESTORE_TITLE)
