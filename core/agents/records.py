"""The sub-agents of a session as records: for the compaction note, `-p`'s result list, and
a resumed session (read back from the transcripts' first and last lines)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Record:
    """A sub-agent of this session, as the compaction note and `-p`'s result list it."""

    agent_id: str
    agent_type: str
    description: str
    task_id: str | None
    status: str
    """`running`, or how it ended."""
    summary: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    """Its `AgentFinished`, as JSON, once it has ended."""


def number(agent_id: str) -> int:
    """The number in a sub-agent's name (`explore-2` → 2)."""
    found = re.search(r"-(\d+)$", agent_id)
    return int(found.group(1)) if found else 0


def past_records(directory: Path) -> list[Record]:
    """The sub-agents an earlier run of this session started, from their transcripts' last record."""
    try:
        paths = sorted(directory.glob("*.jsonl"), key=lambda p: (number(p.stem), p.stem))
    except OSError:
        return []
    return [record for path in paths if (record := _read_record(path)) is not None]


def _read_record(path: Path) -> Record | None:
    header: dict[str, Any] = {}
    result: dict[str, Any] = {}
    try:
        with path.open("rb") as f:
            header = _json_line(f.readline())
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - 65_536))
            for line in f.read().splitlines():
                record = _json_line(line)
                if record.get("type") == "agent_result":
                    result = record
    except OSError:
        return None
    if header.get("type") != "session":
        return None
    task = header.get("task_id")
    return Record(
        path.stem,
        str(header.get("agent_type") or ""),
        str(header.get("description") or ""),
        task if isinstance(task, str) else None,
        str(result.get("status") or "lost"),
        str(result.get("summary") or ""),
        {k: v for k, v in result.items() if k != "type"},
    )


def _json_line(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def describe_records(records: Iterable[Record]) -> list[str]:
    """One line per sub-agent, for the compaction note."""
    lines = []
    for record in records:
        task = f" on task #{record.task_id}" if record.task_id else ""
        said = " ".join(record.summary.split())
        said = f": {said[:200]}" if said else ""
        lines.append(f'- {record.agent_id} ({record.agent_type}, "{record.description}"){task}: {record.status}{said}')
    return lines
