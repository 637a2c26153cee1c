from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from todo_agent.core.model.history import CANCELLED
from todo_agent.core.session.directory import SessionError, find_session, latest_session, list_sessions
from todo_agent.core.session.transcript import Session


def test_messages_are_appended_and_flushed_line_by_line(workspace: Path) -> None:
    session = Session.create(workspace)
    session.append({"role": "user", "content": "hello"})
    # Flushed: another reader sees it before close.
    lines = session.path.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "session"
    assert json.loads(lines[1]) == {"type": "message", "message": {"role": "user", "content": "hello"}}
    session.close()
    reopened = Session.open(session.path)
    assert reopened.messages == [{"role": "user", "content": "hello"}]
    assert reopened.warnings == []


def test_torn_last_line_is_skipped_with_a_warning_and_truncated(workspace: Path) -> None:
    session = Session.create(workspace)
    session.append({"role": "user", "content": "kept"})
    session.close()
    with session.path.open("a") as f:
        f.write('{"type": "message", "message": {"role": "assis')
    reopened = Session.open(session.path)
    assert reopened.messages == [{"role": "user", "content": "kept"}]
    assert any("torn" in w for w in reopened.warnings)
    reopened.append({"role": "assistant", "content": "after"})
    reopened.close()
    assert Session.open(session.path).messages[-1] == {"role": "assistant", "content": "after"}


def test_garbage_line_in_the_middle_is_skipped(workspace: Path) -> None:
    session = Session.create(workspace)
    session.append({"role": "user", "content": "w"})
    session.close()
    with session.path.open("a") as f:
        f.write("not json\n")
        f.write(json.dumps({"type": "message", "message": {"role": "user", "content": "x"}}) + "\n")
    reopened = Session.open(session.path)
    assert reopened.messages == [{"role": "user", "content": "w"}, {"role": "user", "content": "x"}]
    assert any("line 3" in w for w in reopened.warnings)


def test_a_session_quit_before_any_message_leaves_nothing_to_resume(workspace: Path) -> None:
    kept = Session.create(workspace)
    kept.append({"role": "user", "content": "real work"})
    kept.close()
    empty = Session.create(workspace)  # opened, then quit without a prompt
    empty.close()
    assert not empty.path.exists()
    assert latest_session(workspace) == kept.path
    assert [i.id for i in list_sessions(workspace)] == [kept.id]


def test_cut_off_tool_batch_is_repaired_on_resume(workspace: Path) -> None:
    session = Session.create(workspace)
    session.append({"role": "user", "content": "go"})
    call = {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": "{}"}}
    session.append({"role": "assistant", "content": None, "tool_calls": [call]})
    session.close()
    reopened = Session.open(session.path)
    assert reopened.messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": CANCELLED}
    reopened.close()
    again = Session.open(session.path)
    assert again.messages[-1]["tool_call_id"] == "c1"  # persisted, not re-added
    assert len(again.messages) == len(reopened.messages)
    again.close()


def test_listing_latest_and_find_by_prefix(workspace: Path, tmp_path: Path) -> None:
    first = Session.create(workspace)
    first.append({"role": "user", "content": "first prompt"})
    first.close()
    second = Session.create(workspace)
    second.append({"role": "user", "content": "<system-reminder>x</system-reminder>"})
    second.append({"role": "user", "content": "second   prompt\nmore"})
    second.close()
    later = time.time() + 5
    import os

    os.utime(second.path, (later, later))
    infos = list_sessions(workspace)
    assert [i.id for i in infos] == [second.id, first.id]
    assert infos[0].title == "second prompt more" and infos[0].size == second.path.stat().st_size
    assert latest_session(workspace) == second.path
    assert find_session(workspace, first.id) == first.path
    other = tmp_path / "other"
    other.mkdir()
    assert list_sessions(other) == []  # grouped by working directory
    with pytest.raises(SessionError):
        find_session(workspace, "nope")


def test_data_root_follows_todo_agent_home(workspace: Path, isolated_home: Path) -> None:
    session = Session.create(workspace)
    assert str(session.path).startswith(str(isolated_home / "todo-agent"))
    assert session.tasks_path.name == f"{session.id}.tasks.json"


def test_a_damaged_middle_is_repaired_once_and_the_file_fixed(workspace: Path) -> None:
    session = Session.create(workspace)
    session.append({"role": "user", "content": "go"})
    calls = [{"id": i, "type": "function", "function": {"name": "Read", "arguments": "{}"}} for i in ("a", "b")]
    session.append({"role": "assistant", "content": None, "tool_calls": calls})
    session.append({"role": "tool", "tool_call_id": "a", "content": "A"}, "ok")
    session.append({"role": "tool", "tool_call_id": "b", "content": "B"}, "error")
    session.append({"role": "assistant", "content": "done"})
    session.close()
    lines = session.path.read_text().splitlines()
    lines[4] = "{garbled"  # the reply to "b"
    lines.insert(5, json.dumps({"type": "message", "message": {"role": "tool", "tool_call_id": "zz", "content": "?"}}))
    session.path.write_text("\n".join(lines) + "\n")

    reopened = Session.open(session.path)
    roles = [(m["role"], m.get("tool_call_id")) for m in reopened.messages]
    assert roles == [("user", None), ("assistant", None), ("tool", "a"), ("tool", "b"), ("assistant", None)]
    assert reopened.messages[3]["content"] == CANCELLED
    assert reopened.tool_status == {"a": "ok", "b": "cancelled"}
    assert any("repaired" in w for w in reopened.warnings)
    reopened.close()
    again = Session.open(session.path)  # the file itself was fixed: no second repair
    assert again.messages == reopened.messages and not any("repaired" in w for w in again.warnings)
    assert json.loads(session.path.read_text().splitlines()[0])["type"] == "session"


def test_tool_status_is_kept_beside_the_message(workspace: Path) -> None:
    session = Session.create(workspace)
    session.append({"role": "tool", "tool_call_id": "x", "content": "boom"}, "error")
    session.close()
    record = json.loads(session.path.read_text().splitlines()[1])
    assert record["status"] == "error" and "status" not in record["message"]


def test_unanswered_calls_at_the_end_are_answered_by_appending(workspace: Path) -> None:
    session = Session.create(workspace)
    call = {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": "{}"}}
    session.append({"role": "assistant", "content": None, "tool_calls": [call]})
    inode = session.path.stat().st_ino
    # Another instance cannot open it while the first is still running its batch.
    with pytest.raises(SessionError, match="in use by another todo-agent"):
        Session.open(session.path)
    session.append({"role": "tool", "tool_call_id": "c1", "content": "late result"}, "ok")
    session.close()
    assert session.path.stat().st_ino == inode  # not replaced: the first instance's writes land
    assert not session.path.with_name(session.path.name + ".bak").exists()
    reopened = Session.open(session.path)
    assert reopened.messages[-1]["content"] == "late result" and not reopened.warnings
    reopened.close()


def test_odd_messages_and_a_garbled_header_are_repaired_with_a_backup(workspace: Path) -> None:
    session = Session.create(workspace)
    calls = [{"id": i, "type": "function", "function": {"name": "Read", "arguments": "{}"}} for i in ("c1", "c2")]
    session.append({"role": "assistant", "content": None, "tool_calls": calls})
    session.append({"role": "tool", "tool_call_id": "c1"})  # no content at all
    session.append({"role": "tool", "tool_call_id": "zz", "content": "orphan"})
    session.append({"role": "user", "content": "next"})
    session.close()
    lines = session.path.read_text().splitlines()
    lines[0] = "{not a header"
    original = "\n".join(lines) + "\n"
    session.path.write_text(original)

    reopened = Session.open(session.path)
    assert [m.get("tool_call_id") for m in reopened.messages if m["role"] == "tool"] == ["c1", "c2"]
    assert session.path.with_name(session.path.name + ".bak").read_text() == original
    header = json.loads(session.path.read_text().splitlines()[0])
    assert header["type"] == "session" and header["id"] == session.id
    assert not list(session.path.parent.glob(".*.tmp"))


def test_an_unknown_id_names_the_nearest_sessions(workspace: Path) -> None:
    with pytest.raises(SessionError, match=r"no session has the id 'nope': .* has no sessions yet"):
        find_session(workspace, "nope")
    made = []
    for n in range(5):
        session = Session.create(workspace)
        session.append({"role": "user", "content": f"prompt number {n}"})
        session.close()
        made.append(session)
    typo = made[2].id[:-1] + ("x" if made[2].id[-1] != "x" else "y")  # one character off
    with pytest.raises(SessionError) as caught:
        find_session(workspace, typo)
    message = str(caught.value)
    assert message.startswith(f"no session has the id '{typo}'")
    assert f'{made[2].id} "prompt number 2"' in message.split("Nearest: ")[1].split(", ", maxsplit=1)[0]
    assert "todo-agent --resume" in message  # and how to pick from all of them
    with pytest.raises(SessionError) as caught:
        find_session(workspace, "zzzz")  # like nothing: the latest ones are offered
    latest = str(caught.value)
    assert latest.count('"prompt number') == 3 and f'{made[4].id} "prompt number 4"' in latest
