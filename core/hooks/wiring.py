"""The settings' shell hooks, plugged into the agent's lifecycle seams.

`ShellHooks` turns each seam (`core/lifecycle.py`) into the matching hook event, builds
its Claude-Code input, runs it (`core/hooks/runner.py`) and words the outcome for whoever must
read it:

- `SessionStart` (`session_start`, called by the front ends on start-up, `/new` and
  resume): its context waits and goes to the model with the next prompt.
- `UserPromptSubmit` (`before_prompt`): a block keeps the prompt from being sent and
  tells the person why; stdout goes to the model after the prompt.
- `PreToolUse` (`before_tool`): a block answers the call with the hook's reason.
- `PostToolUse` (`after_tool`): a block's reason and any context are added to the result.
- `Stop` (`stop`): a block continues the turn with the reason, at most
  `MAX_STOP_CONTINUATIONS` times per user turn; after that the turn ends with a notice.
- `TaskCreated` / `TaskCompleted` (`task_change`): a block refuses the tool call.
- `PreCompact` (`before_compact`): runs before a compaction; it cannot stop it.
- `Notification` (`notification`, called by the TUI when it waits for the person: an
  approval opened, or a long turn ended): the person's own way of being told; it cannot
  block anything.
- `SubagentStart` (`subagent_start`, called by the team as a sub-agent starts): cannot
  block; its `additionalContext` joins the sub-agent's brief.
- `SubagentStop` (a sub-agent's `stop`): like `Stop`, for the sub-agent: a block keeps it
  at work with the reason as its next instruction.
A sub-agent's tool calls ask `PreToolUse`/`PostToolUse` and its task changes the task
hooks, like the main agent's (`install_for_subagent`).
Text for the model is wrapped in `<system-reminder>` tags, like the task reminders.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from ..events import Event, Notice
from ..lifecycle import CompactInfo, Lifecycle, StopState, TaskChange, ToolOutput, ToolUse, Verdict
from ..tasks.reminders import wrap
from .runner import HookOutcome, HookRunner
from .spec import HookEvent

MAX_STOP_CONTINUATIONS = 3
"""A `Stop` hook that always blocks cannot keep a turn going for ever."""

SessionSource = Literal["startup", "resume", "clear", "compact"]
NotificationKind = Literal["permission_prompt", "idle_prompt"]
"""Claude Code's names: an approval waits; a turn has ended and the prompt waits."""


def _verdict(outcome: HookOutcome, block: str = "", context: str = "") -> Verdict:
    return Verdict(block if outcome.blocked else "", context, outcome.events)


def _context(event: HookEvent, text: str) -> str:
    return wrap(f"{event} hook additional context:\n{text}") if text else ""


class ShellHooks:
    """The hooks of one runtime (one runner), as lifecycle gates."""

    def __init__(self, runner: HookRunner) -> None:
        self.runner = runner
        self._pending_context = ""
        """SessionStart's context, until a prompt carries it to the model."""
        self._starting = asyncio.Lock()

    def install(self, lifecycle: Lifecycle) -> None:
        """Add the gates. Each asks the runner at the moment it runs, so hooks enabled
        later (the person trusts the project's) take effect without a new agent; an
        event without hooks costs a scan of the specs, no process."""
        lifecycle.before_prompt.append(self.before_prompt)
        lifecycle.before_tool.append(self.before_tool)
        lifecycle.after_tool.append(self.after_tool)
        lifecycle.stop.append(self.stop)
        lifecycle.task_change.append(self.task_change)
        lifecycle.before_compact.append(self.before_compact)

    def install_for_subagent(self, lifecycle: Lifecycle, agent_id: str, agent_type: str, transcript: str) -> None:
        """A sub-agent's gates: the tool and task hooks as for the main agent, and
        `SubagentStop` where the main agent has `Stop`."""
        lifecycle.before_tool.append(self.before_tool)
        lifecycle.after_tool.append(self.after_tool)
        lifecycle.task_change.append(self.task_change)
        lifecycle.before_compact.append(self.before_compact)

        async def stop(state: StopState) -> Verdict:
            fields = {
                "stop_hook_active": state.continuations > 0,
                "agent_id": agent_id,
                "agent_type": agent_type,
                "agent_transcript_path": transcript,
                "last_assistant_message": state.final_text,
            }
            outcome = await self.runner.run("SubagentStop", fields, target=agent_type)
            return self._stop_verdict("SubagentStop", outcome, state)

        lifecycle.stop.append(stop)

    async def subagent_start(self, agent_id: str, agent_type: str) -> Verdict:
        """The SubagentStart hooks; their context is for the sub-agent's brief."""
        fields = {"agent_id": agent_id, "agent_type": agent_type}
        outcome = await self.runner.run("SubagentStart", fields, target=agent_type)
        return Verdict("", _context("SubagentStart", outcome.context_text), outcome.events)

    async def session_start(self, source: SessionSource) -> list[Event]:
        """Run the SessionStart hooks; their context goes out with the next prompt."""
        async with self._starting:
            outcome = await self.runner.run("SessionStart", {"source": source}, target=source)
            # A new start replaces what an earlier one said (a /new before any prompt).
            self._pending_context = _context("SessionStart", outcome.context_text)
        return list(outcome.events)

    async def before_prompt(self, prompt: str) -> Verdict:
        async with self._starting:  # a prompt sent while SessionStart still runs waits for it
            outcome = await self.runner.run("UserPromptSubmit", {"prompt": prompt})
            if outcome.blocked:  # the prompt is not sent, so SessionStart's context keeps waiting
                return _verdict(outcome, block=outcome.reason)
            pending, self._pending_context = self._pending_context, ""
        context = "\n\n".join(c for c in (pending, _context("UserPromptSubmit", outcome.context_text)) if c)
        return _verdict(outcome, context=context)

    async def before_tool(self, use: ToolUse) -> Verdict:
        fields = {"tool_name": use.name, "tool_input": dict(use.arguments), "tool_use_id": use.call_id}
        outcome = await self.runner.run("PreToolUse", fields, target=use.name)
        return _verdict(outcome, block=f"PreToolUse hook blocked this call: {outcome.reason}")

    async def after_tool(self, done: ToolOutput) -> Verdict:
        use = done.use
        fields = {
            "tool_name": use.name,
            "tool_input": dict(use.arguments),
            "tool_use_id": use.call_id,
            "tool_response": {"output": done.output, "is_error": done.is_error},
        }
        outcome = await self.runner.run("PostToolUse", fields, target=use.name)
        parts = [_context("PostToolUse", outcome.context_text)]
        if outcome.blocked:  # the call has run; the model reads the hook's complaint with its result
            parts.insert(0, wrap(f"PostToolUse hook feedback:\n{outcome.reason}"))
        return Verdict("", "\n\n".join(p for p in parts if p), outcome.events)

    async def stop(self, state: StopState) -> Verdict:
        fields = {"stop_hook_active": state.continuations > 0, "last_assistant_message": state.final_text}
        outcome = await self.runner.run("Stop", fields)
        return self._stop_verdict("Stop", outcome, state)

    @staticmethod
    def _stop_verdict(event: HookEvent, outcome: HookOutcome, state: StopState) -> Verdict:
        if outcome.blocked and state.continuations >= MAX_STOP_CONTINUATIONS:
            notice = Notice(
                f"{event} hooks blocked the end of this turn {state.continuations + 1} times; "
                "it ends anyway (a hook should let a turn end once it has had its say)",
                "warning",
            )
            return Verdict("", "", (*outcome.events, notice))
        return _verdict(outcome, block=wrap(f"{event} hook feedback:\n{outcome.reason}"))

    async def task_change(self, change: TaskChange) -> Verdict:
        task = change.task
        fields = {
            "task": {
                "id": task.id,
                "subject": task.subject,
                "description": task.description,
                "status": task.status,
                "activeForm": task.activeForm,
                "owner": task.owner,
            },
            # Claude Code's own flat names, so its scripts work unchanged.
            "task_id": task.id,
            "task_subject": task.subject,
            "task_description": task.description,
        }
        subjects = (task.subject, change.before.subject) if change.before is not None else task.subject
        outcome = await self.runner.run(change.event, fields, target=subjects)
        verb = "creating" if change.event == "TaskCreated" else "completing"
        block = f'{change.event} hook refused {verb} task #{task.id} "{task.subject}": {outcome.reason}'
        return _verdict(outcome, block=block)

    async def notification(self, message: str, kind: NotificationKind, terminal_focused: bool) -> list[Event]:
        """Claude Code's `Notification` hook, with whether the terminal had focus (so a hook
        can stay quiet while the person is looking)."""
        fields = {"message": message, "notification_type": kind, "terminal_focused": terminal_focused}
        outcome = await self.runner.run("Notification", fields, target=kind)
        return list(outcome.events)

    async def before_compact(self, info: CompactInfo) -> list[Event]:
        # Claude Code knows two triggers; a compaction forced by an overflowing request is automatic.
        trigger = "manual" if info.trigger == "manual" else "auto"
        outcome = await self.runner.run("PreCompact", {"trigger": trigger, "custom_instructions": info.focus}, trigger)
        return list(outcome.events)
