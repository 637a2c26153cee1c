"""Drive terminal apps in a private tmux server, through one control-mode client.

A control-mode client (`tmux -C`) takes commands on stdin and answers each in a
`%begin`…`%end` block, so capturing a pane costs a pipe round trip instead of a new
`tmux` process: cheap enough to poll the screen every few milliseconds without stealing
the CPU the measured app needs. The server runs on its own socket and is killed on
`close()`, so nothing else in tmux is touched.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class TmuxError(RuntimeError):
    pass


class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket
        self._client = subprocess.Popen(
            ["tmux", "-L", socket, "-f", "/dev/null", "-C", "new-session", "-s", "control", "sleep 86400"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
        )
        self._read_block()  # the answer to the new-session above

    def _read_block(self) -> list[str]:
        assert self._client.stdout is not None
        lines: list[str] | None = None
        while True:
            line = self._client.stdout.readline()
            if not line:
                raise TmuxError("the tmux control client went away")
            if line.startswith("%begin"):
                lines = []
            elif lines is not None and line.startswith(("%end", "%error")):
                if line.startswith("%error"):
                    raise TmuxError("".join(lines).strip())
                return lines
            elif lines is not None:
                lines.append(line.rstrip("\n"))

    def command(self, *args: str) -> list[str]:
        assert self._client.stdin is not None
        self._client.stdin.write(shlex.join(args) + "\n")
        self._client.stdin.flush()
        return self._read_block()

    def launch(
        self, name: str, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], size: tuple[int, int] = (120, 40)
    ) -> int:
        """Start `argv` in a new session `name`; returns the app's pid (the pane runs it via exec)."""
        settings = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
        width, height = size
        self.command(
            "new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), "-c", str(cwd), *settings,
            "exec " + shlex.join(argv),
        )  # fmt: skip
        return int(self.command("display-message", "-p", "-t", name, "#{pane_pid}")[0])

    def capture(self, name: str) -> str:
        return "\n".join(self.command("capture-pane", "-p", "-t", name))

    def type(self, name: str, text: str) -> None:
        self.command("send-keys", "-t", name, "-l", text)

    def key(self, name: str, *keys: str) -> None:
        self.command("send-keys", "-t", name, *keys)

    def kill(self, name: str, pid: int) -> None:
        self.command("kill-session", "-t", name)
        deadline = time.monotonic() + 3
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if alive(pid):
            os.kill(pid, 9)

    def wait_for(
        self, name: str, seen: Callable[[str], bool], *, timeout: float, interval: float = 0.004
    ) -> float | None:
        """Poll the screen until `seen(screen)`; the time of that capture, or None on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if seen(self.capture(name)):
                return time.monotonic()
            time.sleep(interval)
        return None

    def close(self) -> None:
        with contextlib.suppress(TmuxError):
            self.command("kill-server")
        self._client.wait(timeout=5)
        # tmux leaves its socket file behind: a private server's is ours to remove.
        sockets = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
        (sockets / self.socket).unlink(missing_ok=True)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):  # gone, or going: ESRCH while its /proc entry is read
        return False
    return state != "Z"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the process so far (all its threads, finished ones too)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def settle(pid: int, *, quiet: float = 0.3, limit: float = 30.0) -> float:
    """Wait until the process uses almost no CPU for `quiet` seconds; returns its CPU time then."""
    deadline = time.monotonic() + limit
    before = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = cpu_seconds(pid)
        if now - before <= quiet * 0.1:
            return now
        before = now
    return before
