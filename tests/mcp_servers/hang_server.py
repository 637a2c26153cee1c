"""A server whose start hangs: it runs (and notes its pid) but never answers the handshake."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

notes = Path(os.environ.get("TEST_SERVER_DIR", ".")).resolve()
(notes / f"server-{os.getpid()}").write_text(str(os.getpid()), encoding="utf-8")
print("hanging on purpose", file=sys.stderr, flush=True)
while True:
    time.sleep(3600)
