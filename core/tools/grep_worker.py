"""Grep's Python engine, run as a process of its own: `python -m … PATTERN TARGET BOUNDARY GLOB [PARENT_PID]`.

Python's `re` cannot be interrupted once a match has started, and a catastrophic pattern
(`(?=(a+)+b)` on a long line of a's) would hold a thread, and the whole program's exit,
for ever. In a child process the search can be killed: when the person presses escape
or Ctrl-C, at the search timeout, or once enough matches are in. It writes the rows
ripgrep writes with `--null` (`path NUL line:text`), so both engines are read alike.
Lines are searched in their first MiB only, so memory stays bounded.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import IO

from .fs import BINARY_SAMPLE, bounded_lines, looks_binary
from .walk import MAX_MATCH_CHARS, candidate_files, open_regular

LINE_BYTES = 1 << 20
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Be killed when the agent dies, even by SIGKILL (Linux), so no search outlives it.

    A catastrophic pattern keeps this process busy in one `re` call, so it would
    otherwise burn a core for as long as the timeout its parent no longer enforces.
    """
    if sys.platform.startswith("linux"):
        import contextlib
        import ctypes
        import signal

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _search_file(regex: re.Pattern[str], file: Path, out: IO[bytes]) -> None:
    try:
        opened = open_regular(file)
        if opened is None:
            return
        with opened as f:
            if looks_binary(f.read(BINARY_SAMPLE)):
                return
            f.seek(0)
            for line_no, raw in enumerate(bounded_lines(f, LINE_BYTES), 1):
                # Without its line ending, so `\s` or `$` cannot match the newline itself.
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if regex.search(line):
                    row = f"{line_no}:{line[:MAX_MATCH_CHARS]}\n".encode("utf-8", "replace")
                    out.write(os.fsencode(file) + b"\0" + row)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    pattern, target, boundary, file_glob = argv[0], Path(argv[1]), Path(argv[2]), argv[3] if len(argv) > 3 else ""
    if len(argv) > 4:
        _die_with_parent(int(argv[4]))
    regex = re.compile(pattern)
    out = sys.stdout.buffer
    try:
        for file in candidate_files(target, file_glob or None, boundary):
            _search_file(regex, file, out)
        out.flush()
    except BrokenPipeError:  # the reader has enough: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
