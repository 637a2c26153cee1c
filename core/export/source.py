"""What an export is made of, read from the app's state or from disk, and the JSON form.

`exported` takes what the app holds (its transcript, how each call ended, its plan);
`from_disk` reads the same from a session's files, without starting an agent: the
transcript (`Session.view`: no lock, nothing written), its task list (`TaskStore.load`, as
the app loads it) and its record of changes (`ChangeLog.for_session`), for `todo-agent
export`. The JSON form holds the session file's records as they are (only credentials in
URLs masked), so it loads back as the same session.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..changes.log import ChangeLog
from ..session.directory import HEADER_TYPE, parse_record, prompt_title
from ..session.transcript import Session, TranscriptItem
from ..tasks.model import Task
from ..tasks.render import check_line, mark
from ..tasks.store import TaskStore
from ..terminal import json_safe
from .blocks import Block, Compacted, StatusOf, clean, mask_urls, walk

MARKER = "todo-agent export"
"""In the first line of every export: an existing file that has it may be replaced."""


@dataclass(frozen=True)
class PlanRow:
    """One task as the export's plan shows it."""

    id: str
    mark: str
    """☐ ◼ ☒ ☑ (`core/tasks/render.py`)."""
    subject: str
    status: str
    check: str
    """`✓ pytest -q`, `✗ exit 1 · pytest -q` (`check_line`); empty without one."""
    files: tuple[str, ...]
    """`app.py  +3 −1` per file the task changed."""


@dataclass(frozen=True)
class Exported:
    """A session ready to be written in any format."""

    session_id: str
    path: Path
    """The session file (the JSON form reads its records)."""
    title: str
    workspace: str
    started: float | None
    blocks: tuple[Block, ...]
    plan: tuple[PlanRow, ...]
    messages: int
    compactions: int
    at: float
    """When it was exported."""


def about(source: Exported) -> str:
    """The line under the title: `session … · workspace … · started … · 42 messages · …`."""
    bits = [f"session {source.session_id}"]
    if source.workspace:
        bits.append(f"workspace {source.workspace}")
    if source.started:
        bits.append(f"started {_when(source.started)}")
    bits.append(f"{source.messages:,} message{'' if source.messages == 1 else 's'}")
    if source.compactions:
        bits.append(f"compacted {source.compactions}×")
    bits.append(f"exported {_when(source.at)} by todo-agent")
    return " · ".join(bits)


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def plan_rows(tasks: Iterable[Task], files: Mapping[str, Sequence[str]]) -> tuple[PlanRow, ...]:
    """The plan's rows: `tasks` in order, with `files` (as `Runtime.task_files` gives them)."""
    return tuple(
        PlanRow(
            task.id,
            mark(task),
            clean(task.subject),
            task.status,
            clean(check_line(task, width=400)),
            tuple(clean(line) for line in files.get(task.id, ())),
        )
        for task in tasks
    )


def file_lines(log: ChangeLog) -> dict[str, list[str]]:
    """Per task, a line per file it changed, worded as `Runtime.task_files` words them."""
    return {
        task: [f"{c.path}  +{c.added} −{c.removed}" + ("" if c.kind == "modified" else f" ({c.kind})") for c in files]
        for task, files in log.records.items()
        if files
    }


def load_plan(session_path: Path, workspace: Path) -> tuple[PlanRow, ...]:
    """A session's plan from its files: the task list beside it and what each task changed."""
    session_id = session_path.stem
    store = TaskStore.load(session_path.with_name(f"{session_id}.tasks.json"), home=session_id)
    return plan_rows(store.snapshot(), file_lines(ChangeLog.for_session(session_path, workspace)))


def exported(
    session_path: Path,
    transcript: Sequence[TranscriptItem],
    status_of: StatusOf,
    plan: tuple[PlanRow, ...],
    *,
    workspace: Path | None = None,
) -> Exported:
    """The export of a session as the app holds it: its transcript, how each call ended
    (`status_of(call_id)`) and its plan. Reads the file's first line (its title and start);
    blocking, like everything here: call it in a worker thread."""
    header = read_header(session_path)
    blocks = tuple(walk(transcript, status_of))
    first = next((title for item in transcript if isinstance(item, dict) and (title := prompt_title(item))), "")
    return Exported(
        session_id=session_path.stem,
        path=session_path,
        title=clean(str(header.get("title") or first or "(empty session)")),
        workspace=clean(str(header.get("cwd") or workspace or "")),
        started=header["created"] if isinstance(header.get("created"), int | float) else None,
        blocks=blocks,
        plan=plan,
        messages=sum(1 for item in transcript if isinstance(item, dict)),
        compactions=sum(1 for block in blocks if isinstance(block, Compacted)),
        at=time.time(),
    )


def from_disk(session_path: Path, workspace: Path) -> Exported:
    """The export of the session file `session_path`; `SessionError` when it cannot be read."""
    session = Session.view(session_path)
    home = Path(str(read_header(session_path).get("cwd") or workspace))
    return exported(session_path, session.transcript, session.tool_status.get, load_plan(session_path, home))


def read_header(session_path: Path) -> dict[str, Any]:
    """The session file's first line if it is its header, else {}."""
    try:
        with session_path.open("rb") as f:
            record = parse_record(f.readline())
    except OSError:
        return {}
    return record if record is not None and record.get("type") == HEADER_TYPE else {}


def read_records(session_path: Path) -> list[str]:
    """Each complete, readable line of the session file, as one JSON text (URLs masked);
    a torn last line (a write cut short) and unreadable lines are left out, as loading does."""
    try:
        raw = session_path.read_bytes()
    except FileNotFoundError:  # nothing happened yet: the file comes with the first message
        return []
    lines = raw.split(b"\n")[:-1]
    records = (parse_record(line) for line in lines if line.strip())
    return [mask_urls(json.dumps(r, ensure_ascii=False)) for r in records if r is not None]


def to_json(source: Exported) -> str:
    """`{"format": "todo-agent export", …, "records": [the session file's lines], "plan": […]}`:
    valid JSON, each record on a line of its own, no control character raw."""
    head = {
        "format": MARKER,
        "version": 1,
        "session": source.session_id,
        "title": source.title,
        "workspace": source.workspace,
        "exported": source.at,
    }
    opening = json.dumps(head, ensure_ascii=False, indent=1)[:-2]  # without its closing "\n}"
    records = read_records(source.path)
    listed = "[\n  " + ",\n  ".join(records) + "\n ]" if records else "[]"
    plan = json.dumps([asdict(row) for row in source.plan], ensure_ascii=False)
    return json_safe(f'{opening},\n "records": {listed},\n "plan": {plan}\n}}\n')
