"""Where sessions live, and finding them.

`<root>/sessions/<project>/<id>.jsonl`, where `<root>` is `$TODO_AGENT_HOME` or the
platform's user data dir and `<project>` names the working directory (its basename and
a short hash of the full path); the folders are private (0700). Listing reads only each
transcript's first lines (its header, or for older sessions its first prompt), never a
whole transcript. One session file itself is `core/session/transcript.py`'s.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..places import data_root
from ..tasks.reminders import OPEN_TAG

HEADER_TYPE = "session"
SERVER_RECORD = "server"
"""A session line saying what a model's client learned of its server."""
SHELL_RECORD = "shell"
"""A session line: a background command started, or ended (`core/tools/shells.py`)."""
SPEND_RECORD = "spend"
"""A session line with the running totals of the prompt tokens and the plan's part
(`core/window/breakdown.py`, `Spend`); the latest one counts."""
NEAREST = 3
"""How many sessions an unknown id's error offers."""
_TITLE_SCAN_LINES = 20
"""Lines the picker reads at most (for sessions whose header has no title)."""


def project_dir(workspace: Path, root: Path | None = None) -> Path:
    resolved = workspace.resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:10]
    name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in resolved.name) or "root"
    return (root or data_root()) / "sessions" / f"{name}-{digest}"


PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def private_dir(directory: Path) -> Path:
    """Create `directory` (and its parent `sessions/`) readable by the user alone."""
    directory.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    for path in (directory.parent, directory):  # also folders made before this was so
        with contextlib.suppress(OSError):
            if stat.S_IMODE(path.stat().st_mode) != PRIVATE_DIR:
                path.chmod(PRIVATE_DIR)
    return directory


def task_list_path(name: str, root: Path | None = None) -> Path:
    """Where a shared task list (`--task-list NAME`) lives: `<root>/task-lists/NAME.tasks.json`,
    shared by every session and process that names it (the folder is private)."""
    directory = (root or data_root()) / "task-lists"
    directory.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    with contextlib.suppress(OSError):
        directory.chmod(PRIVATE_DIR)
    return directory / f"{name}.tasks.json"


class SessionError(Exception):
    """A session could not be found or opened; the message says which and why."""


@dataclass(frozen=True)
class SessionInfo:
    id: str
    title: str
    updated: float
    size: int
    """Bytes on disk: the picker reads headers, never whole transcripts."""
    path: Path


def parse_record(line: bytes) -> dict[str, Any] | None:
    """A JSON object, or None for anything else: torn, not UTF-8, nested past the parser's
    depth, or valid JSON that is not an object."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None
    return record if isinstance(record, dict) else None


def list_sessions(workspace: Path, root: Path | None = None) -> list[SessionInfo]:
    """Sessions of this working directory, newest first."""
    directory = project_dir(workspace, root)
    if not directory.is_dir():
        return []
    infos = [info for p in _transcripts(directory, "*") if (info := _info(p)).size]  # empty ones: nothing to resume
    return sorted(infos, key=lambda i: (i.updated, i.id), reverse=True)


def _transcripts(directory: Path, pattern: str) -> list[Path]:
    """Transcripts matching `pattern` + `.jsonl`; not the files beside them that are also
    JSON lines (`<id>.tasks.log.jsonl`): a session id has no dot."""
    return [p for p in directory.glob(f"{pattern}.jsonl") if "." not in p.stem]


def find_session(workspace: Path, session_id: str, root: Path | None = None) -> Path:
    directory = project_dir(workspace, root)
    exact = directory / f"{session_id}.jsonl"
    if exact.is_file():
        return exact
    matches = sorted(_transcripts(directory, f"{session_id}*")) if directory.is_dir() else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise SessionError(f"session id '{session_id}' is ambiguous: {', '.join(m.stem for m in matches[:5])}")
    raise SessionError(_not_found(workspace, session_id, root))


def _not_found(workspace: Path, session_id: str, root: Path | None) -> str:
    """No such session: say so, and offer the sessions whose ids look most like it (or
    the latest ones), so a typo is one copy away from the right id."""
    known = list_sessions(workspace, root)
    if not known:
        return f"no session has the id '{session_id}': this directory ({workspace}) has no sessions yet"
    by_id = {info.id: info for info in known}
    near = difflib.get_close_matches(session_id, list(by_id), n=NEAREST, cutoff=0.5) or list(by_id)[:NEAREST]
    offered = ", ".join(f'{name} "{short_title(by_id[name].title)}"' for name in near)
    return f"no session has the id '{session_id}' here. Nearest: {offered}. `todo-agent --resume` picks from all"


def short_title(title: str, limit: int = 40) -> str:
    return title if len(title) <= limit else title[: limit - 1] + "…"


def latest_session(workspace: Path, root: Path | None = None) -> Path | None:
    sessions = list_sessions(workspace, root)
    return sessions[0].path if sessions else None


def prompt_title(message: Any) -> str:
    """A message's text as a session title, if it is something the person typed."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return ""
    content = message.get("content")
    if not isinstance(content, str) or content.startswith(OPEN_TAG):
        return ""
    return " ".join(content.split())[:80]


def _info(path: Path) -> SessionInfo:
    """What the picker shows, from the header (or, for older sessions, the first lines)."""
    title, has_messages = "", False
    try:
        with path.open("rb") as f:
            for number, line in enumerate(f):
                if number >= _TITLE_SCAN_LINES or (title and has_messages):
                    break
                record = parse_record(line)
                if record is None:
                    continue
                if record.get("type") == HEADER_TYPE:
                    title = str(record.get("title") or "")
                elif record.get("type") in ("message", "compaction"):
                    has_messages = True
                    title = title or prompt_title(record.get("message"))
        stat = path.stat()
        updated, size = stat.st_mtime, stat.st_size
    except OSError:
        updated, size = 0.0, 0
    return SessionInfo(path.stem, title or "(empty)", updated, size if has_messages else 0, path)
