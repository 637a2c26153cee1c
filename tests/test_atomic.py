"""`atomic_write`: the one write-temp-then-rename in the tree."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from todo_agent.core.atomic import atomic_write, temp_beside


def test_replaces_the_content_with_the_mode_asked_for(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text("old")
    atomic_write(target, b"new", mode=0o640)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_failed_rename_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "inside").write_text("kept")
    with pytest.raises(OSError):
        atomic_write(target, b"new")  # a non-empty directory cannot be renamed over
    assert (target / "inside").read_text() == "kept"
    assert sorted(os.listdir(tmp_path)) == ["taken"]


def test_temporary_names_match_what_the_stores_sweep(tmp_path: Path) -> None:
    target = tmp_path / "tasks.json"
    assert temp_beside(target).name.startswith("tasks.json.") and temp_beside(target).name.endswith(".tmp")
    assert temp_beside(target, hidden=True).name.startswith(".tasks.json.")
