"""Read, Write, Edit and the approval diff preview, against real files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from todo_agent.core.tools.base import Tool
from todo_agent.core.tools.context import ToolContext
from todo_agent.core.tools.files import EDIT, READ, TOOLS, WRITE, preview_edit
from todo_agent.core.tools.results import ToolError, ToolResult


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(call_id="t1", workspace=workspace)


async def run(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str:
    result = await tool.run(args, ctx)
    assert not isinstance(result, ToolResult) or not result.is_error
    return result.output if isinstance(result, ToolResult) else result


def test_declarations() -> None:
    assert [t.name for t in TOOLS] == ["Read", "Write", "Edit"]
    assert [t.kind for t in TOOLS] == ["read", "edit", "edit"]
    assert READ.schema()["function"]["parameters"]["required"] == ["file_path"]
    assert EDIT.schema()["function"]["parameters"]["required"] == ["file_path", "old_string", "new_string"]
    assert "line-number prefix" in EDIT.description
    assert EDIT.summarize({"file_path": "/very/" + "deep/" * 20 + "name.py"}).endswith("name.py")


# --- Read ---------------------------------------------------------------------------


async def test_read_numbers_lines_like_cat_n(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.py").write_text("first\n\tindented\nlast\n")
    assert await run(READ, {"file_path": "a.py"}, ctx) == "     1\tfirst\n     2\t\tindented\n     3\tlast"


async def test_read_offset_and_limit_with_note(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    text = await run(READ, {"file_path": "a.txt", "offset": 3, "limit": 2}, ctx)
    assert text == "     3\tline 3\n     4\tline 4\n… (file has 10 lines; use offset=5 to read more)"


async def test_read_to_the_end_has_no_note(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    text = await run(READ, {"file_path": "a.txt", "offset": 9}, ctx)
    assert text == "     9\tline 9\n    10\tline 10"


async def test_read_default_limit_truncates_long_files(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "big.txt").write_text("".join(f"{n}\n" for n in range(1, 2501)))
    lines = (await run(READ, {"file_path": "big.txt"}, ctx)).split("\n")
    assert len(lines) == 2001
    assert lines[1999] == "  2000\t2000"
    assert lines[-1] == "… (file has 2500 lines; use offset=2001 to read more)"


async def test_read_cuts_long_lines(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "min.js").write_text("x" * 5000 + "\nshort\n")
    first, second = (await run(READ, {"file_path": "min.js"}, ctx)).split("\n")
    assert first.startswith("     1\t" + "x" * 2000 + " …")
    assert "x" * 2001 not in first
    assert "line cut at 2000 chars" in first
    assert second == "     2\tshort"


async def test_read_strips_crlf_and_offset_zero_means_start(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    assert await run(READ, {"file_path": "win.txt", "offset": 0}, ctx) == "     1\tone\n     2\ttwo"


async def test_read_empty_file(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "empty.txt").write_text("")
    assert await run(READ, {"file_path": "empty.txt"}, ctx) == "empty.txt is empty (0 lines)."


async def test_read_absolute_path_outside_workspace(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("hello\n")
    assert await run(READ, {"file_path": str(outside)}, ctx) == "     1\thello"


async def test_read_keeps_stray_non_utf8_bytes_as_replacement(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "latin1.txt").write_bytes("# café\nok\n".encode("latin-1"))
    assert await run(READ, {"file_path": "latin1.txt"}, ctx) == "     1\t# caf\ufffd\n     2\tok"


@pytest.mark.parametrize(
    ("name", "setup", "message"),
    [
        ("missing.txt", None, "File does not exist: missing.txt"),
        ("adir", "dir", "adir is a directory"),
        ("img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "img.png is not a valid image: its PNG header is"),
        ("blob.bin", bytes(range(128, 256)) * 4, "blob.bin looks like a binary file"),
    ],
)
async def test_read_errors(
    ctx: ToolContext, workspace: Path, name: str, setup: bytes | str | None, message: str
) -> None:
    if setup == "dir":
        (workspace / name).mkdir()
    elif isinstance(setup, bytes):
        (workspace / name).write_bytes(setup)
    with pytest.raises(ToolError, match=message):
        await READ.run({"file_path": name}, ctx)


async def test_read_offset_past_end_and_bad_arguments(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("1\n2\n")
    with pytest.raises(ToolError, match=r"offset 5 is past the end of a.txt \(file has 2 lines\)"):
        await READ.run({"file_path": "a.txt", "offset": 5}, ctx)
    with pytest.raises(ToolError, match="'limit' must be >= 1"):
        await READ.run({"file_path": "a.txt", "limit": 0}, ctx)
    with pytest.raises(ToolError, match="'offset' must be an integer"):
        await READ.run({"file_path": "a.txt", "offset": "soon"}, ctx)
    with pytest.raises(ToolError, match="missing required parameter 'file_path'"):
        await READ.run({}, ctx)
    with pytest.raises(ToolError, match="NUL byte"):
        await READ.run({"file_path": "a\0b"}, ctx)


# --- Write --------------------------------------------------------------------------


async def test_write_creates_parent_dirs(ctx: ToolContext, workspace: Path) -> None:
    text = await run(WRITE, {"file_path": "src/pkg/mod.py", "content": "a = 1\nb = 2\n"}, ctx)
    assert text == "Wrote 2 lines to src/pkg/mod.py (created a new file)."
    assert (workspace / "src/pkg/mod.py").read_bytes() == b"a = 1\nb = 2\n"


async def test_write_overwrites_exactly(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "f.txt").write_text("old content that is longer\n")
    text = await run(WRITE, {"file_path": "f.txt", "content": "x\r\ny"}, ctx)
    assert text == "Wrote 2 lines to f.txt (overwrote the existing file)."
    assert (workspace / "f.txt").read_bytes() == b"x\r\ny"


async def test_write_errors(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "adir").mkdir()
    with pytest.raises(ToolError, match="adir is a directory"):
        await WRITE.run({"file_path": "adir", "content": "x"}, ctx)
    with pytest.raises(ToolError, match="missing required parameter 'content'"):
        await WRITE.run({"file_path": "f.txt"}, ctx)
    (workspace / "plain").write_text("")
    with pytest.raises(ToolError, match="Cannot"):
        await WRITE.run({"file_path": "plain/child.txt", "content": "x"}, ctx)


# --- Edit ---------------------------------------------------------------------------


async def test_edit_unique_match_with_snippet(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "m.py").write_text("".join(f"line {n}\n" for n in range(1, 21)))
    text = await run(EDIT, {"file_path": "m.py", "old_string": "line 10\n", "new_string": "ten\nTEN\n"}, ctx)
    header, *snippet = text.split("\n")
    assert header == "The file m.py has been updated (1 replacement). Snippet:"
    assert snippet[0] == "     6\tline 6"
    assert "    10\tten" in snippet
    assert "    11\tTEN" in snippet
    assert snippet[-1] == "    15\tline 14"
    assert "line 10\n" not in (workspace / "m.py").read_text()


async def test_edit_non_unique_names_the_count(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "m.py").write_text("x = 1\nx = 1\nx = 1\n")
    with pytest.raises(ToolError, match=r"occurs 3 times in m.py.*replace_all"):
        await EDIT.run({"file_path": "m.py", "old_string": "x = 1", "new_string": "x = 2"}, ctx)
    assert (workspace / "m.py").read_text() == "x = 1\nx = 1\nx = 1\n"


@pytest.mark.parametrize("flag", [True, "true"])
async def test_edit_replace_all(ctx: ToolContext, workspace: Path, flag: object) -> None:
    (workspace / "m.py").write_text("foo(1)\nbar()\nfoo(2)\nfoo(3)\n")
    args = {"file_path": "m.py", "old_string": "foo", "new_string": "baz", "replace_all": flag}
    text = await run(EDIT, args, ctx)
    assert text.startswith("The file m.py has been updated (3 replacements). Snippet:\n     1\tbaz(1)")
    assert (workspace / "m.py").read_text() == "baz(1)\nbar()\nbaz(2)\nbaz(3)\n"


async def test_edit_not_found_and_same_strings(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "m.py").write_text("alpha\nbeta\n")
    with pytest.raises(ToolError, match=r"old_string was not found in m\.py"):
        await EDIT.run({"file_path": "m.py", "old_string": "gamma", "new_string": "delta"}, ctx)
    with pytest.raises(ToolError, match="line-number prefix"):
        await EDIT.run({"file_path": "m.py", "old_string": "     1\talpha", "new_string": "a"}, ctx)
    with pytest.raises(ToolError, match="identical"):
        await EDIT.run({"file_path": "m.py", "old_string": "beta", "new_string": "beta"}, ctx)
    with pytest.raises(ToolError, match="'replace_all' must be true or false"):
        await EDIT.run({"file_path": "m.py", "old_string": "beta", "new_string": "b", "replace_all": 5}, ctx)
    with pytest.raises(ToolError, match="missing required parameter 'new_string'"):
        await EDIT.run({"file_path": "m.py", "old_string": "beta"}, ctx)
    assert (workspace / "m.py").read_text() == "alpha\nbeta\n"


async def test_edit_preserves_crlf(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await run(EDIT, {"file_path": "win.txt", "old_string": "two\nthree", "new_string": "2\n3\n4"}, ctx)
    assert (workspace / "win.txt").read_bytes() == b"one\r\n2\r\n3\r\n4\r\n"


async def test_edit_keeps_undecodable_bytes(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "old.py").write_bytes(b"# caf\xe9\nx = 1\n")
    await run(EDIT, {"file_path": "old.py", "old_string": "x = 1", "new_string": "x = 2"}, ctx)
    assert (workspace / "old.py").read_bytes() == b"# caf\xe9\nx = 2\n"


async def test_edit_absolute_path(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("keep\nchange me\n")
    text = await run(EDIT, {"file_path": str(outside), "old_string": "change me", "new_string": "changed"}, ctx)
    assert text.startswith(f"The file {outside} has been updated (1 replacement).")
    assert outside.read_text() == "keep\nchanged\n"


async def test_edit_empty_old_string_creates_missing_file(ctx: ToolContext, workspace: Path) -> None:
    text = await run(EDIT, {"file_path": "new/file.txt", "old_string": "", "new_string": "hello\nworld\n"}, ctx)
    assert text == "Created new/file.txt (2 lines). Snippet:\n     1\thello\n     2\tworld"
    assert (workspace / "new/file.txt").read_text() == "hello\nworld\n"
    with pytest.raises(ToolError, match="already has content"):
        await EDIT.run({"file_path": "new/file.txt", "old_string": "", "new_string": "x"}, ctx)


async def test_edit_missing_file_and_binary_file(ctx: ToolContext, workspace: Path) -> None:
    with pytest.raises(ToolError, match=r"File does not exist: nope\.txt"):
        await EDIT.run({"file_path": "nope.txt", "old_string": "a", "new_string": "b"}, ctx)
    (workspace / "data.bin").write_bytes(b"a\x00b")
    with pytest.raises(ToolError, match="binary"):
        await EDIT.run({"file_path": "data.bin", "old_string": "a", "new_string": "b"}, ctx)


# --- writes are all or nothing ------------------------------------------------------

# Runs a tool in a child process whose file-size limit stands in for a full disk or a
# quota: writes past 20 KB fail with EFBIG ("File too large") instead of ENOSPC.
_FULL_DISK_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, resource, signal, sys
    from pathlib import Path
    from todo_agent.core.tools.context import ToolContext
    from todo_agent.core.tools.results import ToolError
    from todo_agent.core.tools.files import EDIT, WRITE

    workspace, tool, args = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))
    try:
        print(asyncio.run({"Edit": EDIT, "Write": WRITE}[tool].run(args, ToolContext("c", workspace))))
    except ToolError as exc:
        print("ToolError:", exc)
    """
)


def run_with_full_disk(workspace: Path, tool: str, args: dict[str, Any]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK_SCRIPT, str(workspace), tool, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("Edit", {"file_path": "main.py", "old_string": "line_0 = 0\n", "new_string": "line_0 = 'zero'\n"}),
        ("Write", {"file_path": "main.py", "content": "x = 1\n" * 5000}),
    ],
)
def test_failed_write_leaves_the_original_intact(workspace: Path, tool: str, args: dict[str, Any]) -> None:
    original = "".join(f"line_{i} = {i}\n" for i in range(2000)).encode()  # ~30 KB, past the limit
    (workspace / "main.py").write_bytes(original)
    out = run_with_full_disk(workspace, tool, args)
    assert out == "ToolError: Cannot write main.py: File too large; the file was left unchanged"
    assert (workspace / "main.py").read_bytes() == original
    assert sorted(p.name for p in workspace.iterdir()) == ["main.py"]  # no temporary file left


def test_failed_write_of_a_new_file_leaves_nothing(workspace: Path) -> None:
    out = run_with_full_disk(workspace, "Write", {"file_path": "big.txt", "content": "x" * 30_000})
    assert out == "ToolError: Cannot write big.txt: File too large; nothing was written"
    assert list(workspace.iterdir()) == []


async def test_write_and_edit_keep_the_file_mode(ctx: ToolContext, workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("echo one\n")
    script.chmod(0o751)
    await run(EDIT, {"file_path": "run.sh", "old_string": "one", "new_string": "two"}, ctx)
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    await run(WRITE, {"file_path": "run.sh", "content": "echo three\n"}, ctx)
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert script.read_text() == "echo three\n"


async def test_new_file_gets_the_usual_mode(ctx: ToolContext, workspace: Path) -> None:
    old_mask = os.umask(0o027)
    try:
        await run(WRITE, {"file_path": "new.txt", "content": "x"}, ctx)
    finally:
        os.umask(old_mask)
    # What a plain create gives (0o666 less the umask), not the private 0o600 of a temp file.
    assert stat.S_IMODE((workspace / "new.txt").stat().st_mode) == 0o640


async def test_write_and_edit_go_through_a_symlink(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "real").mkdir()
    target = workspace / "real" / "config.toml"
    target.write_text("a = 1\n")
    link = workspace / "config.toml"
    link.symlink_to("real/config.toml")
    await run(EDIT, {"file_path": "config.toml", "old_string": "a = 1", "new_string": "a = 2"}, ctx)
    assert link.is_symlink() and target.read_text() == "a = 2\n"
    await run(WRITE, {"file_path": "config.toml", "content": "b = 3\n"}, ctx)
    assert link.is_symlink() and target.read_text() == "b = 3\n"
    assert sorted(p.name for p in (workspace / "real").iterdir()) == ["config.toml"]


async def test_read_only_file_is_still_refused(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = workspace / "locked.txt"
    locked.write_text("keep\n")
    locked.chmod(0o444)
    if os.geteuid() == 0:  # root may write anything; answer as os.access would for a normal user
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: mode != os.W_OK and real_access(path, mode, **kw))
    with pytest.raises(ToolError, match="Permission denied"):
        await WRITE.run({"file_path": "locked.txt", "content": "x"}, ctx)
    assert locked.read_text() == "keep\n"


# --- preview_edit -------------------------------------------------------------------


async def test_preview_edit_is_a_unified_diff_and_writes_nothing(ctx: ToolContext, workspace: Path) -> None:
    original = "".join(f"line {n}\n" for n in range(1, 11))
    (workspace / "p.py").write_text(original)
    diff = preview_edit({"file_path": "p.py", "old_string": "line 5\n", "new_string": "five\n"}, ctx)
    assert diff.split("\n") == [
        "--- a/p.py",
        "+++ b/p.py",
        "@@ -2,7 +2,7 @@",
        " line 2",
        " line 3",
        " line 4",
        "-line 5",
        "+five",
        " line 6",
        " line 7",
        " line 8",
    ]
    assert (workspace / "p.py").read_text() == original


async def test_preview_write_new_and_existing(ctx: ToolContext, workspace: Path) -> None:
    assert (
        preview_edit({"file_path": "n.txt", "content": "hi\n"}, ctx) == "--- a/n.txt\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hi"
    )
    (workspace / "e.txt").write_text("a\nb")
    diff = preview_edit({"file_path": "e.txt", "content": "a\nc"}, ctx)
    assert diff.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file")
    assert preview_edit({"file_path": "e.txt", "content": "a\nb"}, ctx) == "(no changes)"
    assert not (workspace / "n.txt").exists()


async def test_preview_outside_workspace_uses_absolute_path(ctx: ToolContext, tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    diff = preview_edit({"file_path": str(target), "content": "x\n"}, ctx)
    assert diff.startswith(f"--- {target}\n+++ {target}\n")


@pytest.mark.parametrize(
    "args",
    [
        {"file_path": "p.py", "old_string": "absent", "new_string": "x"},
        {"file_path": "p.py", "old_string": "same", "new_string": "same"},
        {"old_string": "a", "new_string": "b"},
        {"file_path": 42, "content": "x"},
        {"file_path": "p.py"},
        {"file_path": "p.py", "old_string": ["not", "a", "string"], "new_string": "x"},
    ],
)
async def test_preview_never_raises(ctx: ToolContext, workspace: Path, args: dict[str, Any]) -> None:
    (workspace / "p.py").write_text("same\n")
    assert preview_edit(args, ctx).startswith("(cannot preview: ")


async def test_preview_of_a_huge_change_is_a_quick_summary(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "data.csv").write_text("".join(f"row {i},{i * 7 % 13}\n" for i in range(60_000)))
    new = "".join(f"row {i},{i * 5 % 11}\n" for i in range(60_000))
    started = time.monotonic()
    assert preview_edit({"file_path": "data.csv", "content": new}, ctx) == (
        "(file too large to preview: 60000 lines → 60000 lines)"
    )
    edit = {"file_path": "data.csv", "old_string": "row 0,0\n", "new_string": "row 0,1\nextra\n"}
    assert preview_edit(edit, ctx) == "(file too large to preview: 60000 lines → 60001 lines)"
    assert time.monotonic() - started < 2  # a full diff took over 10 s


async def test_preview_of_writing_over_a_huge_file_does_not_diff_it(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "blob.txt").write_text(("x" * 999 + "\n") * 3000)  # 3 MB in few lines
    assert preview_edit({"file_path": "blob.txt", "content": "small\n"}, ctx) == (
        "(file too large to preview: 3000 lines → 1 line)"
    )


async def test_a_hard_linked_file_stays_linked(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("old\n")
    os.link(workspace / "a.txt", workspace / "b.txt")
    await WRITE.run({"file_path": "a.txt", "content": "new\n"}, ctx)
    await EDIT.run({"file_path": "a.txt", "old_string": "new", "new_string": "newer"}, ctx)
    assert (workspace / "b.txt").read_text() == "newer\n"
    assert (workspace / "a.txt").stat().st_nlink == 2


# --- the stale-file check and the person's PostToolUse formatter ------------------------


async def test_a_post_tool_use_formatter_does_not_make_the_next_edit_stale(workspace: Path) -> None:
    """The person's formatter rewrites the file right after the Edit: that is part of the
    edit, so the model's next Edit of it goes through instead of being refused as stale."""
    from contextlib import aclosing

    from todo_agent.core.hooks.spec import HookSpec
    from todo_agent.core.model.scripted import ScriptedModel
    from todo_agent.core.runtime import Runtime
    from todo_agent.core.settings import Config

    (workspace / "app.py").write_text("x = 1\ny = 2\n")
    steps = [
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "app.py"}}]},
        {
            "tool_calls": [
                {"name": "Edit", "arguments": {"file_path": "app.py", "old_string": "x = 1", "new_string": "x = 10"}}
            ]
        },
        {
            "tool_calls": [
                {"name": "Edit", "arguments": {"file_path": "app.py", "old_string": "y = 2", "new_string": "y = 20"}}
            ]
        },
        "done",
    ]
    formatter = HookSpec("PostToolUse", "printf '# formatted\\n' >> app.py", matcher="Edit")
    config = Config(workspace=workspace, model="script:x", permission_mode="acceptEdits", hooks=[formatter])
    runtime = Runtime.create(config, model=ScriptedModel.from_data(steps))
    async with aclosing(runtime.turn.run("edit twice")) as turn:
        [_ async for _ in turn]
    results = [str(m["content"]) for m in runtime.sessions.history if m["role"] == "tool"]
    assert not any("changed since you last read it" in r for r in results), results
    assert (workspace / "app.py").read_text().startswith("x = 10\ny = 20\n")
