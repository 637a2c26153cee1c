"""The sandbox's first process when `[sandbox] network` names domains: it listens on
`127.0.0.1:PORT` inside the sandbox's own network namespace, relays each connection to
todo-agent's domain proxy through a Unix socket bound into the sandbox, and runs the
command; it exits as the command does.

Run by path with the standard library alone (`python3 -I netrelay.py SOCKET PORT -- ARGV…`):
it starts in a few milliseconds and imports nothing of todo-agent.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading

_CHUNK = 65_536


def _pump(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(_CHUNK):
            target.sendall(data)
    for end in (target, source):
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()


def main(argv: list[str]) -> int:
    path, port, separator, *command = argv
    if separator != "--" or not command:
        print("usage: netrelay.py SOCKET PORT -- COMMAND…", file=sys.stderr)
        return 2
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    child = subprocess.Popen(command)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: child.send_signal(number))
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
