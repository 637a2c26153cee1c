"""The `@` file index: what it lists (git and plain folders, ignore files) and how it ranks."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from todo_agent.core.input.file_index import FileIndex, Listing, list_workspace, positions


def _touch(root: Path, *paths: str, age: float = 0.0) -> None:
    when = time.time() - age
    for relative in paths:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
        os.utime(path, (when, when))


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _paths(index: FileIndex, query: str) -> list[str]:
    found = index.query(query)
    assert found is not None
    return [m.path for m in found]


def test_a_plain_folder_honours_gitignore_and_skips_dependency_folders(workspace: Path) -> None:
    _touch(workspace, "src/app.py", "build/out.js", "notes.log", "node_modules/x/index.js", ".venv/lib.py")
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    listing = list_workspace(workspace)
    assert listing.source == "walk"
    assert set(listing.files) == {".gitignore", "src/app.py"}


def test_a_git_checkout_lists_tracked_and_untracked_files_not_ignored_ones(workspace: Path) -> None:
    _git(workspace, "init", "-q")
    _touch(workspace, "tracked.py", "untracked.py", "ignored.tmp", "deleted.py")
    (workspace / ".gitignore").write_text("*.tmp\n")
    _git(workspace, "add", "tracked.py", "deleted.py", ".gitignore")
    (workspace / "deleted.py").unlink()  # still in git's index, gone from disk: not offered
    listing = list_workspace(workspace)
    assert listing.source == "git"
    assert set(listing.files) == {".gitignore", "tracked.py", "untracked.py"}


def test_ranking_prefers_the_name_then_recent_then_short(workspace: Path) -> None:
    _touch(workspace, "docs/old/posts_archive.md", "a/b/c/posts.py", age=30 * 86_400)
    _touch(workspace, "src/posts.py", "src/process.py", "tests/test_posts.py")
    _touch(workspace, "lib/deep/nested/posts.py", age=60)
    index = FileIndex(workspace)
    index.build_now()
    found = _paths(index, "pos")
    # Names starting with "pos": the recent ones first (shorter first), the month-old one after.
    assert found[:3] == ["src/posts.py", "lib/deep/nested/posts.py", "a/b/c/posts.py"]
    assert found.index("tests/test_posts.py") < found.index("src/process.py")  # "pos" in the name beats p…o…s
    assert _paths(index, "src")[0] == "src/"
    assert set(_paths(index, "src/")[:2]) == {"src/posts.py", "src/process.py"}


def test_folders_are_offered_and_case_does_not_matter(workspace: Path) -> None:
    _touch(workspace, "Frontend/App.tsx", "frontend_notes.md")
    index = FileIndex(workspace)
    index.build_now()
    found = index.query("front")
    assert found is not None
    assert [(m.path, m.is_dir) for m in found[:2]] == [("Frontend/", True), ("frontend_notes.md", False)]
    assert _paths(index, "APP") == ["Frontend/App.tsx"]


def test_three_letters_of_a_name_in_order(workspace: Path) -> None:
    _touch(workspace, "frontends/cli.py", "core/client.py", "README.md")
    index = FileIndex(workspace)
    index.build_now()
    assert _paths(index, "cli")[:2] == ["frontends/cli.py", "core/client.py"]
    assert _paths(index, "fcp") == ["frontends/cli.py"]  # f…c…p across the path
    assert _paths(index, "zzz") == []


def test_highlight_positions_point_at_the_match() -> None:
    assert positions("src/posts.py", "pos") == (4, 5, 6)
    assert positions("frontends/cli.py", "fcp") == (0, 10, 14)
    path = "core/client.py"
    assert "".join(path[i] for i in positions(path, "cnt")) == "cnt"


def test_denied_files_are_left_out(workspace: Path) -> None:
    _touch(workspace, ".env", "env.py")
    index = FileIndex(workspace, hidden=lambda path: path.endswith("/.env"))
    index.build_now()
    assert _paths(index, "env") == ["env.py"]


def test_it_is_built_in_the_background_and_rebuilt_when_stale(workspace: Path) -> None:
    _touch(workspace, "one.py")
    built: list[int] = []
    index = FileIndex(workspace)
    index.on_rebuilt = lambda: built.append(1)
    assert index.query("one") is None  # not ready yet: the prompt says so
    assert index.refresh()
    deadline = time.monotonic() + 30
    while not built and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _paths(index, "one") == ["one.py"]
    assert not index.refresh(max_age=60)  # fresh: nothing to do
    _touch(workspace, "two.py")
    index.mark_stale()
    assert index.refresh(max_age=60)
    while len(built) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _paths(index, "two") == ["two.py"]


def test_a_failing_listing_keeps_the_old_one(workspace: Path) -> None:
    calls: list[int] = []

    def lister(root: Path) -> Listing:
        calls.append(1)
        if len(calls) > 1:
            raise OSError("disk gone")
        return Listing({"a.py": time.time()})

    index = FileIndex(workspace, lister=lister)
    index.build_now()
    index.build_now()
    assert _paths(index, "a") == ["a.py"]
    assert index.error is not None and "disk gone" in index.error


def test_a_listing_stops_at_its_limit(workspace: Path) -> None:
    _touch(workspace, *(f"f{n}.txt" for n in range(20)))
    listing = list_workspace(workspace, limit=5)
    assert len(listing.files) == 5 and listing.partial
