"""Rewinding to an earlier prompt (`/rewind`), and undoing that once (`/redo`).

`prompts` lists the prompts that can be rewound to (since the latest compaction), newest
first, each with what came after it: tool calls, files changed, tasks touched. `plan`
says, for one of them, what each file changed since would become (`FilePlan`, as the
task rewind says it): back to what it held just before the prompt (from the prompts'
checkpoints, `checkpoint.py`), a file created since deleted; a file that is no longer
what todo-agent last left (changed outside todo-agent since) is a conflict, and one whose
content was too big to keep cannot be put back. Nothing is written by `plan`.

`apply` takes the conversation (cut back to just before the prompt, the model told once
in a `<system-reminder>` what was rewound), the files, or both; with the conversation
the plan goes back to its version then (`history.list_at`), except on a shared list.
A journal (`<id>.prompt-rewind.json`) is written first, naming every step's target and
what the rewind removes (the messages, each file's bytes now, the plan now, the
checkpoints after), which its first step keeps in `<id>.redo.json` beside the session so
`redo` can bring it all back once; the steps run (each can run twice: the files are put back atomically, the
conversation is cut only when it does not already end with the note, the plan's change
is recognised by its id in the plan history), and the journal is removed. A kill before
the journal changes nothing; after it, `recover` at the next open finishes it. `redo`
runs the same steps back with a journal of its own.

Never writes outside the workspace: a file is put back only where `rewind._escapes`
allows, as the task rewind does.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from ..atomic import atomic_write
from ..tasks import history
from ..tasks.file_format import decode_task, task_json
from ..tasks.model import StoreError, Task
from ..tasks.reminders import CLOSE_TAG, OPEN_TAG
from ..tasks.store import TaskStore
from .checkpoint import Checkpoint, Checkpoints, decode_one
from .log import MAX_KEEP_BYTES, ChangeLog, Content, _content
from .on_disk import look
from .rewind import FilePlan, Since, _escapes, _matches, _put_back, plan_file

Scope = Literal["both", "conversation", "files"]
REWOUND = "The user rewound"
"""How the model's note on a rewind starts, inside the reminder tags."""
CHANGED_OUTSIDE = "changed outside todo-agent since"


class Conversation(Protocol):
    """The session's side of a rewind (`core/session/transcript.Session` is one)."""

    messages: list[dict[str, Any]]
    tool_status: dict[str, str]

    def rewind(self, length: int) -> None: ...

    def append(self, message: dict[str, Any], status: str | None = None) -> None: ...


@dataclass(frozen=True)
class PromptRow:
    """One prompt `/rewind` offers, and what came after it."""

    id: str
    text: str
    at: float
    tool_calls: int
    files: tuple[str, ...]
    tasks: tuple[str, ...]
    """`#3 Add pagination`: the tasks whose plan entries changed after the prompt."""


@dataclass(frozen=True)
class PromptPlan:
    checkpoint: Checkpoint
    files: tuple[FilePlan, ...]

    @property
    def actionable(self) -> tuple[FilePlan, ...]:
        return tuple(f for f in self.files if f.action in ("restore", "delete"))


@dataclass(frozen=True)
class Outcome:
    prompt: str
    """The prompt rewound to, for the input box."""
    lines: tuple[str, ...]
    """What happened, for the person."""


class PromptRewinds:
    """`/rewind` and `/redo` of one session: its checkpoints, files, conversation and plan."""

    def __init__(
        self,
        changes: ChangeLog,
        checkpoints: Checkpoints,
        store: TaskStore,
        conversation: Conversation,
        *,
        epoch: Callable[[], int],
        shared: str = "",
    ) -> None:
        self.changes = changes
        self.checkpoints = checkpoints
        self.store = store
        self.conversation = conversation
        self.epoch = epoch
        self.shared = shared
        """The shared task list's name (`--task-list`): its plan is never rewound."""

    def _side(self, suffix: str) -> Path | None:
        path = self.checkpoints.path
        return None if path is None else path.with_name(path.name.removesuffix(".prompts.json") + suffix)

    # --- what there is -------------------------------------------------------------

    def begin(self, text: str) -> None:
        """A prompt is about to be sent: open its checkpoint (a redo waiting is dropped: the
        conversation moved on). Blocking (writes the checkpoints)."""
        self.checkpoints.begin(text, len(self.conversation.messages), self.epoch(), self.store.version)
        self.checkpoints.save()
        if (redo := self._side(".redo.json")) is not None:
            redo.unlink(missing_ok=True)

    def end(self) -> None:
        self.checkpoints.end()

    def available(self) -> list[Checkpoint]:
        messages = self.conversation.messages
        return [
            c for c in self.checkpoints.since(self.epoch(), len(messages)) if messages[c.length].get("role") == "user"
        ]

    def prompts(self) -> list[PromptRow]:
        """The prompts that can be rewound to, newest first."""
        found = self.available()
        messages, versions = self.conversation.messages, self.store.versions()
        rows = []
        for i, checkpoint in enumerate(found):
            later = found[i + 1] if i + 1 < len(found) else None
            end = later.length if later is not None else len(messages)
            calls = sum(len(m.get("tool_calls") or ()) for m in messages[checkpoint.length : end])
            until = later.tasks_version if later is not None else self.store.version
            touched = [v for v in versions if checkpoint.tasks_version < v.version <= until and v.task_id]
            names = {v.task_id: next((s for t, _, s in v.tasks if t == v.task_id), "") for v in touched}
            tasks = tuple(f"#{task} {subject}".strip() for task, subject in names.items())
            rows.append(PromptRow(checkpoint.id, checkpoint.text, checkpoint.at, calls, tuple(checkpoint.files), tasks))
        return rows[::-1]

    def redo_waiting(self) -> bool:
        redo = self._side(".redo.json")
        return redo is not None and redo.exists()

    # --- planning --------------------------------------------------------------------

    def plan(self, checkpoint_id: str) -> PromptPlan:
        """What rewinding to just before the prompt would do to each file. Blocking (reads them)."""
        found = self.available()
        index = next((i for i, c in enumerate(found) if c.id == checkpoint_id), None)
        if index is None:
            raise ValueError("that prompt can no longer be rewound to (compacted or rewound since)")
        targets: dict[str, Content] = {}
        left: dict[str, Content] = {}
        for checkpoint in found[index:]:
            for path, touched in checkpoint.files.items():
                targets.setdefault(path, touched.before)
                left[path] = touched.after
        files = tuple(plan_file(self.changes, path, targets[path], left[path], PROMPT) for path in sorted(targets))
        return PromptPlan(found[index], files)

    # --- applying ----------------------------------------------------------------------

    def apply(self, plan: PromptPlan, scope: Scope, chosen: Collection[str]) -> Outcome:
        """Rewind to just before `plan`'s prompt: `scope` says what; `chosen`, which files.
        Blocking; run it in a thread, with no turn running."""
        checkpoint, rewind_id = plan.checkpoint, secrets.token_hex(6)
        files = [f for f in plan.actionable if f.path in chosen] if scope != "conversation" else []
        kept = [f for f in plan.files if f not in files and f.action != "nothing"]
        targets = _targets(self.checkpoints, checkpoint)
        lines: list[str] = []
        tasks: tuple[Task, ...] | None = None
        if scope != "files" and self.shared:
            lines.append(f"The shared task list {self.shared!r} is left as it is: other sessions work it too.")
        elif scope != "files":
            tasks = history.list_at(self.store.versions(), checkpoint.tasks_version, self.store.snapshot())
            if tasks is None:
                lines.append("The task list is left as it is: the plan history no longer holds its version then.")
        note = _note(checkpoint.text, scope, files, kept, tasks is not None)
        messages = self.conversation.messages
        redo = {
            "id": rewind_id,
            "length": checkpoint.length if scope != "files" else None,
            "messages": list(messages[checkpoint.length :]) if scope != "files" else [],
            "status": dict(self.conversation.tool_status),
            "files": [
                {
                    "path": f.path,
                    "to": asdict(self.changes.capture(self.changes.workspace / f.path)),
                    "was": asdict(targets[f.path]),
                }
                for f in files
            ],
            "tasks": [task_json(t) for t in self.store.snapshot()] if tasks is not None else None,
            "checkpoints": [asdict(c) for c in _after(self.checkpoints, checkpoint)] if scope != "files" else [],
        }
        journal = {
            "id": rewind_id,
            "files": [{"path": f.path, "to": asdict(targets[f.path])} for f in files],
            "length": checkpoint.length if scope != "files" else None,
            "append": [{"role": "user", "content": note}] if scope != "files" or files else [],
            "tasks": [task_json(t) for t in tasks] if tasks is not None else None,
            "what": f"rewound to before the prompt {_quoted(checkpoint.text)}",
            "keep": checkpoint.id if scope != "files" else None,
        }
        self._run({**journal, "redo": redo})
        lines[:0] = _summary(scope, files, kept, tasks is not None)
        return Outcome(checkpoint.text if scope != "files" else "", tuple(lines))

    def redo(self) -> Outcome:
        """Undo the latest rewind: the conversation, files and plan it took back. Blocking.
        A file changed since the rewind is left as it is (said). ValueError with none to redo."""
        side = self._side(".redo.json")
        if side is None or not side.exists():
            raise ValueError("nothing to redo: no rewind since the last prompt")
        redo = json.loads(side.read_bytes())
        files: list[dict[str, Any]] = []
        conflicts: list[dict[str, Any]] = []
        for item in redo["files"]:
            now = look(self.changes.workspace / item["path"], MAX_KEEP_BYTES)
            ok = not _escapes(self.changes, item["path"]) and _matches(_content(item["was"]), now)
            (files if ok else conflicts).append(item)
        files_only = redo["length"] is None
        undone = f"{OPEN_TAG}\n{REWOUND} back (/redo): the files are as they were before the rewind.\n{CLOSE_TAG}"
        journal = {
            "id": redo["id"] + "-redo",
            "files": [{"path": f["path"], "to": f["to"]} for f in files],
            "length": redo["length"],
            "append": [{"role": "user", "content": undone}] if files_only else redo["messages"],
            "status": redo["status"],
            "tasks": redo["tasks"],
            "what": "undid the rewind (/redo)",
            "restore": redo["checkpoints"],
            "redone": True,
        }
        self._run(journal)
        lines = ["Redone: " + ("the files are" if files_only else "the conversation, files and task list are")]
        lines[0] += " back as they were before /rewind."
        if conflicts:
            paths = ", ".join(item["path"] for item in conflicts)
            lines.append(f"Left as they are ({CHANGED_OUTSIDE} the rewind): {paths}")
        return Outcome("", tuple(lines))

    def _run(self, journal: dict[str, Any]) -> None:
        where = self._side(".prompt-rewind.json")
        data = json.dumps(journal).encode()
        if where is not None:
            atomic_write(where, data)
        self._finish(json.loads(data))  # as recovery would read it
        if where is not None:
            where.unlink(missing_ok=True)

    def _finish(self, journal: dict[str, Any]) -> None:
        """The steps, each repeatable: the redo kept (or dropped), files, conversation, checkpoints, plan."""
        side = self._side(".redo.json")
        if side is not None and "redo" in journal:
            atomic_write(side, json.dumps(journal["redo"]).encode())
        if side is not None and journal.get("redone"):
            side.unlink(missing_ok=True)
        for item in journal["files"]:
            _put_back(self.changes, item["path"], _content(item["to"]))
        length, append = journal["length"], journal["append"]
        conversation = self.conversation
        if length is None:
            length = len(conversation.messages)
            if append and conversation.messages[-len(append) :] == append:
                append = []
        if conversation.messages[length:] != append:
            if len(conversation.messages) > length:
                conversation.rewind(length)
            status = journal.get("status", {})
            for message in append:
                conversation.append(message, status.get(str(message.get("tool_call_id"))))
        if (keep := journal.get("keep")) is not None:
            items = self.checkpoints.items
            cut = next((i for i, c in enumerate(items) if c.id == keep), len(items))
            del items[cut:]
        if restore := journal.get("restore"):
            known = {c.id for c in self.checkpoints.items}
            self.checkpoints.items.extend(decode_one(raw) for raw in restore if raw["id"] not in known)
        self.checkpoints.save()
        if journal["tasks"] is not None:
            tasks = tuple(decode_task(raw) for raw in journal["tasks"])
            with contextlib.suppress(StoreError):  # an invalid list stays as it is; the rest is done
                self.store.apply_now(self.store.listed_step(tasks, journal["what"], journal["id"]))

    def recover(self) -> str | None:
        """Finish a rewind (or redo) a kill interrupted (at session open); a notice, if any."""
        where = self._side(".prompt-rewind.json")
        if where is None or not where.exists():
            return None
        try:
            journal = json.loads(where.read_bytes())
            self._finish(journal)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return f"An interrupted /rewind could not be finished ({exc}); its journal is {where}."
        where.unlink(missing_ok=True)
        return f"Finished a /rewind that was interrupted: {journal['what']}."


def _after(checkpoints: Checkpoints, first: Checkpoint) -> list[Checkpoint]:
    """`first` and every checkpoint after it."""
    return checkpoints.items[checkpoints.items.index(first) :]


def _targets(checkpoints: Checkpoints, first: Checkpoint) -> dict[str, Content]:
    """Per file, what it held before the first change since `first`'s prompt."""
    targets: dict[str, Content] = {}
    for checkpoint in _after(checkpoints, first):
        for path, touched in checkpoint.files.items():
            targets.setdefault(path, touched.before)
    return targets


PROMPT = Since("the prompt", "todo-agent left", lambda: CHANGED_OUTSIDE, rewound_label="rewound")
"""A prompt rewind's words for each file (`rewind.plan_file`)."""


def _quoted(text: str) -> str:
    line = " ".join(text.split())
    return json.dumps(line if len(line) <= 80 else line[:79] + "…", ensure_ascii=False)


def _summary(scope: Scope, files: Sequence[FilePlan], kept: Sequence[FilePlan], tasks: bool) -> list[str]:
    restored = [f.path for f in files if f.action == "restore"]
    deleted = [f.path for f in files if f.action == "delete"]
    parts = []
    if scope != "files":
        parts.append("the conversation is cut back to just before it" + (", the task list back too" if tasks else ""))
    if restored:
        parts.append("restored " + ", ".join(restored))
    if deleted:
        parts.append("deleted " + ", ".join(deleted) + " (created since)")
    lines = ["Rewound: " + "; ".join(parts or ["no file needed putting back"]) + ". /redo undoes it."]
    if kept and scope != "conversation":
        lines.append("Left as they are: " + ", ".join(f"{f.path} ({f.conflict or f.note})" for f in kept))
    elif kept:
        lines.append("Files left as they are: " + ", ".join(f.path for f in kept))
    return lines


def _note(text: str, scope: Scope, files: Sequence[FilePlan], kept: Sequence[FilePlan], tasks: bool) -> str:
    """The model's one note on the rewind."""
    what = {
        "both": "the conversation and the files",
        "conversation": "the conversation (not the files)",
        "files": "the files (not the conversation)",
    }[scope]
    lines = [f"{REWOUND} {what} to just before their prompt {_quoted(text)}."]
    if scope != "files":
        lines.append("What came after that prompt is gone from this conversation; they may send it again.")
    restored = [f.path for f in files if f.action == "restore"]
    deleted = [f.path for f in files if f.action == "delete"]
    if restored:
        lines.append("Files back as they were then: " + ", ".join(restored) + ".")
    if deleted:
        lines.append("Files deleted (created after it): " + ", ".join(deleted) + ".")
    if kept:
        lines.append("Files left as they are now: " + ", ".join(f.path for f in kept) + ".")
    if tasks:
        lines.append("The task list is back to its version then.")
    return f"{OPEN_TAG}\n" + "\n".join(lines) + f"\n{CLOSE_TAG}"
