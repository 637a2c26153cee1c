"""Per-prompt checkpoints: what each file held before a prompt's first change to it.

The task change records keep each file's first and last content under a task, which
cannot take the workspace back to just before one prompt. So every prompt (`begin`, at
the start of a turn, whether or not a task is in progress) opens a checkpoint, and the
change recorder (`recorder.py`) notes in it, per file, the content before the prompt's
first change (`before`) and after its latest (`after`): for Edit/Write the files they
declare, for Bash the workspace scan around the command. Contents are kept as the
change records keep them (`ChangeLog.keep`: blobs beside the session, `MAX_KEEP_BYTES`
each; a file over it is noted `too_big` and cannot be put back).

Each checkpoint also says where its prompt starts in the conversation (`length`: the
history's length just before the turn), in which compaction epoch (a checkpoint from
before the latest compaction cannot be rewound to), and the plan's version then.

Stored as `<id>.prompts.json` beside the session (written atomically); a session without
it simply has no prompt to rewind to.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..atomic import atomic_write
from .log import ChangeLog, Content, _content

FORMAT = 1
MAX_TEXT = 4000
"""Characters of a prompt kept (the part that goes back to the input box)."""


@dataclass(frozen=True)
class Touched:
    """One file one prompt changed: what it held before the prompt's first change, and after its latest."""

    before: Content
    after: Content


@dataclass
class Checkpoint:
    id: str
    text: str
    """The prompt as the person typed it."""
    length: int
    """The conversation's length just before the prompt: rewinding cuts it back to this."""
    epoch: int
    """Compactions before the prompt."""
    tasks_version: int
    """The plan's version just before the prompt."""
    at: float
    files: dict[str, Touched] = field(default_factory=dict)


class Checkpoints:
    """The prompts of one session and what each changed (in memory only when `path` is None)."""

    def __init__(self, path: Path | None, changes: ChangeLog) -> None:
        self.path = path
        self.changes = changes
        self.items: list[Checkpoint] = []
        self.open: Checkpoint | None = None
        """The checkpoint of the prompt whose turn runs now (None between turns)."""
        self.warning: str | None = None

    @classmethod
    def for_session(cls, session_path: Path | None, changes: ChangeLog) -> Checkpoints:
        checkpoints = cls(
            None if session_path is None else session_path.with_name(session_path.stem + ".prompts.json"), changes
        )
        checkpoints.reload()
        return checkpoints

    def reload(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            self.items = decode(json.loads(self.path.read_bytes()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.warning = f"The prompts' checkpoints ({self.path}) could not be read ({exc}): /rewind has none."

    def begin(self, text: str, length: int, epoch: int, tasks_version: int) -> Checkpoint:
        """Open the checkpoint of a prompt about to be sent."""
        checkpoint = Checkpoint(secrets.token_hex(6), text[:MAX_TEXT], length, epoch, tasks_version, time.time())
        self.items.append(checkpoint)
        self.open = checkpoint
        return checkpoint

    def end(self) -> None:
        self.open = None

    def touch(self, path: str, before: Content, after: Content) -> None:
        """Note that the open prompt took `path` from `before` to `after` (one tool call)."""
        checkpoint = self.open
        if checkpoint is None:
            return
        first = checkpoint.files.get(path)
        if first is None and before == after:  # a call that changed nothing (a refused Write)
            return
        checkpoint.files[path] = Touched(before, after) if first is None else replace(first, after=after)

    def since(self, epoch: int, length: int) -> list[Checkpoint]:
        """The checkpoints that can still be rewound to: since the latest compaction, within the conversation."""
        return [c for c in self.items if c.epoch == epoch and c.length < length]

    def save(self) -> None:
        if self.path is not None:
            atomic_write(self.path, encode(self.items))


def encode(items: list[Checkpoint]) -> bytes:
    rows = [asdict(c) for c in items]
    return (json.dumps({"format": FORMAT, "prompts": rows}, ensure_ascii=False) + "\n").encode()


def decode(document: Any) -> list[Checkpoint]:
    if not isinstance(document, dict) or document.get("format") != FORMAT or not isinstance(document["prompts"], list):
        raise ValueError("not a todo-agent record of prompts (format 1)")
    return [decode_one(raw) for raw in document["prompts"]]


def decode_one(raw: Any) -> Checkpoint:
    files = {
        str(path): Touched(_content(entry["before"]), _content(entry["after"])) for path, entry in raw["files"].items()
    }
    length, epoch, version = raw["length"], raw["epoch"], raw["tasks_version"]
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (length, epoch, version)):
        raise ValueError("a prompt's checkpoint has a wrong number")
    return Checkpoint(str(raw["id"]), str(raw["text"]), length, epoch, version, float(raw["at"]), files)
