"""The client's editor as the file tools' channel (`core/tools/channel.py`): with
`fs.readTextFile`, Read (and the change record, and the stale-file check) read the
editor's buffer, saved or not; with `fs.writeTextFile`, Edit and Write put their text
there. What the protocol cannot carry (a file outside the workspace, bytes that are not
UTF-8) goes to the disk, as without a client; a write the client refuses fails the edit
(its person may have said no), and is never made on the disk behind its back.

The tools call from their worker threads; each call is sent on the event loop and waited
for there, at most `TIMEOUT` seconds. Never called on the loop itself (it would wait on
itself): there it answers "not through me".
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

from acp.interfaces import Client
from acp.schema import ClientCapabilities

from todo_agent.core.tools.results import ToolError

log = logging.getLogger(__name__)

TIMEOUT = 30.0
"""Seconds one read through the client may take before the disk is read."""
WRITE_TIMEOUT = 3600.0
"""Seconds a write through the client may wait (its person may be asked); then the edit fails."""


class ClientFiles:
    def __init__(self, conn: Client, session_id: str, capabilities: ClientCapabilities, workspace: Path) -> None:
        fs = capabilities.fs
        self.reads = bool(fs and fs.read_text_file)
        self.writes = bool(fs and fs.write_text_file)
        self.conn, self.session_id, self.workspace = conn, session_id, workspace
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()

    def _inside(self, path: Path) -> bool:
        """Only the workspace's files go through the client (a client may refuse others)."""
        return path.is_absolute() and path.is_relative_to(self.workspace)

    def read(self, path: Path) -> bytes | None:
        if not self.reads or not self._inside(path) or threading.get_ident() == self.loop_thread:
            return None
        call = self.conn.read_text_file(session_id=self.session_id, path=str(path))
        try:
            answer = asyncio.run_coroutine_threadsafe(call, self.loop).result(TIMEOUT)
        except Exception as exc:  # not open, gone, refused, too slow: the disk says
            log.info("read of %s through the client failed (%s); the disk is read", path, exc)
            return None
        return answer.content.encode("utf-8", "surrogatepass")

    def write(self, path: Path, data: bytes) -> bool:
        if not self.writes or not self._inside(path) or threading.get_ident() == self.loop_thread:
            return False
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False  # not text the protocol can carry: written to the disk as it is
        call = self.conn.write_text_file(session_id=self.session_id, path=str(path), content=text)
        try:  # a client may ask its person first (acpx does): no short limit, and no disk after a no
            asyncio.run_coroutine_threadsafe(call, self.loop).result(WRITE_TIMEOUT)
        except Exception as exc:
            raise ToolError(f"the editor did not write {path.name}: {exc or type(exc).__name__}") from None
        return True
