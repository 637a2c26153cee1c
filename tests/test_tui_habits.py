"""The everyday habits in the real app (Pilot, scripted model, real files and commands):
`@` completion and attachments, `!` commands, custom slash commands."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from tui_helpers import SIZE, main_screen, make_app, screen_text, send, turn_done, wait_until

from todo_agent.core.engine.person_shell import KILLED
from todo_agent.core.settings import user_settings_path
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.screens.approval import ApprovalScreen
from todo_agent.tui.transcript import FoldEntry, NoticeEntry, ToolEntry, UserEntry, entries_from_history
from todo_agent.tui.widgets.prompt import PromptInput, Suggestions, mention_at

OLD = 1_700_000_000


def files(root: Path, *paths: str, when: float = OLD) -> None:
    for relative in paths:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {relative}\nprint('hello from {relative}')\n")
        os.utime(path, (when, when))


def suggestions(app: TodoAgentApp) -> Suggestions:
    return main_screen(app).query_one(Suggestions)


def shown_files(app: TodoAgentApp) -> list[str]:
    return [m.path for m in suggestions(app).matches] if suggestions(app).display else []


async def type_keys(pilot: Pilot[Any], text: str) -> None:
    main_screen(pilot.app).query_one(PromptInput).focus()  # type: ignore[arg-type]
    await pilot.press(*text)


def entries(app: TodoAgentApp) -> list[Any]:
    return main_screen(app).conversation.entries


# --- @ -------------------------------------------------------------------------------------


def test_the_at_word_under_the_cursor() -> None:
    text = 'fix @src/po and @"my fi'
    assert mention_at(text, 11).query == "src/po"  # type: ignore[union-attr]
    assert mention_at(text, len(text)).query == "my fi"  # type: ignore[union-attr]
    assert mention_at("mail me@x.com", 13) is None and mention_at("plain", 5) is None


async def test_at_completion_ranks_honours_gitignore_and_attaches(workspace: Path) -> None:
    files(workspace, "src/posts.py", "docs/old/posts_archive.md", "build/posts.py", "src/compose.py")
    files(workspace, "tests/test_posts.py")
    files(workspace, "lib/deep/posts_v2.py", when=time.time())  # changed just now
    (workspace / ".gitignore").write_text("build/\n")
    app = make_app(workspace, ["It prints hello."])
    async with app.run_test(size=SIZE) as pilot:
        main_screen(app).runtime.file_index.build_now()
        await type_keys(pilot, "explain @pos")
        await wait_until(pilot, lambda: shown_files(app)[:1] == ["lib/deep/posts_v2.py"])
        # Names that start with "pos" first, recently changed before older, shorter before longer;
        # then names that hold it; build/ is ignored.
        assert shown_files(app) == [
            "lib/deep/posts_v2.py",
            "src/posts.py",
            "docs/old/posts_archive.md",
            "src/compose.py",
            "tests/test_posts.py",
        ]
        await pilot.press("down", "tab")
        prompt = main_screen(app).query_one(PromptInput)
        assert prompt.text == "explain @src/posts.py "
        await wait_until(pilot, lambda: not suggestions(app).display)
        await pilot.press(*"please", "enter")
        await turn_done(pilot)
        fold = next(e for e in entries(app) if isinstance(e, FoldEntry))
        assert (fold.label, fold.detail) == ("@src/posts.py", "2 lines")
        sent = [m["content"] for m in main_screen(app).runtime.sessions.history if m["role"] == "user"]
        assert sent[0] == "explain @src/posts.py please"
        assert "print('hello from src/posts.py')" in sent[1]
        assert "one line" not in screen_text(app) and "@src/posts.py  2 lines" in screen_text(app)


async def test_a_folder_keeps_the_list_open_and_a_line_range_attaches_those_lines(workspace: Path) -> None:
    files(workspace, "src/app/main.py", "src/app/util.py")
    (workspace / "long.txt").write_text("".join(f"row {n}\n" for n in range(1, 101)))
    app = make_app(workspace, ["ok"])
    async with app.run_test(size=SIZE) as pilot:
        main_screen(app).runtime.file_index.build_now()
        await type_keys(pilot, "@app")
        await wait_until(pilot, lambda: shown_files(app)[:1] == ["src/app/"])
        await pilot.press("tab")
        await wait_until(pilot, lambda: shown_files(app)[:2] == ["src/app/main.py", "src/app/util.py"])
        await pilot.press("escape")
        prompt = main_screen(app).query_one(PromptInput)
        prompt.text = "@long.txt:10-12"
        await pilot.press("end", "enter")
        await turn_done(pilot)
        fold = next(e for e in entries(app) if isinstance(e, FoldEntry))
        assert (fold.detail, fold.content) == ("lines 10-12 of 100", "    10\trow 10\n    11\trow 11\n    12\trow 12")


async def test_what_cannot_be_attached_says_why(workspace: Path, tmp_path: Path) -> None:
    (workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0")
    (workspace / "huge.log").write_text("x\n" * 3000)
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("secret\n")
    app = make_app(workspace, ["ok"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, f"look at @logo.png @huge.log @{outside} and @missing.py")
        await turn_done(pilot)
        warnings = [e.text for e in entries(app) if isinstance(e, NoticeEntry) and e.level == "warning"]
        assert warnings[0].startswith("@logo.png: not attached: logo.png is not a valid image: its PNG header")
        assert warnings[1].startswith("@huge.log: not attached: 3000 lines is more than the 2,000")
        assert warnings[2] == f"@{outside}: not attached: it is outside the workspace"
        assert len(warnings) == 3  # a path that does not exist is plain text
        told = main_screen(app).runtime.sessions.history[1]["content"]
        assert "logo.png" in told and "secret" not in told


@pytest.fixture
def memory_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory in RAM (/dev/shm) where there is one, else `tmp_path`. Making 100,000
    files on the disk took 5 to 35 s of the suite's time (ext4 on a shared virtual disk,
    its journal busy with the other tests); in RAM it takes 2 s. The index walks real
    directories either way."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="todo-agent-test-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.timeout(300)  # making 100,000 files and listing them takes 20-60 s on a busy 2-core disk
async def test_completion_over_a_100000_file_tree(memory_dir: Path) -> None:
    """The index is built in the background after start-up; then `@` and three letters of a
    name find it among 100,000 files. (How fast: `benchmarks/mentions.py`.)"""
    root = memory_dir / "big"
    for a in range(100):
        for b in range(10):
            folder = root / f"pkg{a:02d}" / f"mod{b}"
            folder.mkdir(parents=True)
            for c in range(100):
                (folder / f"f_{a}_{b}_{c}.py").touch()
    (root / "pkg42" / "mod7" / "zebra_handler.py").touch()
    app = make_app(root, [])
    async with app.run_test(size=SIZE) as pilot:
        index = main_screen(app).runtime.file_index
        await wait_until(pilot, lambda: index.ready, limit=120)
        await type_keys(pilot, "@zeb")
        await wait_until(pilot, lambda: shown_files(app)[:1] == ["pkg42/mod7/zebra_handler.py"])
        await pilot.press("backspace", "backspace")
        await wait_until(pilot, lambda: suggestions(app).word is not None and suggestions(app).word.query == "z")
        assert shown_files(app)[0] == "pkg42/mod7/zebra_handler.py"  # the only name with a z
        assert index.query("f_42_7_99")[0].path == "pkg42/mod7/f_42_7_99.py"  # type: ignore[index]


# --- ! ---------------------------------------------------------------------------------------


async def test_a_bang_command_runs_now_and_the_model_sees_it(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("remember the milk\n")
    app = make_app(workspace, ["It says to remember the milk."])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "!cat notes.txt")
        await turn_done(pilot)
        [tool] = [e for e in entries(app) if isinstance(e, ToolEntry)]
        assert (tool.name, tool.summary, tool.status, tool.output) == (
            "Bash",
            "cat notes.txt",
            "ok",
            "remember the milk",
        )
        assert not isinstance(app.screen, ApprovalScreen)  # the person's own command: nothing to approve
        await send(pilot, "what does it say?")
        await turn_done(pilot)
        history = main_screen(app).runtime.sessions.history
        assert (
            history[0]["content"]
            == "<bash-input>cat notes.txt</bash-input>\n<bash-output>\nremember the milk\n</bash-output>"
        )


async def test_esc_kills_a_bang_command_and_its_output_is_capped(workspace: Path) -> None:
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "!echo started; touch began; sleep 60")
        await wait_until(pilot, (workspace / "began").exists)
        await pilot.press("escape")
        await turn_done(pilot)
        tool = next(e for e in entries(app) if isinstance(e, ToolEntry))
        assert tool.status == "cancelled" and tool.output == f"started\n{KILLED}"
        await send(pilot, "!head -c 100000 /dev/zero | tr '\\0' y; echo; echo tail-end")
        await turn_done(pilot)
        capped = [e for e in entries(app) if isinstance(e, ToolEntry)][-1]
        assert "bytes omitted" in capped.output and capped.output.endswith("tail-end")


# --- custom commands --------------------------------------------------------------------------


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def test_custom_commands_from_all_three_places(workspace: Path) -> None:
    write(
        workspace / ".claude/commands/review.md",
        "---\ndescription: Review a file\nargument-hint: [file]\n---\nReview $ARGUMENTS.",
    )
    write(workspace / ".todo-agent/commands/frontend/lint.md", "---\ndescription: Lint the frontend\n---\nLint it.")
    write(user_settings_path().parent / "commands/standup.md", "Write my standup from $1 and $2.")
    write(workspace / ".claude/commands/help.md", "not the real help")
    (workspace / "posts.py").write_text("def list_posts(): ...\n")
    app = make_app(workspace, ["Reviewed.", "Standup written."])
    async with app.run_test(size=SIZE) as pilot:
        await type_keys(pilot, "/")
        await wait_until(pilot, lambda: suggestions(app).display)
        names = [c.name for c in suggestions(app).commands]
        assert names[-3:] == ["/frontend:lint", "/review", "/standup"] and names.count("/help") == 1
        notices = [e.text for e in entries(app) if isinstance(e, NoticeEntry)]
        assert any("/help (.claude/commands/help.md) is not used: /help is a built-in command" in n for n in notices)
        main_screen(app).query_one(PromptInput).text = ""
        await send(pilot, "/review @posts.py")
        await turn_done(pilot)
        shown = [e for e in entries(app) if isinstance(e, UserEntry | FoldEntry)]
        assert isinstance(shown[0], UserEntry) and shown[0].text == "/review @posts.py"
        assert [(f.label, f.detail) for f in shown[1:]] == [
            ("/review", ".claude/commands/review.md"),
            ("@posts.py", "1 line"),
        ]
        await send(pilot, '/standup "the login fix" tests')
        await turn_done(pilot)
        last = main_screen(app).runtime.sessions.history[-2]["content"]
        assert last.endswith("Write my standup from the login fix and tests.")
        await send(pilot, "/help")
        await wait_until(pilot, lambda: "Your commands" in screen_text(app))


async def test_a_project_commands_shell_lines_ask_once_per_version(workspace: Path) -> None:
    command = workspace / ".todo-agent/commands/status.md"
    write(command, "Status of $1:\n!`echo line-count=$(wc -l < $1)`\nSummarise.")
    (workspace / "a.txt").write_text("1\n2\n3\n")
    app = make_app(workspace, ["First.", "Second.", "Third."])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/status a.txt")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.asking)
        modal = app.screen
        assert isinstance(modal, ApprovalScreen)
        text = screen_text(app)
        assert "Run the shell commands of /status?" in text
        # The argument is data in the command's environment, and the question shows both.
        assert 'echo line-count=$(wc -l < "${TODO_AGENT_ARG_1}")' in text and "# with TODO_AGENT_ARG_1=a.txt" in text
        assert "asked again when .todo-agent/commands/status.md changes" in text and "don't ask again" not in text
        await pilot.press("a")  # not offered here: nothing happens
        assert app.screen is modal
        await pilot.press("y")
        await turn_done(pilot)
        assert "line-count=3" in main_screen(app).runtime.sessions.history[0]["content"]
        await send(pilot, "/status a.txt")  # the same version: no question
        await turn_done(pilot)
        write(command, "Changed:\n!`echo changed`\n")
        await send(pilot, "/status a.txt")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("n")
        await turn_done(pilot)
        assert main_screen(app).query_one(PromptInput).text == "/status a.txt"  # not sent: back in the box
        notices = [e.text for e in entries(app) if isinstance(e, NoticeEntry)]
        assert "/status not sent: you declined its shell commands" in notices
        await pilot.press("ctrl+u")
        main_screen(app).query_one(PromptInput).text = ""
        await send(pilot, "thanks")
        await turn_done(pilot)


async def test_the_palette_offers_the_persons_commands(workspace: Path) -> None:
    from todo_agent.tui.palette import palette_entries

    write(workspace / ".claude/commands/review.md", "---\ndescription: Review a file\nargument-hint: [file]\n---\nGo.")
    app = make_app(workspace, [])
    async with app.run_test(size=SIZE) as pilot:
        entry = next(e for e in palette_entries(main_screen(app)) if e.title.startswith("/review"))
        assert entry.title == "/review  Review a file" and entry.help == "/review [file] (.claude/commands/review.md)"
        await entry.run()  # type: ignore[misc]
        await pilot.pause()
        assert main_screen(app).query_one(PromptInput).text == "/review "


# --- a resumed session draws them the same way ----------------------------------------------


async def test_a_resumed_session_draws_attachments_commands_and_bang_commands(workspace: Path) -> None:
    write(workspace / ".claude/commands/review.md", "Review $ARGUMENTS.")
    (workspace / "posts.py").write_text("x = 1\n")
    app = make_app(workspace, ["Reviewed."])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/review @posts.py")
        await turn_done(pilot)
        await send(pilot, "!echo hi")
        await turn_done(pilot)
        runtime = main_screen(app).runtime
        drawn = entries_from_history(runtime.sessions.transcript, summarize=runtime.turn.summarize)
    kinds = [(type(e).__name__, getattr(e, "text", getattr(e, "label", getattr(e, "name", "")))) for e in drawn]
    assert kinds == [
        ("UserEntry", "/review @posts.py"),
        ("FoldEntry", "/review"),
        ("FoldEntry", "@posts.py"),
        ("AssistantEntry", "Reviewed."),
        ("UserEntry", "!echo hi"),
        ("ToolEntry", "Bash"),
    ]
    assert json.dumps(kinds)  # plain data all the way


@pytest.mark.parametrize("text", ["!", "!   "])
async def test_a_bare_bang_is_a_prompt(workspace: Path, text: str) -> None:
    app = make_app(workspace, ["?"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, text)
        await turn_done(pilot)
        assert not [e for e in entries(app) if isinstance(e, ToolEntry)]
