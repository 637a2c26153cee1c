"""The task list's file: a JSON object with one task per line.

`encode` writes it; `decode` reads it back and refuses anything that is not a valid list
(wrong types, broken invariants: `rules.violations`), so a file edited by hand or
cut short never becomes the store's state. The person's pending panel edits and the
list's version are kept in the same document (`decode_user_changes`, `decode_version`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import Any, TypeGuard, cast

from .model import Attempt, Budget, CheckRun, CheckRunning, Claim, Task
from .rules import Tasks, violations

FILE_FORMAT = 1


def encode(tasks: Sequence[Task], next_id: int, user_changes: Sequence[str] = (), version: int = 0) -> bytes:
    """The file: a JSON object with one task per line, so it reads (and diffs) well.

    `user_changes` are the person's panel edits the model has not been told about yet;
    kept in the file so that quitting before the next request does not lose them.
    """
    rows = ",\n".join("  " + json.dumps(task_json(t), ensure_ascii=False) for t in tasks)
    body = f"[\n{rows}\n]" if rows else "[]"
    changes = f', "user_changes": {json.dumps(list(user_changes), ensure_ascii=False)}' if user_changes else ""
    stamp = f', "version": {version}' if version else ""
    return f'{{"format": {FILE_FORMAT}, "next_id": {next_id}{stamp}{changes}, "tasks": {body}}}\n'.encode()


_QUIET_DEFAULTS: dict[str, Any] = {
    "claim": None,
    "attempts": [],
    "created_by": "",
    "created_session": "",
    "metadata": {},
    "verify": "",
    "verified_at": None,
    "checks": [],
    "check_running": None,
    "budget": None,
    "requests": 0,
    "tokens": 0,
}
"""Fields left out of a task's line while they hold their default: most tasks never meet a
sub-agent, and files written before these fields existed read the same."""


def task_json(task: Task) -> dict[str, Any]:
    """One task as saved (metadata as an object)."""
    row = asdict(task)
    row["metadata"] = dict(task.metadata)
    for name, default in _QUIET_DEFAULTS.items():
        if row[name] == default:
            del row[name]
    return row


def decode_version(document: Any) -> int:
    """The list's version (how many logged changes made it); 0 in files older than the log."""
    raw = document.get("version") if isinstance(document, dict) else None
    return raw if _is_int(raw) and raw > 0 else 0


def decode_task(raw: Any) -> Task:
    """One task as saved (also in the plan history); `ValueError` when malformed."""
    return _decode_task(raw)


def decode_user_changes(document: Any) -> tuple[str, ...]:
    """The pending edits saved with the list; anything malformed there is dropped, not fatal."""
    raw = document.get("user_changes") if isinstance(document, dict) else None
    return tuple(item for item in raw if isinstance(item, str)) if isinstance(raw, list) else ()


def decode(document: Any) -> tuple[Tasks, int]:
    """The inverse of `encode`; raises `ValueError` on anything that is not a valid list."""
    if not isinstance(document, dict) or document.get("format") != FILE_FORMAT:
        raise ValueError("not a todo-agent task list (format 1)")
    raw, next_id = document.get("tasks"), document.get("next_id")
    if not isinstance(raw, list) or not _is_int(next_id):
        raise ValueError("'tasks' must be a list and 'next_id' an integer")
    tasks = tuple(_decode_task(item) for item in raw)
    problems = violations(tasks, next_id)
    if problems:
        raise ValueError(problems[0])
    return tasks, next_id


_TEXT = {"id", "subject", "description", "activeForm", "status", "owner", "created_by", "created_session", "verify"}
_IDS = {"blocks", "blockedBy"}
_OPTIONAL_TIMES = {"started_at", "completed_at", "progress_since", "verified_at"}
_STRUCTURED = {"claim", "attempts", "metadata", "checks", "check_running", "budget"}
_COUNTS = {"tool_calls", "requests", "tokens"}


def _decode_task(raw: Any) -> Task:
    if not isinstance(raw, dict):
        raise ValueError("a task entry is not an object")
    values: dict[str, Any] = {}
    for field in fields(Task):
        if field.name in raw:
            values[field.name] = _decode_value(field.name, raw[field.name])
    if "id" not in values or "subject" not in values:
        raise ValueError("a task entry lacks 'id' or 'subject'")
    return Task(**values)


def _decode_value(name: str, value: Any) -> Any:
    if name in _TEXT and isinstance(value, str):
        return value
    if name in _IDS and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    if name in _COUNTS and _is_int(value):
        return value
    if name in _OPTIONAL_TIMES and value is None:
        return None
    if name in _STRUCTURED:
        return _decode_structured(name, value)
    if name not in _TEXT | _IDS | _COUNTS and _is_number(value):
        return float(value)
    raise ValueError(f"task field '{name}' has a wrong type ({type(value).__name__})")


def _decode_structured(name: str, value: Any) -> Any:
    if name == "claim":
        return None if value is None else _decode_claim(value)
    if name == "attempts" and isinstance(value, list):
        return tuple(_decode_attempt(item) for item in value)
    if name == "checks" and isinstance(value, list):
        return tuple(_decode_check(item) for item in value)
    if name == "check_running":
        return None if value is None else _decode_running(value)
    if name == "budget":
        return None if value is None else _decode_budget(value)
    if name == "metadata":
        pairs = value.items() if isinstance(value, dict) else value if isinstance(value, list) else None
        if pairs is not None:
            items = [tuple(pair) for pair in pairs]
            if all(len(p) == 2 and all(isinstance(x, str) for x in p) for p in items):
                return tuple(sorted(items))
    raise ValueError(f"task field '{name}' is malformed")


def _decode_claim(raw: Any) -> Claim:
    if not isinstance(raw, dict):
        raise ValueError("task field 'claim' is not an object")
    agent, session, pid, since = (raw.get(k) for k in ("agent", "session", "pid", "since"))
    if not (isinstance(agent, str) and isinstance(session, str) and _is_int(pid) and _is_number(since)):
        raise ValueError("task field 'claim' is malformed")
    return Claim(agent, session, pid, float(cast(float, since)), raw.get("done") is True)


def _decode_attempt(raw: Any) -> Attempt:
    if not isinstance(raw, dict) or not isinstance(raw.get("agent"), str) or not isinstance(raw.get("outcome"), str):
        raise ValueError("a task attempt is malformed")
    files = raw.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ValueError("a task attempt's files are malformed")
    at = raw.get("at", 0.0)
    return Attempt(
        raw["agent"],
        raw["outcome"],
        str(raw.get("summary") or ""),
        tuple(files),
        float(at) if _is_number(at) else 0.0,
        str(raw.get("session") or ""),
    )


def _decode_check(raw: Any) -> CheckRun:
    if not isinstance(raw, dict) or not _is_number(raw.get("at")):
        raise ValueError("a task's check run is malformed")
    code, seconds = raw.get("exit"), raw.get("seconds", 0.0)
    if code is not None and not _is_int(code):
        raise ValueError("a task's check run has a wrong exit status")
    return CheckRun(
        float(raw["at"]),
        code,
        float(seconds) if _is_number(seconds) else 0.0,
        str(raw.get("tail") or ""),
        str(raw.get("command") or ""),
    )


def _decode_running(raw: Any) -> CheckRunning:
    if not isinstance(raw, dict) or not _is_int(raw.get("pgid")) or not _is_int(raw.get("owner")):
        raise ValueError("task field 'check_running' is malformed")
    ticks = raw.get("ticks", "")
    return CheckRunning(raw["pgid"], raw["owner"], ticks if isinstance(ticks, str) else "")


def _decode_budget(raw: Any) -> Budget:
    if not isinstance(raw, dict):
        raise ValueError("task field 'budget' is not an object")
    requests, tokens, minutes = (raw.get(k, 0) for k in ("requests", "tokens", "minutes"))
    if not (_is_int(requests) and _is_int(tokens) and _is_number(minutes)) or min(requests, tokens, minutes) < 0:
        raise ValueError("task field 'budget' is malformed")
    return Budget(requests, tokens, float(minutes))


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
