"""The docked task panel: the plan, its progress, and the person's edits to it.

The panel draws a tuple of frozen `Task` values and rebuilds only when given a new one
(`show`); the spinner of the task in progress is the only thing that ticks. Edits made
here are posted as messages; whoever owns the task store applies them and calls `show`.

A task a sub-agent claimed shows its owner and what it does now (`show_agents`: its tool,
or its task's activeForm), with its time and tokens; `o` asks to see that sub-agent's
transcript and `x` to stop it. A task given back shows its attempts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, ListItem, ListView, ProgressBar, Static

from todo_agent.core.agents.state import AgentRow
from todo_agent.core.tasks.budgets import describe, spend_line, used_up
from todo_agent.core.tasks.model import Task, time_in_progress
from todo_agent.core.tasks.render import MARKS, check_line, mark
from todo_agent.core.tasks.rules import MAX_LABEL

from ..sanitize import sanitize
from .spinner import Spinner
from .status import format_seconds

MARKERS = MARKS


def open_blockers(task: Task, tasks: Sequence[Task]) -> list[str]:
    """Ids of the tasks blocking `task` that are not completed yet."""
    done = {t.id for t in tasks if t.status == "completed"}
    return [b for b in task.blockedBy if b not in done]


def meta_line(task: Task, tasks: Sequence[Task], *, now: float, agent: AgentRow | None = None) -> str:
    """`3 calls · 1m10s · 4.1k tok · ⧗ blocked by #1`, or empty: the tool calls made while
    the task was in progress, the time it has spent in progress (all of it, waits for an
    approval included, not only the tools' run time), the tokens of its sub-agent at work,
    and how earlier sub-agents' attempts at it ended."""
    parts: list[str] = []
    if task.tool_calls:
        parts.append(f"{task.tool_calls} {'call' if task.tool_calls == 1 else 'calls'}")
    if task.started_at is not None or task.progress_since is not None or task.progress_seconds:
        parts.append(format_seconds(time_in_progress(task, now=now)))
    if agent is not None and agent.tokens and agent.phase != "done":
        parts.append(f"{agent.tokens / 1000:.1f}k tok" if agent.tokens >= 1000 else f"{agent.tokens} tok")
    blockers = open_blockers(task, tasks)
    if blockers and task.status != "completed":
        parts.append("⧗ blocked by " + ", ".join(f"#{b}" for b in blockers))
    if task.attempts and task.claim is None and task.status != "completed":
        last = task.attempts[-1]
        count = f"{len(task.attempts)} attempts" if len(task.attempts) > 1 else "1 attempt"
        parts.append(f"{count}, last {last.outcome} ({last.agent})")
    return " · ".join(parts)


def owner_line(task: Task, agent: AgentRow | None) -> str:
    """What the row's second line says: `general-1: Edit posts.py` for a claimed task,
    else the task's activeForm (or subject)."""
    if task.claim is None:
        return task.activeForm or task.subject
    if agent is None or agent.phase == "done":
        return f"{task.claim.agent}: {task.activeForm or 'at work'}"
    doing = "waiting for a free slot" if agent.phase == "waiting" else agent.activity
    if agent.phase == "running" and agent.activity in ("thinking", "writing", "starting") and task.activeForm:
        doing = task.activeForm
    return f"{task.claim.agent}: {doing}"


class TaskItem(ListItem):
    """One task: marker, `#id subject`, then `← activeForm` and a meta line when relevant.

    A row is built once and then shows whichever task `show_task` gives it: redrawing the
    list updates rows in place, so it is never seen empty or half drawn.
    """

    def __init__(
        self,
        task: Task,
        tasks: Sequence[Task],
        *,
        running: bool = False,
        now: float = 0.0,
        files: str = "",
        agent: AgentRow | None = None,
    ) -> None:
        super().__init__()
        self._marker = Static("", classes="task-marker", markup=False)
        self._subject = Static("", classes="task-subject", markup=False)
        self._active_form = Static("", classes="active-form", markup=False)
        self._spinner = Spinner(spinning=False)
        self._active = Horizontal(self._spinner, self._active_form, classes="task-active")
        self._meta = Static("", classes="task-meta", markup=False)
        self._check = Static("", classes="task-check", markup=False)
        self._budget = Static("", classes="task-budget", markup=False)
        self._files = Static("", classes="task-files", markup=False)
        self.task_value = task
        self.files = files
        self.show_task(task, tasks, running=running, now=now, files=files, agent=agent)

    def compose(self) -> ComposeResult:
        with Horizontal(classes="task-line"):  # a long subject wraps under itself, not the marker
            yield self._marker
            yield self._subject
        yield self._active
        yield self._meta
        yield self._check
        yield self._budget
        yield self._files

    def show_task(
        self,
        task: Task,
        tasks: Sequence[Task],
        *,
        running: bool,
        now: float,
        files: str | None = None,
        agent: AgentRow | None = None,
    ) -> None:
        """Show `task` (one of `tasks`, which its meta line needs for blockers) at time
        `now`; its spinner turns only while the agent is `running`. `files` is what the
        task changed (`2 files · +14 −3`; None keeps the line as it is); `agent`, the
        sub-agent working it."""
        self.task_value = task
        if files is not None:
            self.files = files
            self._files.update(Content(files))
            self._files.display = bool(files)
        for status in MARKERS:
            self.set_class(task.status == status, f"-{status}")
        self._marker.update(mark(task))
        self.set_class(task.verified, "-verified")
        self._subject.update(Content.assemble((f"#{task.id} ", "bold"), sanitize(task.subject)))
        self._active.display = task.status == "in_progress"
        self._spinner.spinning = running and task.status == "in_progress"
        self.set_class(task.claim is not None, "-claimed")
        self._active_form.update(Content(f" ← {sanitize(owner_line(task, agent))}"))
        meta = meta_line(task, tasks, now=now, agent=agent)
        self._meta.update(Content(meta))
        self._meta.display = bool(meta)
        check = check_line(task)
        self._check.update(Content(sanitize(check)))
        self._check.display = bool(check)
        last = task.last_check
        self.set_class(bool(check) and last is not None and not last.passed and task.check_running is None, "-failing")
        spend = spend_line(task, now)
        self._budget.update(Content(spend))
        self._budget.display = bool(spend)
        self.set_class(bool(spend) and used_up(task, now) is not None, "-spent")


class TaskListView(ListView):
    """The list itself; keys edit the plan while it has focus."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "add", "Add task", tooltip="Add a task to the plan"),
        Binding("space", "tick", "Tick", tooltip="Mark the highlighted task completed, or pending again"),
        Binding("d,delete", "delete", "Delete", tooltip="Delete the highlighted task"),
        Binding("shift+up,K", "move(-1)", "Move up", tooltip="Move the highlighted task up", show=False),
        Binding("shift+down,J", "move(1)", "Move down", tooltip="Move the highlighted task down", show=False),
        # e and u are in the panel's help line; the footer keeps room for the app's keys.
        Binding("e", "edit", "Edit", tooltip="Edit the highlighted task's subject", show=False),
        Binding("v", "check", "Check", tooltip="Set, edit or remove the command that proves the highlighted task"),
        Binding("b", "budget", "Budget", tooltip="Set, raise or remove the highlighted task's budget", show=False),
        Binding("enter", "changes", "Changes", tooltip="Show what the highlighted task changed, as one diff"),
        Binding("r", "rewind", "Rewind", tooltip="Put the files the highlighted task changed back as they were"),
        Binding("u", "undo", "Undo", tooltip="Undo your last change to the list", show=False),
        Binding("o", "open_agent", "Agent", tooltip="Show the transcript of the sub-agent that works this task"),
        Binding("x", "stop_agent", "Stop agent", tooltip="Stop the sub-agent that works this task"),
    ]

    def _highlighted_task(self) -> Task | None:
        item = self.highlighted_child
        return item.task_value if isinstance(item, TaskItem) else None

    def action_add(self) -> None:
        panel = self.query_ancestor(TaskPanel)
        panel.open_add()

    def action_tick(self) -> None:
        task = self._highlighted_task()
        if task is not None:
            status = "pending" if task.status == "completed" else "completed"
            self.post_message(TaskPanel.StatusChange(task.id, status))

    def action_delete(self) -> None:
        task = self._highlighted_task()
        if task is not None:
            self.post_message(TaskPanel.Delete(task.id))

    def action_move(self, delta: int) -> None:
        task = self._highlighted_task()
        if task is not None:
            self.post_message(TaskPanel.Move(task.id, delta))

    def action_edit(self) -> None:
        task = self._highlighted_task()
        if task is not None:
            self.query_ancestor(TaskPanel).open_edit(task)

    def action_check(self) -> None:
        task = self._highlighted_task()
        if task is not None:
            self.query_ancestor(TaskPanel).open_check(task)

    def action_budget(self) -> None:
        task = self._highlighted_task()
        if task is not None:
            self.query_ancestor(TaskPanel).open_budget(task)

    def action_changes(self) -> None:
        task = self._highlighted_task()
        if task is not None:
            self.post_message(TaskPanel.ShowChanges(task.id))

    def action_rewind(self) -> None:
        task = self._highlighted_task()
        if task is not None:
            self.post_message(TaskPanel.Rewind(task.id))

    def action_undo(self) -> None:
        self.post_message(TaskPanel.Undo())

    def action_open_agent(self) -> None:
        task = self._highlighted_task()
        if task is not None:
            self.post_message(TaskPanel.OpenAgent(task.id))

    def action_stop_agent(self) -> None:
        task = self._highlighted_task()
        if task is not None:
            self.post_message(TaskPanel.StopAgent(task.id))


class AddTaskInput(Input):
    """The one-line input that `a` opens."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", tooltip="Close the input without adding a task"),
    ]

    def action_cancel(self) -> None:
        self.query_ancestor(TaskPanel).action_cancel_add()


class TaskPanel(Vertical):
    """Progress, the list (or "No tasks yet"), and an input for adding a task."""

    clock = staticmethod(time.time)
    """The store's clock (task times are wall-clock stamps); tests and screenshots pin it."""

    @dataclass
    class Add(Message):
        """The person typed a new task."""

        subject: str

    @dataclass
    class StatusChange(Message):
        task_id: str
        status: str

    @dataclass
    class Delete(Message):
        task_id: str

    @dataclass
    class Move(Message):
        task_id: str
        delta: int

    @dataclass
    class Rename(Message):
        """The person edited a task's subject (`e`)."""

        task_id: str
        subject: str

    @dataclass
    class SetCheck(Message):
        """The person set or edited a task's check (`v`); an empty command removes it."""

        task_id: str
        command: str

    @dataclass
    class SetBudget(Message):
        """The person set or changed a task's budget (`b`), as typed; empty removes it."""

        task_id: str
        text: str

    @dataclass
    class ShowChanges(Message):
        """`enter`: show what the task changed."""

        task_id: str

    @dataclass
    class Rewind(Message):
        """`r`: offer to put the task's files back."""

        task_id: str

    class Undo(Message):
        """`u`: undo the person's last change to the list."""

    @dataclass
    class OpenAgent(Message):
        """`o`: show the transcript of the task's sub-agent (running, or its latest)."""

        task_id: str

    @dataclass
    class StopAgent(Message):
        """`x`: stop the sub-agent working the task."""

        task_id: str

    class AddCancelled(Message):
        """The person closed the add-task input with escape (the screen may move focus on)."""

    DEFAULT_CSS = """
    TaskPanel {
        border: round $surface-lighten-2;
        border-title-color: $text-accent;
        padding: 0 1;
        height: 1fr;
        &:focus-within { border: round $accent; }
        #task-progress-label { color: $text-muted; }
        #task-progress { height: 1; margin-bottom: 1; }
        #task-progress Bar { width: 1fr; }
        #task-empty { color: $text-muted; text-style: italic; }
        #task-list { height: auto; max-height: 1fr; background: transparent; }
        #task-list > TaskItem { padding: 0 0; }
        #task-list > TaskItem.-highlight { background: transparent; }
        #task-list:focus > TaskItem.-highlight { background: $block-cursor-background; }
        .task-line { height: auto; }
        .task-marker { width: 2; }
        .task-subject { width: 1fr; }
        #task-list > TaskItem.-completed .task-line { color: $text-muted; text-style: dim; }
        #task-list > TaskItem.-in_progress .task-subject { text-style: bold; }
        .task-active { height: 1; padding-left: 2; color: $text-accent; }
        .task-active > .active-form { width: 1fr; }
        .task-meta { padding-left: 2; color: $text-muted; }
        .task-files { padding-left: 2; color: $text-muted; }
        .task-check { padding-left: 2; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }
        TaskItem.-failing .task-check { color: $error; }
        .task-budget { padding-left: 2; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }
        TaskItem.-spent .task-budget { color: $warning; }
        TaskItem.-verified .task-marker { color: $success; }
        #task-help { display: none; color: $text-muted; margin-top: 1; }
        &:focus-within #task-help { display: block; }
        &.-empty #task-progress { display: none; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tasks: tuple[Task, ...] = ()
        self.border_title = "Tasks"
        self._working = False
        self._ticker: Timer | None = None
        self.changes: Mapping[str, str] = {}
        """Per task id, what it changed (`2 files · +14 −3`)."""
        self._editing: str | None = None
        """The task whose subject (check, budget) the input edits; None while it adds a task."""
        self._editing_what: Literal["subject", "check", "budget"] = "subject"
        """What of `_editing` the input edits."""
        self._drawing = asyncio.Lock()
        """`show` awaits between clearing and refilling the list; two at once would interleave."""
        self.agents: dict[str, AgentRow] = {}
        """Per task id, the sub-agent working it (or that worked it last in this run)."""

    def compose(self) -> ComposeResult:
        yield Static("", id="task-progress-label", markup=False)
        yield ProgressBar(total=1, show_eta=False, show_percentage=False, id="task-progress")
        yield Static("No tasks yet", id="task-empty", markup=False)
        yield TaskListView(id="task-list")
        # Not selected on focus: `e` puts the cursor after the subject, so typing edits it.
        yield AddTaskInput(placeholder="New task: enter adds, esc cancels", id="task-add", select_on_focus=False)
        yield Static(
            "a add · e edit · v check · b budget · space tick · d delete · J/K move · enter changes · r rewind · "
            "u undo · o agent · x stop agent",
            id="task-help",
            markup=False,
        )

    def on_mount(self) -> None:
        self.query_one("#task-add").display = False
        self._show_counts()

    @property
    def list_view(self) -> TaskListView:
        return self.query_one(TaskListView)

    @property
    def working(self) -> bool:
        """Whether the agent is at work: the in-progress task's spinner turns only then."""
        return self._working

    @working.setter
    def working(self, value: bool) -> None:
        self._working = value
        self._redraw_rows()
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        if value and self.app.animation_level != "none":  # the task in progress's time ticks
            self._ticker = self.set_interval(1, partial(self._redraw_rows, only_in_progress=True))

    def _redraw_rows(self, *, only_in_progress: bool = False) -> None:
        now = self.clock()
        for row in self.list_view.query_children(TaskItem):
            if not only_in_progress or row.task_value.status == "in_progress":
                task = row.task_value
                row.show_task(task, self.tasks, running=self._working, now=now, agent=self.agents.get(task.id))

    def show_agents(self, rows: Sequence[AgentRow]) -> None:
        """The sub-agents at work (and done) now; the rows of their tasks follow them."""
        agents: dict[str, AgentRow] = {}
        for row in rows:
            if row.task_id is not None and (row.phase != "done" or row.task_id not in agents):
                agents[row.task_id] = row
        if agents != self.agents:
            self.agents = agents
            self._redraw_rows()

    @property
    def drawing(self) -> bool:
        """Whether a redraw is under way (tests wait for the panel to match the store)."""
        return self._drawing.locked()

    @property
    def completed(self) -> int:
        return sum(1 for t in self.tasks if t.status == "completed")

    async def show(
        self, tasks: Sequence[Task], *, highlight: str | None = None, changes: Mapping[str, str] | None = None
    ) -> None:
        """Draw a new state of the list, keeping the highlight on the same task, or moving
        it to task `highlight` (one the person just added). `changes` (task id → a line
        like `2 files · +14 −3`) replaces what the tasks changed; None keeps it.

        Calls are drawn one after another, in the order made: the last one made wins.
        """
        async with self._drawing:
            if changes is not None:
                self.changes = dict(changes)
            await self._draw(tasks, highlight)

    async def _draw(self, tasks: Sequence[Task], highlight: str | None = None) -> None:
        """Show `tasks` in one visible step.

        Rows are reused in place. New rows are mounted hidden first; then, with no await
        in between, every row is updated, the new ones shown and the surplus hidden, so
        the screen never shows the list cleared or half redrawn. Surplus rows are removed
        afterwards.
        """
        view = self.list_view
        current = view.highlighted_child
        keep = current.task_value.id if isinstance(current, TaskItem) else None
        if highlight is not None and any(t.id == highlight for t in tasks):
            keep = highlight
        position = view.index or 0
        tasks = tuple(tasks)
        rows = list(view.query_children(TaskItem))
        now = self.clock()
        added = [
            TaskItem(
                t, tasks, running=self._working, now=now, files=self.changes.get(t.id, ""), agent=self.agents.get(t.id)
            )
            for t in tasks[len(rows) :]
        ]
        for row in added:
            row.display = False
        if added:
            await view.extend(added)
        # One step from here: nothing below awaits until the surplus rows go.
        self.tasks = tasks
        for row, task in zip(rows, tasks, strict=False):
            files, agent = self.changes.get(task.id, ""), self.agents.get(task.id)
            row.show_task(task, tasks, running=self._working, now=now, files=files, agent=agent)
        for row in added:
            row.display = True
        surplus = rows[len(tasks) :]
        for row in surplus:
            row.display = False
        ids = [t.id for t in tasks]
        if tasks:  # the same task, or (it was deleted) the one now in its place
            view.index = ids.index(keep) if keep in ids else min(position, len(ids) - 1)
        else:
            view.index = None
        self._show_counts()
        if surplus:
            await view.remove_children(surplus)

    def _show_counts(self) -> None:
        total, done = len(self.tasks), self.completed
        self.set_class(total == 0, "-empty")
        label = self.query_one("#task-progress-label", Static)
        verified = sum(1 for t in self.tasks if t.verified)
        proven = f", {verified} verified" if verified else ""
        label.update(f"({done}/{total} completed{proven})" if total else "")
        bar = self.query_one("#task-progress", ProgressBar)
        bar.update(total=max(total, 1), progress=done)
        self.query_one("#task-empty").display = total == 0

    def open_add(self) -> None:
        add = self.query_one("#task-add", Input)
        self._editing, self._editing_what = None, "subject"
        add.placeholder = "New task: enter adds, esc cancels"
        add.display = True
        add.focus()

    def open_edit(self, task: Task) -> None:
        """`e`: the same input, holding the task's subject, edits it in place."""
        self._open_input(task.id, task.subject, f"Subject of #{task.id}: enter saves, esc cancels")

    def open_check(self, task: Task) -> None:
        """`v`: the same input, holding the task's check, sets, edits or (emptied) removes it."""
        self._open_input(task.id, task.verify, f"Check of #{task.id} (a command): enter saves, empty removes")
        self._editing_what = "check"

    def open_budget(self, task: Task) -> None:
        """`b`: the same input, holding the task's budget in words, sets, raises or (emptied) removes it."""
        placeholder = f"Budget of #{task.id}, e.g. 20 requests, 200k tokens, 30 min: empty removes"
        self._open_input(task.id, describe(task.budget), placeholder)
        self._editing_what = "budget"

    def _open_input(self, task_id: str, value: str, placeholder: str) -> None:
        add = self.query_one("#task-add", Input)
        self._editing, self._editing_what = task_id, "subject"
        add.placeholder = placeholder
        add.value = value
        add.display = True
        add.focus()
        add.cursor_position = len(add.value)

    def close_add(self) -> None:
        """Close the add-task input, if it is open, without adding anything."""
        add = self.query_one("#task-add", Input)
        add.value = ""
        add.display = False
        self._editing, self._editing_what = None, "subject"

    def _close_add(self) -> None:
        self.close_add()
        self.list_view.focus()

    @on(Input.Submitted, "#task-add")
    def _submit_add(self, event: Input.Submitted) -> None:
        event.stop()
        subject, editing = event.value.strip(), self._editing
        if editing is not None and self._editing_what != "subject":
            what = self._editing_what
            self._close_add()
            self.post_message(self.SetCheck(editing, subject) if what == "check" else self.SetBudget(editing, subject))
            return
        if len(subject) > MAX_LABEL:  # the store would refuse it: say so, and keep what was typed to shorten
            self.notify(
                f"A task's subject is at most {MAX_LABEL} characters; this one is {len(subject):,}.",
                severity="error",
                title="Task list",
                markup=False,
            )
            return
        self._close_add()
        if subject and editing is not None:
            self.post_message(self.Rename(editing, subject))
        elif subject:
            self.post_message(self.Add(subject))

    def action_cancel_add(self) -> None:
        self._close_add()
        self.post_message(self.AddCancelled())
