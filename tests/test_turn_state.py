"""One turn state per agent: what a turn allows (a custom command's `allowed-tools`) and the
model it runs on belong to that agent's turn, never to the gate every agent shares."""

from __future__ import annotations

from pathlib import Path

from agent_helpers import agent, call, finished, run, runtime_for

from todo_agent.core.events import ToolFinished
from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.core.settings import user_settings_path


def command(name: str, text: str) -> None:
    path = user_settings_path().parent / "commands" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def test_a_sub_agent_does_not_end_the_commands_allowed_tools(workspace: Path) -> None:
    command("tidy", "---\nallowed-tools: Bash(touch:*)\n---\nTidy up.")
    touch = {"tool_calls": [call("Bash", command="touch made.txt")]}
    script = {
        "steps": [
            {"tool_calls": [agent("Look around", "look around and say what is there")]},
            touch,  # after the sub-agent ran: the command's rule still allows it
            {"text": "done"},
        ],
        "agents": [
            {
                "match": "Look around",
                # The child's turn is its own: the command's rules are not the child's.
                "steps": [{"tool_calls": [call("Bash", command="touch child.txt")]}, {"text": "nothing here"}],
            }
        ],
    }
    runtime, _ = runtime_for(workspace, script)
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("feedback", "not you")

    runtime.set_approver(approver)
    events = await run(runtime, "/tidy")
    assert finished(events)["general-1"].status == "completed"
    assert (workspace / "made.txt").exists()
    # Asked once: the child's Bash (never wider than the session's own rules), not the command's.
    assert [(r.tool, r.agent) for r in asked] == [("Bash", "general-1 · Look around")]
    assert not (workspace / "child.txt").exists()
    main_calls = [e for e in events if isinstance(e, ToolFinished)]
    assert [(e.name, e.status) for e in main_calls] == [("Agent", "ok"), ("Bash", "ok")]


async def test_the_rules_end_with_the_commands_turn(workspace: Path) -> None:
    command("tidy", "---\nallowed-tools: Bash(touch:*)\n---\nTidy up.")
    touch = {"tool_calls": [call("Bash", command="touch made.txt")]}
    runtime, _ = runtime_for(workspace, {"steps": [touch, {"text": "done"}, touch, {"text": "ok"}]})
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request.tool)
        return ApprovalAnswer("feedback", "no")

    runtime.set_approver(approver)
    await run(runtime, "/tidy")
    assert (workspace / "made.txt").exists() and asked == []
    (workspace / "made.txt").unlink()
    await run(runtime, "again")
    assert asked == ["Bash"] and not (workspace / "made.txt").exists()
