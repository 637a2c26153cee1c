"""What each task changed, rewinding a task, and the plan's history: scripted runs over real files."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from todo_agent.core.changes.log import MAX_KEEP_BYTES, ChangeLog
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.runtime import Runtime
from todo_agent.core.session.directory import find_session, list_sessions
from todo_agent.core.settings import Config
from todo_agent.core.tasks import history as task_history
from todo_agent.core.tasks.model import StoreError
from todo_agent.core.tasks.reminders import USER_EDITED
from todo_agent.core.tasks.store import TaskStore


def tc(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def steps(*calls: Sequence[dict[str, Any]], text: str = "Done.") -> list[dict[str, Any]]:
    return [*({"tool_calls": list(c)} for c in calls), {"text": text}]


def start(n: int) -> list[dict[str, Any]]:
    previous = [tc("TaskUpdate", taskId=str(n - 1), status="completed")] if n > 1 else []
    return [*previous, tc("TaskUpdate", taskId=str(n), status="in_progress")]


def commit_all(project: Path) -> None:
    for args in (["init", "-q"], ["add", "."], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=project, check=True)


def contents(project: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in project.iterdir()}


A = "alpha\nbeta\ngamma\n"
B = "one\ntwo\n"


def three_tasks() -> list[dict[str, Any]]:
    """#1 edits a.py and creates notes.txt; #2 edits b.py; #3 edits a.py again and deletes old.txt."""
    return steps(
        [tc("TaskCreate", subject="Touch a"), tc("TaskCreate", subject="Touch b"), tc("TaskCreate", subject="Again a")],
        start(1),
        [tc("Edit", file_path="a.py", old_string="beta\n", new_string="BETA\nbeta2\n")],
        [tc("Bash", command="printf 'n1\\nn2\\n' > notes.txt")],
        start(2),
        [tc("Write", file_path="b.py", content="one\nTWO\nthree\n")],
        start(3),
        [tc("Edit", file_path="a.py", old_string="gamma\n", new_string="")],
        [tc("Bash", command="rm old.txt")],
        [tc("TaskUpdate", taskId="3", status="completed")],
    )


def make_runtime(workspace: Path, script: list[dict[str, Any]] | None = None, **kwargs: Any) -> Runtime:
    config = Config(workspace=workspace, model="script:test", permission_mode="bypassPermissions")
    model = ScriptedModel.from_data(script or [])  # none: a runtime that is only looked at
    return Runtime.create(config, model=model, **kwargs)


async def run(runtime: Runtime, prompt: str = "go") -> None:
    async for _event in runtime.agent.run_turn(prompt):
        pass


@pytest.fixture
def project(workspace: Path) -> Path:
    (workspace / "a.py").write_text(A)
    (workspace / "b.py").write_text(B)
    (workspace / "old.txt").write_text("old\nstuff\n")
    return workspace


async def test_each_task_has_its_own_exact_diff(project: Path) -> None:
    runtime = make_runtime(project, three_tasks())
    await run(runtime)
    changes = runtime.changes
    assert {t: [(f.path, f.kind, f.added, f.removed) for f in files] for t, files in changes.records.items()} == {
        "1": [("a.py", "modified", 2, 1), ("notes.txt", "created", 2, 0)],
        "2": [("b.py", "modified", 2, 1)],
        "3": [("a.py", "modified", 0, 1), ("old.txt", "deleted", 0, 2)],
    }
    assert changes.diff("1") == (
        "--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,4 @@\n alpha\n-beta\n+BETA\n+beta2\n gamma\n"
        "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+n1\n+n2\n"
    )
    # Task #3's diff starts where task #1 left a.py, not from the original file.
    assert changes.diff("3") == (
        "--- a/a.py\n+++ b/a.py\n@@ -1,4 +1,3 @@\n alpha\n BETA\n beta2\n-gamma\n"
        "--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-old\n-stuff\n"
    )
    assert changes.summaries()["1"].line() == "2 files · +4 −1"
    assert changes.summaries()["2"].line() == "1 file · +2 −1"
    # Stored beside the session, and read back by a new process.
    runtime.session.close()
    again = make_runtime(project, continue_latest=True)
    assert again.changes.diff("1") == changes.diff("1")
    assert again.plan.task_files()["3"] == ["a.py  +0 −1", "old.txt  +0 −2 (deleted)"]


async def test_nothing_is_recorded_without_a_task_in_progress(project: Path) -> None:
    runtime = make_runtime(project, steps([tc("Edit", file_path="a.py", old_string="beta", new_string="B")]))
    await run(runtime)
    assert runtime.changes.records == {}
    assert not runtime.session.path.with_name(runtime.session.id + ".changes.json").exists()


async def test_bash_changes_in_a_git_repository(project: Path) -> None:
    await asyncio.to_thread(commit_all, project)
    (project / "dirty.txt").write_text("untracked before\n")
    script = steps(
        [tc("TaskCreate", subject="Shell work")],
        start(1),
        [tc("Bash", command="sed -i s/beta/BETA/ a.py && rm b.py && echo more >> dirty.txt && echo x > made.txt")],
    )
    runtime = make_runtime(project, script)
    await run(runtime)
    files = {f.path: (f.kind, f.added, f.removed) for f in runtime.changes.files_of("1")}
    assert files == {
        "a.py": ("modified", 1, 1),
        "b.py": ("deleted", 0, 2),
        "dirty.txt": ("modified", 1, 0),
        "made.txt": ("created", 1, 0),
    }
    assert "-one\n-two\n" in runtime.changes.diff("1")  # b.py's old content came from git's index


@pytest.mark.parametrize("git", [False, True])
async def test_a_rewrite_of_the_same_size_in_the_same_clock_tick_is_seen(project: Path, git: bool) -> None:
    """The command puts back the old size and modification time (as a rewrite within one
    tick of a coarse file-system clock leaves them): only the content tells."""
    if git:
        await asyncio.to_thread(commit_all, project)
        (project / "a.py").write_text("alpha\nbetA\ngamma\n")  # modified, so read ahead
    before = (project / "a.py").read_text()
    command = 't=$(stat -c %y a.py) && sed -i s/alpha/ALPHA/ a.py && touch -m -d "$t" a.py'
    runtime = make_runtime(
        project, steps([tc("TaskCreate", subject="Quiet edit")], start(1), [tc("Bash", command=command)])
    )
    await run(runtime)
    after = (project / "a.py").read_text()
    assert len(after) == len(before) and after != before
    files = {f.path: (f.kind, f.added, f.removed) for f in runtime.changes.files_of("1")}
    assert files == {"a.py": ("modified", 1, 1)}
    assert "-alpha\n+ALPHA\n" in runtime.changes.diff("1")


@pytest.mark.script_may_end_early("interrupted during its Bash call")
async def test_what_an_interrupted_command_changed_is_still_the_tasks(project: Path) -> None:
    """esc during a long command: what it changed before it was stopped is recorded (and
    so rewound) with its task, and the call counts to the task's time."""
    command = "echo half > made.txt; sed -i s/beta/BETA/ a.py; touch started.flag; sleep 60"
    script = steps([tc("TaskCreate", subject="Long shell work")], start(1), [tc("Bash", command=command)])
    runtime = make_runtime(project, script)
    turn = asyncio.ensure_future(run(runtime))
    deadline = asyncio.get_running_loop().time() + 30
    while not (project / "started.flag").exists():
        assert asyncio.get_running_loop().time() < deadline and not turn.done()
        await asyncio.sleep(0.02)
    assert runtime.turn.interrupt()
    await turn
    files = {f.path: (f.kind, f.added, f.removed) for f in runtime.changes.files_of("1")}
    assert files == {"made.txt": ("created", 1, 0), "a.py": ("modified", 1, 1), "started.flag": ("created", 0, 0)}
    assert runtime.plan.tasks()[0].tool_calls == 1
    plan = await runtime.plan.plan_rewind("1")
    await runtime.plan.rewind(plan, [f.path for f in plan.files])
    assert not (project / "made.txt").exists() and (project / "a.py").read_text() == A


async def test_a_file_too_big_to_keep_is_counted_with_a_note(project: Path) -> None:
    (project / "big.bin").write_bytes(b"x" * (MAX_KEEP_BYTES + 10))
    script = steps([tc("TaskCreate", subject="Big")], start(1), [tc("Bash", command="echo y >> big.bin")])
    runtime = make_runtime(project, script)
    await run(runtime)
    assert [f.path for f in runtime.changes.files_of("1")] == ["big.bin"]
    assert "too big to keep (1.0 MB; the limit is 1.0 MB)" in runtime.changes.diff("1")
    plan = await runtime.plan.plan_rewind("1")
    assert plan.files[0].action == "unavailable" and "too big" in plan.files[0].note
    blobs = runtime.session.path.with_name(runtime.session.id + ".blobs")
    assert not blobs.exists() or all(p.stat().st_size <= MAX_KEEP_BYTES for p in blobs.iterdir())


async def test_blobs_are_stored_once_per_content(project: Path) -> None:
    script = steps(
        [tc("TaskCreate", subject="Same twice")],
        start(1),
        [tc("Write", file_path="c.txt", content="same\n")],
        [tc("Write", file_path="d.txt", content="same\n")],
    )
    runtime = make_runtime(project, script)
    await run(runtime)
    blobs = runtime.session.path.with_name(runtime.session.id + ".blobs")
    assert sorted(p.read_text() for p in blobs.iterdir()) == ["same\n"]


async def test_rewind_without_a_later_change_restores_and_tells_the_model_once(project: Path) -> None:
    runtime = make_runtime(project, [*three_tasks()[:-1], {"text": "ok"}, {"text": "again"}, {"text": "third"}])
    await run(runtime)
    plan = await runtime.plan.plan_rewind("2")
    assert [(f.path, f.action, f.conflict) for f in plan.files] == [("b.py", "restore", "")]
    text = await runtime.plan.rewind(plan, [f.path for f in plan.files if f.suggested])
    assert (project / "b.py").read_text() == B
    assert runtime.store.get("2").status == "pending"  # type: ignore[union-attr]
    assert runtime.changes.files_of("2") == ()
    assert text == 'rewound #2 "Touch b": restored b.py to their state before the task; the task is pending again'
    await run(runtime, "next")
    await run(runtime, "and next")
    told = [m for m in runtime.sessions.history if m["role"] == "user" and USER_EDITED in str(m["content"])]
    assert len(told) == 1 and text in str(told[0]["content"])
    # Recorded in the session: the plan history and the record of changes.
    assert runtime.plan.versions()[-1].what == text
    assert runtime.changes.rewinds[-1]["restored"] == ["b.py"]


async def test_rewind_with_a_later_change_shows_the_conflict_and_changes_only_what_is_confirmed(project: Path) -> None:
    runtime = make_runtime(project, three_tasks())
    await run(runtime)
    (project / "notes.txt").write_text("n1\nn2\nmine\n")  # the person, after the tasks
    plan = await runtime.plan.plan_rewind("1")
    by_path = {f.path: f for f in plan.files}
    assert by_path["a.py"].conflict == "changed later by task #3"
    assert by_path["a.py"].diff == ("--- task #1 left\n+++ now\n@@ -1,4 +1,3 @@\n alpha\n BETA\n beta2\n-gamma\n")
    assert by_path["notes.txt"].conflict.startswith("changed since the task, not by a task")
    assert not any(f.suggested for f in plan.files)
    # Confirmed for nothing: nothing changes.
    before = contents(project)
    await runtime.plan.rewind(plan, [])
    assert contents(project) == before
    # Confirmed for a.py only: a.py goes back to before task #1; notes.txt stays.
    plan = await runtime.plan.plan_rewind("1")
    text = await runtime.plan.rewind(plan, ["a.py"])
    assert (project / "a.py").read_text() == A
    assert (project / "notes.txt").read_text() == "n1\nn2\nmine\n"
    assert "left as they are: notes.txt (changed since the task" in text
    assert [f.path for f in runtime.changes.files_of("1")] == ["notes.txt"]


async def test_rewind_deletes_what_the_task_created_and_brings_back_what_it_deleted(project: Path) -> None:
    runtime = make_runtime(project, three_tasks())
    await run(runtime)
    plan = await runtime.plan.plan_rewind("3")
    assert {f.path: f.action for f in plan.files} == {"a.py": "restore", "old.txt": "restore"}
    await runtime.plan.rewind(plan, [f.path for f in plan.files])
    assert (project / "old.txt").read_text() == "old\nstuff\n"
    assert (project / "a.py").read_text() == "alpha\nBETA\nbeta2\ngamma\n"
    plan = await runtime.plan.plan_rewind("1")
    assert {f.path: (f.action, f.conflict) for f in plan.files} == {
        "a.py": ("restore", ""),
        "notes.txt": ("delete", ""),
    }
    await runtime.plan.rewind(plan, [f.path for f in plan.files])
    assert not (project / "notes.txt").exists()
    assert (project / "a.py").read_text() == A


KILLER = """
import asyncio, os, signal, sys
from pathlib import Path
from todo_agent.core.changes import rewind
from todo_agent.core.tasks import persistence
from todo_agent.core.changes.log import ChangeLog
from todo_agent.core.tasks.store import TaskStore

session, workspace, limit = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
real, calls = persistence.atomic_write, [0]
def dying(path, data, **options):
    if calls[0] == limit:
        os.kill(os.getpid(), signal.SIGKILL)
    calls[0] += 1
    real(path, data, **options)
persistence.atomic_write = rewind.atomic_write = dying
changes = ChangeLog.for_session(session, workspace)
store = TaskStore.load(session.with_name(session.stem + ".tasks.json"))
plan = rewind.plan(changes, store, "1")
asyncio.run(rewind.apply(changes, store, plan, [f.path for f in plan.files]))
"""


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 4, 5, 99])
async def test_kill_9_during_a_rewind_leaves_the_old_or_the_new_state(project: Path, limit: int) -> None:
    script = steps(
        [tc("TaskCreate", subject="Many files")],
        start(1),
        *([tc("Write", file_path=f"f{n}.txt", content=f"new {n}\n")] for n in range(4)),
        [tc("Edit", file_path="a.py", old_string="beta", new_string="BETA")],
    )
    for n in range(4):
        (project / f"f{n}.txt").write_text(f"old {n}\n")
    runtime = make_runtime(project, script)
    await run(runtime)
    session = runtime.session.path
    runtime.session.close()
    names = [*(f"f{n}.txt" for n in range(4)), "a.py"]
    new = {name: (project / name).read_text() for name in names}
    child = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", KILLER, str(session), str(project), str(limit)], capture_output=True
    )
    assert child.returncode == (-9 if limit < 99 else 0), child.stderr.decode()
    reopened = make_runtime(project, continue_latest=True)  # finishes an interrupted rewind
    now = {name: (project / name).read_text() for name in names}
    old = {**{f"f{n}.txt": f"old {n}\n" for n in range(4)}, "a.py": A}
    task = reopened.store.get("1")
    assert task is not None
    if now == new:
        assert task.status == "in_progress" and len(reopened.changes.files_of("1")) == 5
    else:
        assert now == old
        assert task.status == "pending" and reopened.changes.files_of("1") == ()
        assert sum(1 for v in reopened.plan.versions() if v.extra.get("rewind")) == 1
        assert len(reopened.store.take_user_changes()) == 1
        await reopened.store.drain()
    assert limit != 0 or now == new  # killed before the journal: nothing happened
    assert limit == 0 or now == old  # the journal was written: the rewind is finished


async def test_history_records_model_and_person_changes_and_undo_round_trips(workspace: Path) -> None:
    script = steps([tc("TaskCreate", subject="First"), tc("TaskCreate", subject="Second")], start(1))
    runtime = make_runtime(workspace, script)
    await run(runtime)
    store = runtime.store
    await store.user_set_status("2", "completed")
    await store.user_rename("1", "First, renamed")
    await store.user_move("2", -1)
    await store.user_delete("1")
    assert [(v.who, v.what) for v in store.versions()] == [
        ("model", 'created #1 "First"'),
        ("model", 'created #2 "Second"'),
        ("model", "#1 in_progress"),
        ("person", "marked #2 completed"),
        ("person", 'renamed #1 "First" to "First, renamed"'),
        ("person", "moved #2 up to position 1"),
        ("person", 'deleted #1 "First, renamed"'),
    ]
    snapshots = [store.snapshot()]
    for expected in (
        'deleted #1 "First, renamed"',
        "moved #2 up to position 1",
        'renamed #1 "First" to "First, renamed"',
    ):
        assert await store.user_undo() == expected
        snapshots.append(store.snapshot())
    assert [(t.id, t.subject, t.status) for t in store.snapshot()] == [
        ("1", "First", "in_progress"),
        ("2", "Second", "completed"),
    ]
    assert await store.user_undo() == "marked #2 completed"
    assert store.get("2").status == "pending"  # type: ignore[union-attr]
    with pytest.raises(StoreError, match="nothing to undo"):
        await store.user_undo()
    assert store.versions()[-1].what == 'undid "marked #2 completed"' and store.versions()[-1].who == "person"
    # On disk: the log and the list agree, and a resumed session has the same history.
    runtime.session.close()
    again = make_runtime(workspace, continue_latest=True)
    assert again.plan.versions() == store.versions()
    assert again.store.snapshot() == store.snapshot()
    lines = task_history.history_path(runtime.session.tasks_path).read_text().splitlines()
    assert [json.loads(line)["version"] for line in lines] == list(range(1, 12))
    rendered = task_history.render(again.plan.versions())
    assert "v11" in rendered and "person  undid" in rendered and "☐#1" in rendered


async def test_a_log_line_the_list_never_reached_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "s.tasks.json"
    store = TaskStore.load(path)
    await store.user_add("one")
    log = task_history.history_path(path)
    with log.open("a") as f:  # as if killed between the log append and the list's rename
        f.write(json.dumps({"version": 2, "at": 0, "who": "person", "what": "ghost", "tasks": []}) + "\n")
        f.write('{"version": 3, "at"')  # and torn
    again = TaskStore.load(path)
    assert [v.what for v in again.versions()] == ['added #1 "one"']
    await again.user_add("two")
    assert [v.what for v in TaskStore.load(path).versions()] == ['added #1 "one"', 'added #2 "two"']


async def test_sessions_without_the_new_files_still_load(workspace: Path) -> None:
    runtime = make_runtime(workspace, steps([tc("TaskCreate", subject="Old")]))
    await run(runtime)
    base = runtime.session.path
    runtime.session.close()
    for suffix in (".tasks.log.jsonl", ".changes.json"):
        base.with_name(base.stem + suffix).unlink(missing_ok=True)
    tasks = base.with_name(base.stem + ".tasks.json")
    document = json.loads(tasks.read_text())
    del document["version"]  # a list saved before versions existed
    tasks.write_text(json.dumps(document))
    again = make_runtime(workspace, continue_latest=True)
    assert [t.subject for t in again.store.snapshot()] == ["Old"]
    assert again.plan.versions() == () and again.changes.records == {}
    await again.store.user_add("New")
    assert [v.version for v in again.plan.versions()] == [1]


def test_a_broken_record_of_changes_is_set_aside_with_a_warning(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    (tmp_path / "s.changes.json").write_text("{not json")
    changes = ChangeLog.for_session(session, tmp_path)
    assert changes.records == {} and changes.warning and "record of changes" in changes.warning


def test_headless_json_lists_each_tasks_files(project: Path) -> None:
    from test_headless_e2e import todo_agent

    script = project.parent / "script.json"
    script.write_text(json.dumps(three_tasks()))
    result = todo_agent(
        project, None, "-p", "go", "--model", f"script:{script}", "--tasks", "v2",
        "--permission-mode", "bypassPermissions", "--output-format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    tasks = json.loads(result.stdout)["tasks"]
    assert {t["id"]: t["files"] for t in tasks} == {
        "1": [
            {"path": "a.py", "change": "modified", "added": 2, "removed": 1},
            {"path": "notes.txt", "change": "created", "added": 2, "removed": 0},
        ],
        "2": [{"path": "b.py", "change": "modified", "added": 2, "removed": 1}],
        "3": [
            {"path": "a.py", "change": "modified", "added": 0, "removed": 1},
            {"path": "old.txt", "change": "deleted", "added": 0, "removed": 2},
        ],
    }


async def test_the_plan_history_is_not_taken_for_a_session(workspace: Path) -> None:
    runtime = make_runtime(workspace, steps([tc("TaskCreate", subject="One")]))
    await run(runtime)
    session = runtime.session
    runtime.session.close()
    assert task_history.history_path(session.tasks_path).exists()
    assert [s.id for s in list_sessions(workspace)] == [session.id]
    assert find_session(workspace, session.id[:8]) == session.path  # a prefix is not "ambiguous"


async def test_a_rewind_never_writes_or_deletes_through_a_symlinked_folder(project: Path, tmp_path: Path) -> None:
    """A task creates sub/keys and edits sub/conf; later `sub` becomes a symlink to a folder
    outside the workspace holding files of the same names. Rewinding must touch neither."""
    (project / "sub").mkdir()
    (project / "sub" / "conf").write_text("x = 1\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "keys").write_text("the person's own keys\n")
    (outside / "conf").write_text("the person's own conf\n")
    script = steps(
        [tc("TaskCreate", subject="Set up sub")],
        start(1),
        [tc("Write", file_path="sub/keys", content="generated\n")],
        [tc("Edit", file_path="sub/conf", old_string="x = 1", new_string="x = 2")],
        [tc("Bash", command=f"rm -r sub && ln -s {outside} sub")],
    )
    runtime = make_runtime(project, script)
    await run(runtime)
    plan = await runtime.plan.plan_rewind("1")
    assert {f.path: f.action for f in plan.files if f.path.startswith("sub/")} == {
        "sub/keys": "unavailable",
        "sub/conf": "unavailable",
    }
    await runtime.plan.rewind(plan, [f.path for f in plan.files])
    assert (outside / "keys").read_text() == "the person's own keys\n"
    assert (outside / "conf").read_text() == "the person's own conf\n"
