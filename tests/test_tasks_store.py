"""TaskStore: rules, persistence, person-side edits, attribution, rendering."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from filelock import FileLock
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from todo_agent.core.changes.recorder import attribution_observer
from todo_agent.core.lifecycle import ToolRecord
from todo_agent.core.tasks import persistence
from todo_agent.core.tasks.file_format import decode, encode
from todo_agent.core.tasks.model import STATUSES, StoreError, Task, TodoItem
from todo_agent.core.tasks.render import render_for_model, render_tasks
from todo_agent.core.tasks.rules import violations
from todo_agent.core.tasks.store import TaskStore


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def on_disk(path: Path) -> tuple[tuple[Task, ...], int]:
    return decode(json.loads(path.read_text(encoding="utf-8")))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "session.tasks.json"


async def test_round_trip_to_disk(path: Path) -> None:
    store = TaskStore.load(path, clock=Clock())
    await store.create("Read posts", "the route module", "Reading posts")
    await store.create("Add pagination", active_form="Adding pagination")
    await store.create("Run tests")
    await store.update("1", status="completed", owner="me")
    await store.update("2", status="in_progress", add_blocked_by=["1"], add_blocks=["3"])
    await store.record_tool_call(1.5)

    assert on_disk(path) == (store.snapshot(), 4)
    again = TaskStore.load(path)
    assert again.snapshot() == store.snapshot()
    assert again.next_id == 4
    assert again.warning is None
    assert again.get("2") == Task(
        id="2",
        subject="Add pagination",
        activeForm="Adding pagination",
        status="in_progress",
        blocks=("3",),
        blockedBy=("1",),
        created_at=100.0,
        started_at=100.0,
        tool_calls=1,
        tool_seconds=1.5,
        progress_since=100.0,
    )


async def test_next_id_survives_delete_and_reload(path: Path) -> None:
    store = TaskStore.load(path)
    for subject in ("a", "b", "c"):
        await store.create(subject)
    outcome = await store.update("3", status="deleted")
    assert outcome.deleted and outcome.task.subject == "c"
    assert [t.id for t in store.snapshot()] == ["1", "2"]

    again = TaskStore.load(path)
    task = await again.create("d")
    assert task.id == "4"


def test_in_memory_store_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = TaskStore.load(None)

    async def work() -> None:
        await store.create("a")
        await store.update("1", status="completed")

    asyncio.run(work())
    assert store.snapshot()[0].status == "completed"
    assert list(tmp_path.iterdir()) == []


def test_loading_a_missing_file_creates_nothing(tmp_path: Path) -> None:
    store = TaskStore.load(tmp_path / "not-yet" / "s.tasks.json")
    assert (store.snapshot(), store.next_id, store.warning) == ((), 1, None)
    assert not (tmp_path / "not-yet").exists()


def test_render_tasks_exact_text() -> None:
    tasks = (
        Task(id="1", subject="Read posts route", status="completed", activeForm="Reading"),
        Task(id="2", subject="Add page/page_size", status="in_progress", activeForm="Adding pagination"),
        Task(id="3", subject="Run tests", activeForm="Running tests"),
        Task(id="4", subject="No active form", status="in_progress"),
    )
    assert render_tasks(tasks) == (
        "☒ #1 Read posts route\n"
        "◼ #2 Add page/page_size  ← Adding pagination\n"
        "☐ #3 Run tests\n"
        "◼ #4 No active form\n"
        "(1/4 completed)"
    )
    assert render_tasks(()) == "No tasks yet"


def test_render_for_model_lists_owner_and_open_blockers() -> None:
    tasks = (
        Task(id="1", subject="Done first", status="completed", blocks=("3",)),
        Task(id="2", subject="Still open", owner="alice", blocks=("3",)),
        Task(id="3", subject="Waits", status="in_progress", blockedBy=("1", "2")),
    )
    assert render_for_model(tasks) == (
        "☒ #1 Done first\n☐ #2 Still open (owner: alice)\n◼ #3 Waits [blocked by #2]\n"
        "(☐ pending ◼ in_progress ☒ completed ☑ verified)"
    )
    assert render_for_model(()) == "No tasks."


async def test_leftover_temp_files_are_swept_on_load(path: Path) -> None:
    store = TaskStore.load(path)
    await store.create("kept")
    leftovers = [path.with_name(f"{path.name}.{n}abc.tmp") for n in range(3)]
    for leftover in leftovers:
        leftover.write_text('{"torn": ', encoding="utf-8")
    unrelated = path.with_name("other.tmp")
    unrelated.write_text("not ours", encoding="utf-8")

    again = TaskStore.load(path)

    assert [t.subject for t in again.snapshot()] == ["kept"]
    assert not any(p.exists() for p in leftovers)
    assert unrelated.exists()
    assert persistence.temp_files(path) == []


@pytest.mark.parametrize(
    "content",
    [
        b'{"format": 1, "next_id": 3, "tasks": [{"id": "1", "sub',  # torn JSON
        b"\xff\xfe not utf-8",
        b'{"format": 1, "next_id": 2, "tasks": [{"id": "1", "subject": "x", "status": "done"}]}',
        b'{"format": 1, "next_id": 2, "tasks": [{"id": "1", "subject": "x", "blocks": ["7"]}]}',
        b'{"format": 1, "next_id": 2, "tasks": [{"id": "1", "subject": "x"}, {"id": "1", "subject": "y"}]}',
        b'[{"id": "1", "subject": "an old bare list"}]',
    ],
)
def test_corrupt_file_is_kept_aside_and_the_list_starts_empty(path: Path, content: bytes) -> None:
    path.write_bytes(content)

    store = TaskStore.load(path)

    assert store.snapshot() == ()
    assert store.warning is not None and "\n" not in store.warning
    copies = list(path.parent.glob(f"{path.name}.corrupt-*"))
    assert len(copies) == 1 and copies[0].read_bytes() == content
    assert copies[0].name in store.warning
    task = asyncio.run(store.create("fresh start"))
    assert task.id == "1"
    assert on_disk(path) == (store.snapshot(), 2)


def test_a_second_corrupt_load_keeps_both_copies(path: Path) -> None:
    for _ in range(2):
        path.write_text("garbage", encoding="utf-8")
        assert TaskStore.load(path).warning
    assert len(list(path.parent.glob(f"{path.name}.corrupt-*"))) == 2


async def test_failed_write_changes_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("", encoding="utf-8")
    store = TaskStore.load(blocker / "s.tasks.json")

    with pytest.raises(StoreError, match="cannot save the task list"):
        await store.create("a")

    assert store.snapshot() == ()
    assert store.next_id == 1


async def test_write_waits_for_the_cross_process_lock(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = TaskStore.load(path)
    await store.create("before")
    monkeypatch.setattr(persistence, "LOCK_TIMEOUT", 0.05)

    with FileLock(persistence.lock_path(path)), pytest.raises(StoreError, match="another process holds"):
        await store.create("while locked")

    assert [t.subject for t in store.snapshot()] == ["before"]
    assert on_disk(path) == (store.snapshot(), 2)


async def test_concurrent_mutations_are_serialised(path: Path) -> None:
    store = TaskStore.load(path)
    created = await asyncio.gather(*(store.create(f"t{n}") for n in range(20)))

    # In call order: a batch "create three, start #1" run concurrently by the loop means what it says.
    assert [(t.id, t.subject) for t in created] == [(str(n + 1), f"t{n}") for n in range(20)]
    assert store.snapshot() == tuple(created)
    assert on_disk(path) == (store.snapshot(), 21)


async def test_a_cancelled_caller_still_leaves_memory_equal_to_disk(path: Path) -> None:
    store = TaskStore.load(path)
    job = asyncio.ensure_future(store.create("interrupted"))
    await asyncio.sleep(0)  # let the write start
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    await store.drain()

    assert [t.subject for t in store.snapshot()] == ["interrupted"]
    assert on_disk(path) == (store.snapshot(), 2)


async def test_status_timestamps_follow_the_lifecycle() -> None:
    clock = Clock()
    store = TaskStore(None, clock=clock)
    await store.create("a")
    clock.now = 110.0
    await store.update("1", status="in_progress")
    clock.now = 120.0
    await store.update("1", status="completed")
    task = store.get("1")
    assert task is not None and (task.created_at, task.started_at, task.completed_at) == (100.0, 110.0, 120.0)
    clock.now = 130.0
    await store.update("1", status="in_progress")
    task = store.get("1")
    assert task is not None and (task.started_at, task.completed_at) == (110.0, None)


async def test_time_in_progress_counts_every_stint_and_nothing_between() -> None:
    from todo_agent.core.tasks.model import time_in_progress

    clock = Clock()
    store = TaskStore(None, clock=clock)
    await store.create("a")
    clock.now = 110.0
    await store.update("1", status="in_progress")
    clock.now = 180.0  # 70 s waiting on an approval: no tool ran, the time still counts
    assert time_in_progress(store.get("1"), now=clock.now) == 70.0  # type: ignore[arg-type]
    await store.update("1", status="pending")
    clock.now = 500.0  # set aside: this does not count
    await store.update("1", status="in_progress")
    clock.now = 505.0
    await store.update("1", status="completed")
    task = store.get("1")
    assert task is not None and time_in_progress(task, now=999.0) == 75.0
    assert time_in_progress(Task("2", "never started"), now=999.0) == 0.0
    # A file from before stints were kept: from the first start to completion (or now).
    old = Task("3", "old", status="completed", started_at=10.0, completed_at=25.0)
    assert time_in_progress(old, now=999.0) == 15.0
    assert time_in_progress(Task("4", "old", status="in_progress", started_at=10.0), now=40.0) == 30.0


async def test_store_errors_are_one_clear_line() -> None:
    store = TaskStore(None)
    await store.create("a")
    await store.create("b")
    await store.update("1", add_blocks=["2"])
    cases = [
        (store.update("9", status="completed"), "no task #9 (existing tasks: #1, #2)"),
        (store.update("1", status="done"), "invalid status 'done'; use pending, in_progress, completed or deleted"),
        (store.update("1", subject="  "), "subject must not be empty"),
        (store.create(""), "subject must not be empty"),
        (store.update("2", add_blocks=["1"]), "blocker cycle: #1 already blocks #2 (directly or through other tasks)"),
        (store.update("1", add_blocked_by=["1"]), "task #1 cannot block itself"),
        (store.update("1", add_blocks=["5"]), "no task #5 (existing tasks: #1, #2)"),
        (store.user_set_status("1", "deleted"), "invalid status 'deleted'; use pending, in_progress or completed"),
    ]
    before = store.snapshot()
    for action, message in cases:
        with pytest.raises(StoreError) as caught:
            await action
        assert str(caught.value) == message
    assert store.snapshot() == before


async def test_indirect_cycles_are_refused_and_deleting_unlinks() -> None:
    store = TaskStore(None)
    for subject in "abc":
        await store.create(subject)
    await store.update("1", add_blocks=["2"])
    await store.update("2", add_blocks=["3"])
    with pytest.raises(StoreError, match="blocker cycle"):
        await store.update("3", add_blocks=["1"])
    await store.update("2", status="deleted")
    assert [(t.id, t.blocks, t.blockedBy) for t in store.snapshot()] == [("1", (), ()), ("3", (), ())]
    await store.update("3", add_blocks=["1"])  # no cycle any more
    assert violations(store.snapshot(), store.next_id) == []


async def test_replace_all_keeps_ids_of_unchanged_items_and_reports_dropped_ones() -> None:
    store = TaskStore(None)
    await store.replace_all(
        [TodoItem("Read", "completed"), TodoItem("Edit", "in_progress"), TodoItem("Test", "pending")]
    )
    await store.update("2", add_blocks=["3"])

    outcome = await store.replace_all([TodoItem("Edit", "completed", "Editing"), TodoItem("Ship", "pending")])

    assert [(t.id, t.subject, t.status) for t in outcome.tasks] == [
        ("2", "Edit", "completed"),
        ("4", "Ship", "pending"),
    ]
    assert [t.subject for t in outcome.dropped] == ["Test"]  # "Read" was completed: not a loss
    assert outcome.tasks[0].blocks == ()
    assert store.snapshot() == outcome.tasks
    assert violations(store.snapshot(), store.next_id) == []


async def test_user_edits_are_logged_once() -> None:
    store = TaskStore(None)
    await store.create("model's task")
    await store.user_add("Write docs")
    await store.user_set_status("1", "completed")
    await store.user_set_status("1", "completed")  # no change, no log line
    await store.user_move("2", -5)
    await store.user_move("2", -1)  # already at the top
    await store.user_delete("1")

    assert store.take_user_changes() == (
        'added #2 "Write docs"',
        "marked #1 completed",
        "moved #2 up to position 1",
        'deleted #1 "model\'s task"',
    )
    assert store.take_user_changes() == ()
    assert [t.id for t in store.snapshot()] == ["2"]


async def test_user_move_reorders_and_persists(path: Path) -> None:
    store = TaskStore.load(path)
    for subject in "abcd":
        await store.user_add(subject)
    assert await store.user_move("1", 2) == 2
    assert await store.user_move("4", 10) == 3
    assert [t.subject for t in store.snapshot()] == ["b", "c", "a", "d"]
    assert on_disk(path)[0] == store.snapshot()


async def test_model_changes_are_not_logged_as_user_edits() -> None:
    store = TaskStore(None)
    await store.create("a")
    await store.update("1", status="in_progress")
    await store.replace_all([TodoItem("b", "pending")])
    assert store.take_user_changes() == ()


async def test_attribution_counts_non_task_calls_to_the_task_in_progress() -> None:
    clock = Clock()
    store = TaskStore(None, clock=clock)
    observe = attribution_observer(store)
    for subject in ("first", "second", "third"):
        await store.create(subject)

    await observe(ToolRecord("Read", "read", 0.5, False))  # nothing in progress: counted nowhere
    await store.update("1", status="in_progress")
    await observe(ToolRecord("Read", "read", 0.5, False))
    await observe(ToolRecord("Bash", "execute", 2.0, True))
    await observe(ToolRecord("TaskList", "task", 9.0, False))  # task tools never count
    clock.now = 200.0
    await store.update("2", status="in_progress")  # a second one: the latest started gets the calls
    await observe(ToolRecord("Edit", "edit", 1.0, False))

    counts = {t.id: (t.tool_calls, t.tool_seconds) for t in store.snapshot()}
    assert counts == {"1": (2, 2.5), "2": (1, 1.0), "3": (0, 0.0)}


def test_encode_decode_inverse_and_one_task_per_line() -> None:
    tasks = (Task(id="1", subject='ü "quoted"\nnewline'), Task(id="3", subject="b", status="completed"))
    data = encode(tasks, 5)
    assert decode(json.loads(data)) == (tasks, 5)
    assert data.decode().count("\n") == 4
    assert decode(json.loads(encode((), 1))) == ((), 1)


# --- random operation sequences -------------------------------------------------------

T = TypeVar("T")
ANY_ID = st.integers(min_value=1, max_value=12).map(str)
SUBJECTS = st.sampled_from(["plan", "edit", "test", "ship", "", "  "]) | st.text(max_size=5)
STATUS_WORDS = st.sampled_from([*STATUSES, "deleted", "done"])


def assert_valid(tasks: tuple[Task, ...], next_id: int) -> None:
    """The invariants, checked independently of the store's own `violations`."""
    by_id = {t.id: t for t in tasks}
    assert len(by_id) == len(tasks), "duplicate ids"
    for task in tasks:
        assert task.status in STATUSES
        assert 0 < int(task.id) < next_id
        for other in task.blocks:
            assert other != task.id and task.id in by_id[other].blockedBy
        for other in task.blockedBy:
            assert other != task.id and task.id in by_id[other].blocks
    waiting = {t.id: len(t.blockedBy) for t in tasks}  # Kahn: every task must come free
    ready = [i for i, n in waiting.items() if n == 0]
    freed = 0
    while ready:
        freed += 1
        for other in by_id[ready.pop()].blocks:
            waiting[other] -= 1
            if waiting[other] == 0:
                ready.append(other)
    assert freed == len(tasks), "blocker cycle"


class TaskStoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="task-machine-"))
        self.path = self.dir / "s.tasks.json"
        self.loop = asyncio.new_event_loop()
        self.store = TaskStore.load(self.path)
        self.alive: set[str] = set()
        self.gone: set[str] = set()
        self.highest = 0

    def teardown(self) -> None:
        self.loop.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def attempt(self, action: Coroutine[Any, Any, T]) -> T | None:
        try:
            return self.loop.run_until_complete(action)
        except StoreError:
            return None

    def pick(self, data: st.DataObject, *, existing: bool = False) -> str:
        """An existing id, or (unless `existing`) sometimes any id, to exercise unknown and deleted ones."""
        ids = [t.id for t in self.store.snapshot()]
        if not ids:
            return data.draw(ANY_ID)
        return data.draw(st.sampled_from(ids) if existing else st.one_of(st.sampled_from(ids), ANY_ID))

    @initialize(count=st.integers(min_value=2, max_value=5))
    def start_with(self, count: int) -> None:
        for n in range(count):
            self.create(f"step {n + 1}", by_user=False)

    @rule(subject=SUBJECTS, by_user=st.booleans())
    def create(self, subject: str, by_user: bool) -> None:
        task = self.attempt(self.store.user_add(subject) if by_user else self.store.create(subject))
        assert (task is None) == (not subject.strip())

    @rule(data=st.data(), status=STATUS_WORDS)
    def update_status(self, data: st.DataObject, status: str) -> None:
        self.attempt(self.store.update(self.pick(data), status=status))

    @rule(data=st.data(), subject=SUBJECTS, owner=st.sampled_from([None, "me", ""]))
    def update_text(self, data: st.DataObject, subject: str, owner: str | None) -> None:
        self.attempt(self.store.update(self.pick(data), subject=subject, owner=owner))

    @rule(data=st.data())
    def block(self, data: st.DataObject) -> None:
        blocker, blocked = self.pick(data, existing=True), self.pick(data, existing=True)
        self.attempt(self.store.update(blocker, add_blocks=[blocked]))

    @rule(data=st.data(), count=st.integers(min_value=1, max_value=3))
    def add_blocked_by(self, data: st.DataObject, count: int) -> None:
        task_id, others = self.pick(data), [self.pick(data) for _ in range(count)]
        self.attempt(self.store.update(task_id, add_blocked_by=others))

    @precondition(lambda self: any(t.blocks for t in self.store.snapshot()))
    @rule(data=st.data(), steps=st.integers(min_value=1, max_value=3))
    def attempt_cycle(self, data: st.DataObject, steps: int) -> None:
        start = data.draw(st.sampled_from([t for t in self.store.snapshot() if t.blocks]))
        end = start
        for _ in range(steps):  # walk down the blockers: `start` (transitively) blocks `end`
            if end.blocks:
                end = self.store.get(data.draw(st.sampled_from(end.blocks))) or end
        before = self.store.snapshot()
        with pytest.raises(StoreError, match="blocker cycle"):
            self.loop.run_until_complete(self.store.update(end.id, add_blocks=[start.id]))
        assert self.store.snapshot() == before

    @precondition(lambda self: any(t.blocks for t in self.store.snapshot()))
    @rule(data=st.data(), how=st.sampled_from(["update", "user", "todos"]))
    def remove_a_linked_task(self, data: st.DataObject, how: str) -> None:
        tasks = self.store.snapshot()
        victim = data.draw(st.sampled_from([t for t in tasks if t.blocks or t.blockedBy]))
        if how == "update":
            self.attempt(self.store.update(victim.id, status="deleted"))
        elif how == "user":
            self.attempt(self.store.user_delete(victim.id))
        else:
            self.attempt(self.store.replace_all([TodoItem(t.subject, t.status) for t in tasks if t != victim]))
        after = self.store.snapshot()
        twins = [t for t in tasks if t != victim and (t.subject, t.status) == (victim.subject, victim.status)]
        if how == "todos" and twins:
            # Identical items in a whole-list write cannot be told apart: one of them goes.
            assert len(after) == len(tasks) - 1
        else:
            assert victim.id not in {t.id for t in after}

    @rule(data=st.data(), status=STATUS_WORDS)
    def user_set_status(self, data: st.DataObject, status: str) -> None:
        self.attempt(self.store.user_set_status(self.pick(data), status))

    @rule(data=st.data())
    def user_delete(self, data: st.DataObject) -> None:
        self.attempt(self.store.user_delete(self.pick(data)))

    @rule(data=st.data(), delta=st.integers(min_value=-3, max_value=3))
    def user_move(self, data: st.DataObject, delta: int) -> None:
        task_id, before = self.pick(data), self.store.snapshot()
        index = self.attempt(self.store.user_move(task_id, delta))
        if index is not None:
            assert sorted(self.store.snapshot(), key=lambda t: t.id) == sorted(before, key=lambda t: t.id)
            assert self.store.snapshot()[index].id == task_id

    @rule(elapsed=st.floats(min_value=0, max_value=100))
    def tool_call(self, elapsed: float) -> None:
        self.attempt(self.store.record_tool_call(elapsed))

    @rule(picks=st.lists(st.tuples(SUBJECTS, st.sampled_from(STATUSES), st.booleans()), max_size=4))
    def todo_write(self, picks: list[tuple[str, str, bool]]) -> None:
        existing = [t.subject for t in self.store.snapshot()]
        todos = [
            TodoItem(existing[n % len(existing)] if reuse and existing else subject, status)
            for n, (subject, status, reuse) in enumerate(picks)
        ]
        self.attempt(self.store.replace_all(todos))

    @rule()
    def reload(self) -> None:
        again = TaskStore.load(self.path)
        assert again.warning is None
        assert (again.snapshot(), again.next_id) == (self.store.snapshot(), self.store.next_id)
        self.store = again

    @invariant()
    def list_is_valid(self) -> None:
        assert_valid(self.store.snapshot(), self.store.next_id)
        assert violations(self.store.snapshot(), self.store.next_id) == []

    @invariant()
    def ids_increase_and_are_never_reused(self) -> None:
        current = {t.id for t in self.store.snapshot()}
        assert current.isdisjoint(self.gone)
        new = current - self.alive
        assert all(int(i) > self.highest for i in new)
        self.highest = max([self.highest, *(int(i) for i in new)])
        self.gone |= self.alive - current
        self.alive = current
        assert self.store.next_id > self.highest

    @invariant()
    def file_equals_memory(self) -> None:
        if self.path.exists():
            assert on_disk(self.path) == (self.store.snapshot(), self.store.next_id)
        else:
            assert (self.store.snapshot(), self.store.next_id) == ((), 1)
        assert persistence.temp_files(self.path) == []


TestTaskStoreMachine = TaskStoreMachine.TestCase
# No shrinking: twenty steps read fine as they are, and shrinking through real fsyncs is slow.
TestTaskStoreMachine.settings = settings(
    max_examples=40, stateful_step_count=20, deadline=None, database=None, phases=(Phase.explicit, Phase.generate)
)


async def test_two_processes_on_one_list_keep_both_changes(tmp_path: Path) -> None:
    path = tmp_path / "s.tasks.json"
    first = TaskStore.load(path)
    await first.create("existing")
    a, b = TaskStore.load(path), TaskStore.load(path)  # as two `--continue` runs would
    made_b = await b.create("from B")
    made_a = await a.create("from A")
    assert made_a.id != made_b.id
    on_disk = TaskStore.load(path)
    assert [t.subject for t in on_disk.snapshot()] == ["existing", "from B", "from A"]
    assert [t.subject for t in a.snapshot()] == ["existing", "from B", "from A"]  # A saw B's change


def test_absurdly_nested_json_is_quarantined_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "s.tasks.json"
    path.write_text("[" * 100_000)
    store = TaskStore.load(path)
    assert store.snapshot() == () and store.warning is not None
    assert list(tmp_path.glob("s.tasks.json.corrupt-*"))


def test_a_non_canonical_id_makes_the_file_invalid(tmp_path: Path) -> None:
    path = tmp_path / "s.tasks.json"
    path.write_text('{"format": 1, "next_id": 3, "tasks": [{"id": "01", "subject": "x"}]}')
    assert TaskStore.load(path).warning is not None


async def test_the_persons_edits_survive_a_restart_until_delivered(tmp_path: Path) -> None:
    from todo_agent.core.tasks.reminders import task_reminder_provider

    path = tmp_path / "s.tasks.json"
    store = TaskStore.load(path)
    await store.create("t1")
    await store.update("1", status="in_progress")
    await store.user_set_status("1", "completed")
    await store.user_add("the person's new task")
    # Quit before the next model request, then resume.
    resumed = TaskStore.load(path)
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "TaskUpdate", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
    ]  # fmt: skip
    provide = task_reminder_provider(resumed)
    (reminder,) = provide(history)
    assert 'marked #1 completed; added #2 "the person\'s new task"' in reminder["content"]  # both, in order
    assert provide(history) == []  # delivered once
    await resumed.drain()  # delivered is written down at once, not with the next change
    assert TaskStore.load(path).take_user_changes() == ()
    assert [t.subject for t in TaskStore.load(path).snapshot()] == ["t1", "the person's new task"]


async def test_an_edit_made_while_delivery_is_written_stays_pending(tmp_path: Path) -> None:
    path = tmp_path / "s.tasks.json"
    store = TaskStore.load(path)
    await store.user_add("first")
    edit = asyncio.ensure_future(store.user_add("second"))  # in flight while the first is delivered
    await asyncio.sleep(0)
    assert store.take_user_changes() == ('added #1 "first"',)
    await edit
    await store.drain()
    on_disk = TaskStore.load(path)
    assert on_disk.take_user_changes() == ('added #2 "second"',)
    assert store.take_user_changes() == ('added #2 "second"',)
    await on_disk.drain()
    await store.drain()


# --- bounds: a plan the window can hold --------------------------------------------------


async def test_every_text_field_and_the_list_length_are_bounded_for_model_and_person() -> None:
    from todo_agent.core.tasks.rules import MAX_DESCRIPTION, MAX_LABEL, MAX_TASKS

    store = TaskStore(None)
    task = await store.create("s" * MAX_LABEL, "d" * MAX_DESCRIPTION, "a" * MAX_LABEL)  # at the limit: fine
    refusals = {
        "subject": store.create("s" * (MAX_LABEL + 1)),
        "description": store.create("ok", "d" * (MAX_DESCRIPTION + 1)),
        "activeForm": store.create("ok", "", "a" * (MAX_LABEL + 1)),
        "owner": store.update(task.id, owner="o" * (MAX_LABEL + 1)),
        "the person's subject": store.user_add("s" * (MAX_LABEL + 1)),
        "the person's rename": store.user_rename(task.id, "s" * (MAX_LABEL + 1)),
        "content": store.replace_all([TodoItem("c" * (MAX_LABEL + 1), "pending")]),
        "TodoWrite's activeForm": store.replace_all([TodoItem("ok", "pending", "a" * (MAX_LABEL + 1))]),
        "TodoWrite's length": store.replace_all([TodoItem(f"t{n}", "pending") for n in range(MAX_TASKS + 1)]),
    }
    for what, attempt in refusals.items():
        with pytest.raises(StoreError) as caught:
            await attempt
        assert "limit" in str(caught.value) or "at most" in str(caught.value), what
    assert store.snapshot() == (task,)  # nothing changed
    with pytest.raises(StoreError, match=r"^todos\[0\]: content is 201 characters; the limit is 200"):
        await store.replace_all([TodoItem("c" * 201, "pending")])
    await store.replace_all([TodoItem(f"t{n}", "pending") for n in range(MAX_TASKS)])
    with pytest.raises(StoreError, match="already holds 200 tasks, the most it may"):
        await store.create("one more")
    with pytest.raises(StoreError, match="already holds 200 tasks"):
        await store.user_add("one more")


def test_a_saved_list_past_the_bounds_loads_cut_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "s.tasks.json"
    big = Task("1", "s" * 5000, description="d" * 9000, activeForm="a" * 300, owner="o" * 300)
    many = [Task(str(n), f"task {n}") for n in range(2, 252)]
    path.write_bytes(encode([big, *many], 252))
    store = TaskStore.load(path)
    first = store.snapshot()[0]
    assert (len(first.subject), len(first.description), len(first.activeForm), len(first.owner)) == (
        200,
        4000,
        200,
        200,
    )
    assert first.subject.endswith("…") and len(store.snapshot()) == 251  # nothing dropped
    assert store.warning is not None
    assert store.warning.startswith(
        "The task list held text longer than its limits, cut to them: #1 subject (5,000 characters), "
        "#1 activeForm (300 characters), #1 owner (300 characters), #1 description (9,000 characters)."
    )
    assert "holds 251 tasks, more than the 200 a list may have: nothing is dropped" in store.warning
