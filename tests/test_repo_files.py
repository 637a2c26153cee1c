"""Files a cloned repository brings are read one safe way (`core/repo_files.py`): regular
files only, bounded reads, bounded nesting, never on the event loop.

Each attack of issue 27 (item 1) is reproduced in the shape a repository would ship it: a
command file linked to `/dev/zero` (which grew memory until the OOM killer), an `.mcp.json`
that is a FIFO (which blocked the start), 200 kB of brackets in `.mcp.json` or the settings
(a RecursionError traceback). Then a property test over odd files, and one that watches
every `open` of a start-up to see that each repository file went through the one reader.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_headless_e2e import todo_agent

from todo_agent.core.agents.definitions import load_types
from todo_agent.core.engine.instructions import build_system_context
from todo_agent.core.input.custom_commands import default_sources, load_commands
from todo_agent.core.input.file_index import list_workspace
from todo_agent.core.repo_files import (
    MAX_NESTING,
    RepoFileError,
    load_json,
    load_toml,
    read_repo_file,
)
from todo_agent.core.settings import SettingsError, load_config, read_settings_file, user_settings_path
from todo_agent.core.tools.ignores import IgnoreRules

BRACKETS = "[" * 200_000


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _link(path: Path, target: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


# --- the reader ------------------------------------------------------------------------


def test_a_link_to_dev_zero_is_refused_without_reading_it(tmp_path: Path) -> None:
    with pytest.raises(RepoFileError, match="not a regular file"):
        read_repo_file(_link(tmp_path / "zero.md", "/dev/zero"), 256_000)


def test_a_fifo_and_a_link_to_stdin_are_refused_without_waiting(tmp_path: Path) -> None:
    with pytest.raises(RepoFileError, match=r"not a regular file \(a FIFO\)"):
        read_repo_file(_fifo(tmp_path / "pipe.json"), 1000)
    # /dev/stdin is whatever the test runner gave: a pipe, a terminal or /dev/null, none a file.
    with pytest.raises(RepoFileError, match="not a regular file"):
        read_repo_file(_link(tmp_path / "stdin.json", "/dev/stdin"), 1000)


def test_size_is_checked_by_reading_not_by_trusting_stat(tmp_path: Path) -> None:
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 100)
    found = read_repo_file(exact, 100)
    assert found is not None and found.data == b"x" * 100 and not found.cut
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(RepoFileError, match="larger than 100 bytes"):
        read_repo_file(tmp_path / "big", 100)
    cut = read_repo_file(tmp_path / "big", 100, cut=True)
    assert cut is not None and cut.cut and len(cut.data) == 100


def test_a_cut_file_loses_a_half_character_not_its_text(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes("ab€".encode())  # € is three bytes: cut after the first
    found = read_repo_file(tmp_path / "f", 3, cut=True)
    assert found is not None and found.text(errors="replace") == "ab"


def test_missing_files_and_dangling_links_are_absent_and_loops_are_refused(tmp_path: Path) -> None:
    assert read_repo_file(tmp_path / "none", 10) is None
    assert read_repo_file(_link(tmp_path / "dangling", str(tmp_path / "nowhere")), 10) is None
    _link(tmp_path / "a", str(tmp_path / "b"))
    _link(tmp_path / "b", str(tmp_path / "a"))
    with pytest.raises(RepoFileError, match="cannot read it"):
        read_repo_file(tmp_path / "a", 10)
    (tmp_path / "dir").mkdir()
    with pytest.raises(RepoFileError, match="directory"):
        read_repo_file(tmp_path / "dir", 10)


def test_a_link_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("be brief")
    found = read_repo_file(_link(tmp_path / "CLAUDE.md", "AGENTS.md"), 100)
    assert found is not None and found.text() == "be brief"


def test_nesting_is_bounded_before_the_parser_recurses() -> None:
    for text in (BRACKETS, '{"a": ' * 100_000):
        with pytest.raises(RepoFileError, match=f"nested deeper than {MAX_NESTING}"):
            load_json(text)
    for text in ("a = " + BRACKETS, "a = " + "{b = " * 100_000):
        with pytest.raises(RepoFileError, match=f"nested deeper than {MAX_NESTING}"):
            load_toml(text)
    # Brackets inside strings and comments are text, not nesting.
    assert load_json(json.dumps({"x": BRACKETS})) == {"x": BRACKETS}
    toml_text = f"a = '{BRACKETS}'\nb = \"{BRACKETS}\"\n# {BRACKETS}\nc = '''\n{BRACKETS}\n'''\n"
    assert load_toml(toml_text)["a"] == BRACKETS


def _nested(depth: int) -> Any:
    value: Any = "x"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@given(st.integers(min_value=0, max_value=MAX_NESTING - 1), st.text(alphabet="[]{}\"\\#'x", max_size=30))
def test_json_within_the_bound_parses_as_json_does(depth: int, noise: str) -> None:
    document = {"noise": noise, "deep": _nested(depth)}
    text = json.dumps(document)
    assert load_json(text) == json.loads(text)


@given(st.integers(min_value=0, max_value=MAX_NESTING - 2), st.text(alphabet="[]{}\"\\#'x\n", max_size=30))
def test_toml_within_the_bound_parses_as_tomllib_does(depth: int, noise: str) -> None:
    inner = "1"
    for _ in range(depth):
        inner = f"[{inner}]"
    text = f"noise = {json.dumps(noise)}\ndeep = {inner}\n"
    assert load_toml(text) == tomllib.loads(text)


ODD_KINDS = ("regular", "fifo", "dev-zero", "dev-null", "directory", "loop", "dangling", "big")


def _odd(path: Path, kind: str, content: bytes) -> None:
    if kind == "regular":
        path.write_bytes(content)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind in ("dev-zero", "dev-null"):
        path.symlink_to("/dev/zero" if kind == "dev-zero" else "/dev/null")
    elif kind == "directory":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "dangling":
        path.symlink_to(path.with_name("nowhere"))
    else:
        path.write_bytes(content + b"x" * 5000)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(kind=st.sampled_from(ODD_KINDS), content=st.binary(max_size=200), name=st.integers(0, 10**9))
def test_any_odd_file_is_read_or_refused_never_hung(tmp_path: Path, kind: str, content: bytes, name: int) -> None:
    path = tmp_path / f"f{name}-{kind}"
    if os.path.lexists(path):
        return
    _odd(path, kind, content)
    try:
        found = read_repo_file(path, 4096)
    except RepoFileError as exc:
        assert kind in ("fifo", "dev-zero", "dev-null", "directory", "loop", "big"), exc
        assert "\n" not in str(exc)
        return
    if kind == "dangling":
        assert found is None
    else:
        assert kind == "regular" and found is not None and found.data == content


# --- each reader of a repository's files -----------------------------------------------


def test_a_command_file_linked_to_dev_zero_is_skipped_with_a_notice(workspace: Path) -> None:
    _link(workspace / ".claude" / "commands" / "zero.md", "/dev/zero")
    _fifo(workspace / ".todo-agent" / "commands" / "pipe.md")
    (workspace / ".claude" / "commands" / "ok.md").write_text("fine")
    found = load_commands(default_sources(workspace, user_settings_path().parent))
    assert list(found.commands) == ["/ok"]
    assert sorted(found.notices) == [
        "custom command .claude/commands/zero.md skipped: it is not a regular file (a device)",
        "custom command .todo-agent/commands/pipe.md skipped: it is not a regular file (a FIFO)",
    ]


def test_an_agent_file_that_is_a_fifo_is_skipped_with_a_notice(workspace: Path, tmp_path: Path) -> None:
    _fifo(workspace / ".claude" / "agents" / "spy.md")
    _link(workspace / ".todo-agent" / "agents" / "zero.md", "/dev/zero")
    types, warnings = load_types(workspace, tmp_path / "config", tmp_path / "home")
    assert "spy" not in types and "zero" not in types
    assert len(warnings) == 2 and all("this agent file cannot be used: it is not a regular file" in w for w in warnings)


def test_an_mcp_json_that_blocks_or_nests_starts_no_server_and_says_so(workspace: Path) -> None:
    _fifo(workspace / ".mcp.json")
    config = load_config(workspace)
    assert config.mcp_servers == []
    assert any(".mcp.json: cannot be used: it is not a regular file (a FIFO)" in w for w in config.warnings)
    os.unlink(workspace / ".mcp.json")
    (workspace / ".mcp.json").write_text('{"mcpServers": ' + BRACKETS)
    config = load_config(workspace)
    assert config.mcp_servers == []
    assert any(f".mcp.json: cannot be used: nested deeper than {MAX_NESTING} levels" in w for w in config.warnings)


@pytest.mark.parametrize("kind", ["brackets", "fifo", "dev-zero", "huge"])
def test_a_settings_file_that_cannot_be_read_stops_the_start_naming_it(workspace: Path, kind: str) -> None:
    path = workspace / ".todo-agent" / "settings.toml"
    path.parent.mkdir()
    if kind == "brackets":
        path.write_text("model = " + BRACKETS)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_text("# " + "x" * 1_100_000 + "\n")
    with pytest.raises(SettingsError, match=r"settings.toml: cannot be used: "):
        read_settings_file(path)
    # As the README promises: exit 2, the file named on the first line, never a traceback.
    result = todo_agent(workspace, None, "-p", "hi", "--model", "script:none.json")
    assert result.returncode == 2, result.stderr
    first, *_ = result.stderr.strip().splitlines()
    assert str(path) in first and "cannot be used" in first and "Traceback" not in result.stderr, result.stderr


def test_instructions_that_are_not_files_are_skipped_with_a_notice(workspace: Path) -> None:
    _link(workspace / "AGENTS.md", "/dev/zero")
    _fifo(workspace / "CLAUDE.md")
    context = build_system_context(workspace, "")
    assert context.instructions == ()
    assert len(context.warnings) == 2 and all("instructions not used" in w for w in context.warnings)


def test_long_instructions_are_still_cut_not_refused(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("rule\n" * 20_000)  # 100 kB
    context = build_system_context(workspace, "")
    assert context.loaded == (workspace.resolve() / "AGENTS.md",)
    assert context.prompt.count("rule") == 8000 and "… (truncated)" in context.prompt


def test_an_ignore_file_that_is_a_fifo_is_skipped_by_walks_and_searches(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    (workspace / "kept.py").write_text("needle\n")
    _fifo(workspace / ".gitignore")
    _link(workspace / "sub" / ".ignore", "/dev/zero")
    (workspace / "sub" / "also.py").write_text("needle\n")
    rules = IgnoreRules()
    assert not rules.ignored(workspace / "sub" / "also.py", is_dir=False)
    assert set(rules.skipped) == {str(workspace / ".gitignore"), str(workspace / "sub" / ".ignore")}
    # `git ls-files` would wait on the FIFO: the listing walks instead, and says what it skipped.
    listing = list_workspace(workspace)
    assert listing.source == "walk" and {"kept.py", "sub/also.py"} <= set(listing.files)
    assert set(listing.skipped) == set(rules.skipped)


def test_grep_around_a_fifo_ignore_file_answers_and_says_so(workspace: Path, tmp_path: Path) -> None:
    (workspace / "kept.py").write_text("needle\n")
    _fifo(workspace / ".gitignore")
    script = tmp_path / "script.json"
    step = {"tool_calls": [{"name": "Grep", "arguments": {"pattern": "needle"}}]}
    script.write_text(json.dumps({"steps": [step, {"text": "done"}]}))
    result = todo_agent(workspace, None, "-p", "go", "--model", f"script:{script}", "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    output = next(e["output"] for e in events if e["type"] == "ToolFinished")
    assert "kept.py" in output and "ignore file .gitignore not used: it is not a regular file (a FIFO)" in output


# --- every repository file goes through the one reader ---------------------------------

WATCHER = textwrap.dedent(
    """
    import json, os, sys
    workspace = os.path.realpath(sys.argv[1])
    opened = []

    def reader_on_stack():
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_name == "read_repo_file" and frame.f_code.co_filename.endswith("repo_files.py"):
                return True
            frame = frame.f_back
        return False

    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.path.realpath(os.fsdecode(args[0]))
            if path.startswith(workspace + os.sep):
                on_loop = asyncio._get_running_loop() is not None
                opened.append([os.path.relpath(path, workspace), reader_on_stack(), on_loop])

    import asyncio
    sys.addaudithook(hook)
    from contextlib import aclosing
    from pathlib import Path
    from todo_agent.core.runtime import Runtime
    from todo_agent.core.settings import load_config

    config = load_config(Path(workspace), flags={"model": "script:" + sys.argv[2]})
    runtime = Runtime.create(config)

    async def turn():
        runtime.startup_notices()
        runtime.turn.commands()
        async with aclosing(runtime.turn.run("/a")) as events:  # a command, then a sub-agent
            async for _ in events:
                pass

    asyncio.run(turn())
    runtime.file_index.build_now()
    runtime.close()
    print(json.dumps(opened))
    """
)

REPOSITORY_FILES = {
    ".mcp.json": '{"mcpServers": {}}',
    ".todo-agent/settings.toml": "reminder_interval = 5\n",
    ".todo-agent/commands/a.md": "a",
    ".claude/commands/b.md": "b",
    ".todo-agent/agents/helper.md": "---\nname: helper\ndescription: d\n---\nHelp.",
    ".claude/agents/other.md": "---\nname: other\ndescription: d\n---\nHelp.",
    "AGENTS.md": "be brief",
    "CLAUDE.md": "be kind",
    ".gitignore": "build/\n",
    ".ignore": "dist/\n",
    ".rgignore": "out/\n",
    "sub/.gitignore": "tmp/\n",
}


def test_every_file_a_repository_brings_is_read_through_the_safe_reader(workspace: Path) -> None:
    for relative, text in REPOSITORY_FILES.items():
        (workspace / relative).parent.mkdir(parents=True, exist_ok=True)
        (workspace / relative).write_text(text)
    (workspace / "sub" / "code.py").write_text("x = 1\n")
    script = workspace.parent / "script.json"
    agent = {"name": "Agent", "arguments": {"description": "look", "prompt": "look", "subagent_type": "helper"}}
    steps = [{"tool_calls": [agent]}, {"text": "done"}]
    script.write_text(json.dumps({"steps": steps, "agents": [{"match": "look", "steps": [{"text": "seen"}]}]}))
    result = subprocess.run(
        [sys.executable, "-c", WATCHER, str(workspace), str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONSAFEPATH": "1"},
    )
    assert result.returncode == 0, result.stderr
    opened = json.loads(result.stdout.strip().splitlines()[-1])
    repository_reads = [(path, safe, on_loop) for path, safe, on_loop in opened if path in REPOSITORY_FILES]
    # Each one was read, every read of one went through `read_repo_file`, none on the event loop.
    assert {path for path, _, _ in repository_reads} == set(REPOSITORY_FILES)
    assert [path for path, safe, _ in repository_reads if not safe] == []
    assert [path for path, _, on_loop in repository_reads if on_loop] == []
