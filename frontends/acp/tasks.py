"""`_todo_agent/task_update`: a client's edit of the plan, as the panel's edits are made
(`runtime.plan`, the store's `user_*`: under its lock, in the plan's history, told to the
model once with its next request).

Params: `sessionId`, `action` and what it needs: `add` (`subject`), `set_status`
(`taskId`, `status`: pending, in_progress, completed), `rename` (`taskId`, `subject`),
`delete` (`taskId`). The result is `{"task": {...}}`, the task as a plan entry's `_meta`
has it; a plan update with every entry follows.
"""

from __future__ import annotations

from typing import Any

from acp import RequestError

from todo_agent.core.runtime import Runtime
from todo_agent.core.tasks.model import StoreError
from todo_agent.core.tasks.persistence import PersistenceError

from .updates import task_meta

ACTIONS = ("add", "set_status", "rename", "delete")


def _text(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value.strip():
        raise RequestError.invalid_params({key: f"{key} must be a non-empty string"})
    return value


async def apply_task_update(runtime: Runtime, params: dict[str, Any]) -> dict[str, Any]:
    action = params.get("action")
    plan = runtime.plan
    try:
        if action == "add":
            task = await plan.add(_text(params, "subject"))
        elif action == "set_status":
            task = await plan.set_status(_text(params, "taskId"), _text(params, "status"))
        elif action == "rename":
            task = await plan.rename(_text(params, "taskId"), _text(params, "subject"))
        elif action == "delete":
            task = await plan.delete(_text(params, "taskId"))
        else:
            raise RequestError.invalid_params({"action": f"one of {', '.join(ACTIONS)}"})
    except (StoreError, PersistenceError) as exc:
        raise RequestError.invalid_params({"task": str(exc)}) from None
    return {"task": {**task_meta(task), "subject": task.subject, "status": task.status}}
