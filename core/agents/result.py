"""What a sub-agent's run adds up to: its status, measured from how it ended, and the
result its `Agent` call returns.

The status is the harness's, not the sub-agent's: `completed` needs a clean end (and, with
a task, the task marked completed); a run cut short for any reason is `partial`, one that
could not go on `failed`, one the person stopped or declined `cancelled`, and one that
claimed its task done having done nothing (no tool call besides the task tools, no file
changed, no passing check) `unverified`: its task goes back to pending. The files are
measured from the change record, never taken from what the sub-agent says.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..changes.log import ChangeLog, Content, count_lines
from ..events import AgentFinished, AgentStatus

PARTIAL_REASONS = {
    "max_turns": "it used up its model requests (max_turns)",
    "length": "its answer was cut at the output limit",
    "loop": "the repeated-call guard stopped it",
    "budget": "its task's budget is used up",
}
MAX_SUMMARY_CHARS = 6_000


UNVERIFIED = (
    "it said its task was completed but did nothing to show it: no tool call besides the task tools and no "
    "file changed, so its task is pending again"
)
"""Why a run that claimed its task done with no evidence is settled `unverified`."""


def status_of(reason: str, *, marked_done: bool | None, stopped: str) -> tuple[AgentStatus, str]:
    """(status, why) from how its turn ended. `marked_done`: whether it marked its task
    completed (None: it has no task); `stopped`: why it was stopped, if it was."""
    if reason == "done":
        if marked_done is False:
            return "partial", "it ended without marking its task completed"
        return "completed", "finished"
    if reason in PARTIAL_REASONS:
        return "partial", PARTIAL_REASONS[reason]
    if reason == "interrupted":
        return "cancelled", stopped or "interrupted"
    if reason == "rejected":
        return "cancelled", "you declined one of its calls"
    return "failed", stopped or "its model request failed"


Mark = tuple[int, Mapping[str, Content]]
"""The change record of a task (or a sub-agent) when a run began: its sequence number and
each file's content then."""


def mark(changes: ChangeLog, key: str) -> Mark:
    return changes.seq, {f.path: f.after for f in changes.files_of(key)}


def files_changed(changes: ChangeLog, key: str, since: Mark) -> tuple[str, ...]:
    """`path  +A −R` for each file the run changed (from what it was when the run began)."""
    seq, before = since
    lines = []
    for change in changes.files_of(key):
        if change.last <= seq:
            continue
        old = before.get(change.path, change.before)
        if old == change.after:
            continue
        kind = "created" if old.state == "absent" else "deleted" if change.after.state == "absent" else ""
        if "kept" in (old.state, change.after.state) or kind:
            added, removed = count_lines(_bytes(changes, old), _bytes(changes, change.after))
            counts = f"+{added} −{removed}"
        else:
            counts = "(content not kept)"
        lines.append(f"{change.path}  {counts}" + (f" ({kind})" if kind else ""))
    return tuple(lines)


def _bytes(changes: ChangeLog, content: Content) -> bytes | None:
    return None if content.state == "absent" else changes.blob(content) or b""


def result_text(finished: AgentFinished, task_line: str) -> str:
    """The `Agent` call's result, for the model that made it."""
    head = f"[{finished.agent_id}] {finished.status}"
    if finished.status != "completed":
        head += f" ({finished.reason})"
    lines = [head + (f": {task_line}" if task_line else "")]
    summary = finished.summary.strip() or "(it said nothing)"
    if len(summary) > MAX_SUMMARY_CHARS:
        summary = summary[: MAX_SUMMARY_CHARS - 1] + "…"
    lines.append(f"Its summary:\n{summary}")
    files = "\n".join(f"  {line}" for line in finished.files) if finished.files else "  none"
    lines.append(f"Files it changed (measured):\n{files}")
    lines.append(
        f"{finished.tools} tool calls · {finished.turns} model requests · {finished.tokens:,} tokens · "
        f"{finished.elapsed:.0f}s"
    )
    return "\n".join(lines)
