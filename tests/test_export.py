"""Exporting a session (`/export [FILE]`, `todo-agent export SESSION [-o FILE]`): Markdown,
JSON and HTML from a session a real turn recorded, what stays inert and masked in each, a
compacted session whole, the slash command through Pilot and the command as a process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import call, run, runtime_for
from markdown_it import MarkdownIt
from markdown_it.token import Token
from test_headless_e2e import todo_agent
from tui_helpers import SIZE, main_screen, make_app, send, turn_done, wait_until

from todo_agent.core.export.formats import ExportError, beside, render, save
from todo_agent.core.export.source import Exported, from_disk, to_json
from todo_agent.core.session.directory import list_sessions
from todo_agent.core.session.transcript import CompactionMark, Session
from todo_agent.frontends import cli
from todo_agent.tui.screens import slash
from todo_agent.tui.transcript import NoticeEntry

HOSTILE = (
    "print('\x1b[2J\x1b]0;owned\x07')\n"
    "</details>\n"
    "```\n"
    "````\n"
    "\x9b31m C1 and a bell \x07\n"
    "<script>alert(1)</script> <img src=http://tracker.example/p.gif>\n"
)
"""A file that would clear the screen, set the title, close the fold and the fence, run a script."""
SECRET_URL = "https://bob:hunter2@git.example.com/repo.git"
TOKEN_URL = "https://api.example.com/v1?api_key=s3cr3tvalue&page=2"
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 (but tab and newline) and C1 controls, DEL: none of them may reach an export raw."""
MASKED_PROMPT = (
    "fix the notes; the repo is https://bob:***@git.example.com/repo.git, the API "
    "https://api.example.com/v1?api_key=***&page=***"
)
"""The prompt as every export shows it (a URL with a credential in its query has all its values masked)."""
ANSWER = (
    "Fixed.\n<!-- the rest is hidden\n\nThe notes hold `</details>`, <details> and ``` fences.\n\n"
    "```python\nprint('hi')\n```"
)
"""An answer with raw HTML: a comment left open would hide the rest of a Markdown document."""


def update(task: str, **more: Any) -> dict[str, Any]:
    return {"tool_calls": [call("TaskUpdate", taskId=task, **more)]}


async def recorded(workspace: Path) -> Path:
    """A session a real turn wrote: a task with a check, a Read and a `cat` of the hostile
    file, a Write, the task completed (its check passing), a thought and an answer."""
    (workspace / "notes.md").write_text(HOSTILE)
    script = {
        "steps": [
            {"text": "Planning.", "tool_calls": [call("TaskCreate", subject="Fix the notes", verify="true")]},
            update("1", status="in_progress"),
            {"reasoning": "The notes file first.", "tool_calls": [call("Read", file_path="notes.md")]},
            {"tool_calls": [call("Bash", command="cat notes.md")]},
            {"tool_calls": [call("Write", file_path="app.py", content="print('hi')\n")]},
            update("1", status="completed"),
            {"text": ANSWER},
        ]
    }
    runtime, model = runtime_for(
        workspace, script, permission_mode="acceptEdits", allow=["Bash(true)", "Bash(cat notes.md)"]
    )
    await run(runtime, f"fix the notes; the repo is {SECRET_URL}, the API {TOKEN_URL}")
    model.assert_complete()
    path = runtime.session.path
    runtime.close()
    assert "\\u001b[2J" in path.read_text(encoding="utf-8")  # the escape is in the transcript itself
    return path


@pytest.fixture
async def session(workspace: Path) -> Exported:
    return from_disk(await recorded(workspace), workspace)


def markdown_tokens(text: str) -> list[Token]:
    """The Markdown as CommonMark reads it, nested tokens flattened."""
    flat: list[Token] = []
    for token in MarkdownIt("commonmark").parse(text):
        flat.append(token)
        flat.extend(token.children or [])
    return flat


# --- the three formats ------------------------------------------------------------------------


async def test_markdown_has_the_prompt_the_answer_the_calls_folded_and_the_plan_at_the_end(session: Exported) -> None:
    text = render(session, "markdown")
    assert text.startswith("<!-- todo-agent export")
    assert "> **❯** fix the notes; the repo is" in text
    assert "Fixed.\n&lt;!-- the rest is hidden\n\nThe notes hold `</details>`, &lt;details> and ``` fences." in text
    read = text.index("<summary>⏺ Read(notes.md) ✔")
    assert text.index("<summary>∴ Thought · 4 words</summary>") < read  # the thought before its call
    assert "print('hi')" in text[text.index("<summary>⏺ Write(app.py) ✔") :]
    folded = text[read : text.index("</details>", read)]
    assert "```json\n{\n" in folded and '"file_path": "notes.md"' in folded  # its arguments
    assert "1\tprint('␛[2J␛]0;owned␇')" in folded  # and its result, whole
    plan = text[text.index("## Plan") :]
    assert text.index("## Plan") > text.rindex("The notes hold")  # at the end
    assert "- ☑ #1 Fix the notes" in plan  # completed through its check
    assert "  - `app.py  +1 −0 (created)`" in plan
    assert re.search(r"  - check: `✓ true`", plan)
    assert "1/1 completed" in plan
    tokens = markdown_tokens(text)
    headings = [t for t in tokens if t.type == "inline" and t.content == "Plan"]
    assert headings and headings[0].level == 1  # a heading of the document, not text in a fence


async def test_json_holds_the_session_records_and_loads_back_as_the_same_session(
    session: Exported, tmp_path: Path
) -> None:
    document = json.loads(to_json(session))
    assert document["format"] == "todo-agent export" and document["session"] == session.session_id
    on_disk = [json.loads(line) for line in session.path.read_text(encoding="utf-8").splitlines()]
    assert len(document["records"]) == len(on_disk)
    assert [r["type"] for r in document["records"]] == [r["type"] for r in on_disk]
    assert document["plan"][0]["subject"] == "Fix the notes" and document["plan"][0]["files"] == [
        "app.py  +1 −0 (created)"
    ]
    copy = tmp_path / "copy.jsonl"
    copy.write_text("".join(json.dumps(r) + "\n" for r in document["records"]), encoding="utf-8")
    original, loaded = Session.view(session.path), Session.view(copy)
    assert len(loaded.transcript) == len(original.transcript) == session.messages
    differing = [(was, back) for was, back in zip(original.transcript, loaded.transcript, strict=True) if was != back]
    prompt = original.transcript[0]
    assert isinstance(prompt, dict)
    assert differing == [(prompt, {**prompt, "content": MASKED_PROMPT})]  # the one record that held credentials
    assert loaded.tool_status == original.tool_status


class Page(HTMLParser):
    """What an HTML page holds: its tags in order, their attributes, unclosed ones."""

    VOID = frozenset({"meta", "br", "hr", "img", "input", "link"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.open: list[str] = []
        self.mismatched: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += attrs
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open.pop() != tag:
            self.mismatched.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    return page


async def test_html_is_one_page_with_no_script_and_nothing_to_fetch(session: Exported) -> None:
    text = render(session, "html")
    page = parsed(text)
    assert page.tags[:2] == ["html", "head"] and page.open == [] and page.mismatched == []
    assert "script" not in page.tags and not {"img", "link", "iframe", "object", "form"} & set(page.tags)
    assert not [name for name, _ in page.attributes if name in ("src", "href", "action", "srcset")]
    assert not re.search(r"url\(|@import|https?://(?!bob|api\.example)", text.split("</style>")[0])
    policy = page.attributes[page.attributes.index(("http-equiv", "Content-Security-Policy")) + 1]
    assert policy == ("content", "default-src 'none'; style-src 'unsafe-inline'")
    shown = "".join(page.text)
    assert "fix the notes; the repo is" in shown and "The notes hold `</details>`, <details> and" in shown
    assert page.tags.count("details") == 7  # the thought and the six calls
    assert "☑ #1 Fix the notes" in shown and "app.py  +1 −0 (created)" in shown and "✓ true" in shown


async def test_escape_sequences_a_closing_fold_and_fences_in_a_file_stay_inert(session: Exported) -> None:
    for form in ("markdown", "html", "json"):
        text = render(session, form)  # type: ignore[arg-type]
        assert not CONTROLS.search(text), form
    markdown = render(session, "markdown")
    assert "␛[2J␛]0;owned␇" in markdown and "<U+009B>31m C1" in markdown
    tokens = markdown_tokens(markdown)
    fences = [t.content for t in tokens if t.type == "fence"]
    assert any("</details>\n     3\t```\n     4\t````" in content for content in fences)
    assert "\n</details>\n```\n````\n" in "\n".join(fences)  # `cat`: its lines start with the fences
    raw_html = [t.content.strip() for t in tokens if t.type in ("html_block", "html_inline")]
    ours = re.compile(r"<!-- todo-agent export .*-->|<details>\n<summary>[^<>]*</summary>|</details>")
    assert raw_html and all(ours.fullmatch(block) for block in raw_html), raw_html
    rendered = MarkdownIt("commonmark").render(markdown)
    assert rendered.count("<details>") == rendered.count("</details>") == 7  # the thought, the six calls
    assert "<script>" not in rendered and "<img" not in rendered
    page = parsed(render(session, "html"))
    assert "script" not in page.tags and "img" not in page.tags
    assert "</details>\n     3\t```" in "".join(page.text)  # shown, as text
    document = json.loads(render(session, "json"))
    results = [r["message"]["content"] for r in document["records"] if r.get("message", {}).get("role") == "tool"]
    assert any("\x1b[2J\x1b]0;owned\x07" in result for result in results)  # escaped as JSON, kept as it was


async def test_credentials_in_urls_are_masked_in_every_format(session: Exported) -> None:
    for form in ("markdown", "html", "json"):
        text = render(session, form)  # type: ignore[arg-type]
        assert "hunter2" not in text and "s3cr3tvalue" not in text, form
        shown = MarkdownIt("commonmark").render(text) if form == "markdown" else text
        assert "https://bob:***@git.example.com/repo.git" in shown, form
        assert "api.example.com/v1?api_key=***" in shown, form


def test_a_compacted_session_exports_its_whole_transcript_with_the_mark(workspace: Path) -> None:
    session = Session.create(workspace)
    for n in range(3):
        session.append({"role": "user", "content": f"early prompt {n}"})
        session.append({"role": "assistant", "content": f"early answer {n}"})
    summary = {
        "role": "user",
        "content": "<system-reminder>\nThis conversation was compacted: gist\n</system-reminder>",
    }
    session.compact(summary, 2, CompactionMark(9000, 1200, "auto", 4, "gist of it"))
    session.append({"role": "user", "content": "<system-reminder>\nThe task list is not in view.\n</system-reminder>"})
    session.append({"role": "user", "content": "later prompt"})
    session.append({"role": "assistant", "content": "later answer"})
    session.close()
    exported = from_disk(session.path, workspace)
    for form in ("markdown", "html"):
        text = render(exported, form)  # type: ignore[arg-type]
        order = [text.index(s) for s in ("early prompt 0", "early answer 2", "compacted here", "later prompt")]
        assert order == sorted(order), form
        assert "summary of the 4 earlier messages (9,000 → 1,200 tokens)" in text
        folded = text[text.index("the summary the model kept") :]
        assert folded.index("This conversation was compacted: gist") < folded.index("later prompt")  # folded
        assert text.count("This conversation was compacted") == 1  # not a prompt, nor a reminder line
        assert "system-reminder" not in text
        assert text.count("later prompt") == 1
    markdown = render(exported, "markdown")
    assert "\n*⎿ reminder · The task list is not in view\\.*\n" not in markdown  # escaped, and:
    assert "\n*⎿ reminder · The task list is not in view.*\n" in markdown
    assert "compacted 1×" in markdown and " 9 messages" in markdown


def test_an_answer_that_leaves_a_fence_open_does_not_swallow_what_follows(workspace: Path) -> None:
    session = Session.create(workspace)
    session.append({"role": "user", "content": "write it"})
    session.append({"role": "assistant", "content": "Here:\n\n~~~~python\nprint('never closed')\n```"})
    session.append({"role": "user", "content": "thanks"})
    session.close()
    tokens = markdown_tokens(render(from_disk(session.path, workspace), "markdown"))
    (fence,) = [t for t in tokens if t.type == "fence"]
    assert fence.content == "print('never closed')\n```\n"
    assert [t.content for t in tokens if t.type == "inline" and "thanks" in t.content] == ["**❯** thanks"]
    assert any(t.type == "inline" and t.content == "Plan" for t in tokens)


# --- writing the file -------------------------------------------------------------------------


async def test_an_export_replaces_an_earlier_export_never_another_file(session: Exported, tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    first = save(session, target)
    assert not first.replaced and target.read_text(encoding="utf-8") == first.text
    assert target.stat().st_mode & 0o777 == 0o600  # private, like the session it comes from
    again = save(session, target)
    assert again.replaced and "replaced the earlier export" in again.line()
    readme = tmp_path / "README.md"
    readme.write_text("# my project\n")
    with pytest.raises(ExportError, match="is not an export of todo-agent: not overwritten"):
        save(session, readme)
    assert readme.read_text() == "# my project\n"
    html = save(session, tmp_path / "page.html")
    assert html.format == "html" and save(session, tmp_path / "page.html").replaced
    with pytest.raises(ExportError, match=r"cannot write the export to .*No such file or directory"):
        save(session, tmp_path / "missing" / "x.json")
    with pytest.raises(ExportError, match="is a folder"):
        save(session, tmp_path)
    with pytest.raises(ExportError, match="embedded null byte"):
        save(session, tmp_path / "a\x00b.md")


# --- /export in the app -------------------------------------------------------------------------


def notices(app: Any) -> list[NoticeEntry]:
    return [e for e in main_screen(app).conversation.entries if isinstance(e, NoticeEntry)]


async def test_slash_export_to_a_file_writes_it_and_says_where(workspace: Path) -> None:
    app = make_app(workspace, [{"reasoning": "Say hi.", "text": "Hello **there**."}])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "greet me")
        await turn_done(pilot)
        await send(pilot, "/export out.md")
        await wait_until(pilot, lambda: any("exported session" in n.text for n in notices(app)))
        target = workspace / "out.md"
        (line,) = [n for n in notices(app) if "exported session" in n.text]
        assert line.level == "info" and f"to {target} (Markdown, 2 messages)" in line.text
        text = target.read_text(encoding="utf-8")
        assert "> **❯** greet me" in text and "Hello **there**." in text and "∴ Thought" in text
        await send(pilot, "/export out.md")
        await wait_until(pilot, lambda: any("replaced the earlier export" in n.text for n in notices(app)))
        await send(pilot, f"/export {workspace / 'page.html'}")
        await wait_until(pilot, (workspace / "page.html").exists)
        assert parsed((workspace / "page.html").read_text(encoding="utf-8")).mismatched == []
        assert app.clipboard == ""  # a file was named: the clipboard is left alone


async def test_slash_export_without_a_file_copies_the_markdown_and_writes_beside_the_session(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(workspace, ["Hello."])
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "greet me")
        await turn_done(pilot)
        await send(pilot, "/export")
        await wait_until(pilot, lambda: any("exported session" in n.text for n in notices(app)))
        session_path = main_screen(app).runtime.session.path
        target = beside(session_path)
        assert target.parent == session_path.parent and target.name.endswith(".export.md")
        (line,) = [n.text for n in notices(app) if "exported session" in n.text]
        assert f"to {target} (Markdown" in line and "copied to the clipboard" in line and "set-clipboard on" in line
        assert copied == [target.read_text(encoding="utf-8")]
        assert copied[0].startswith("<!-- todo-agent export") and "> **❯** greet me" in copied[0]
        assert [s.id for s in list_sessions(workspace)] == [session_path.stem]  # not taken for a session


async def test_slash_export_to_a_path_it_cannot_write_says_so_in_one_line(workspace: Path) -> None:
    (workspace / "README.md").write_text("# mine\n")
    app = make_app(workspace, ["Hello."])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "greet me")
        await turn_done(pilot)
        await send(pilot, "/export no/such/dir/s.md")
        await wait_until(pilot, lambda: any(n.level == "warning" for n in notices(app)))
        await send(pilot, "/export README.md")
        await wait_until(pilot, lambda: len([n for n in notices(app) if n.level == "warning"]) == 2)
        first, second = [n.text for n in notices(app) if n.level == "warning"]
        assert first == f"cannot write the export to {workspace / 'no/such/dir/s.md'}: No such file or directory"
        assert "README.md exists and is not an export of todo-agent: not overwritten" in second
        assert "\n" not in first + second
        assert (workspace / "README.md").read_text() == "# mine\n"
        assert not main_screen(app).busy


async def test_slash_export_writes_in_a_thread_and_the_app_keeps_taking_keys(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, threads = threading.Event(), []
    real_save = slash.save

    def slow_save(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread())
        if threading.current_thread() is not threading.main_thread():  # on the loop it would hang the test
            assert release.wait(30)
        return real_save(*args, **kwargs)

    monkeypatch.setattr(slash, "save", slow_save)
    app = make_app(workspace, ["Hello."])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "greet me")
        await turn_done(pilot)
        await send(pilot, "/export big.md")
        await wait_until(pilot, lambda: bool(threads))
        prompt = main_screen(app).query_one("#prompt")
        await pilot.press(*"still")
        await wait_until(pilot, lambda: prompt.text == "still", limit=20)  # type: ignore[attr-defined]
        assert not (workspace / "big.md").exists()
        release.set()
        await wait_until(pilot, (workspace / "big.md").exists)
        assert threads[0] is not threading.main_thread()


# --- todo-agent export ----------------------------------------------------------------------------


async def test_the_command_exports_by_id_to_a_file_and_by_path_to_stdout(workspace: Path) -> None:
    path = await recorded(workspace)
    result = todo_agent(workspace, None, "export", path.stem[:15], "-o", "f.html")  # a prefix, as --resume takes
    assert result.returncode == 0 and result.stdout == "", result.stderr
    messages = len(Session.view(path).transcript)
    line = f"todo-agent: exported session {path.stem} to {workspace / 'f.html'} (HTML, {messages} messages)\n"
    assert result.stderr == line
    page = parsed((workspace / "f.html").read_text(encoding="utf-8"))
    assert page.mismatched == [] and "script" not in page.tags
    printed = todo_agent(workspace.parent, None, "export", str(path))  # from anywhere, by its file
    assert printed.returncode == 0 and printed.stderr == ""
    assert printed.stdout.startswith(f"<!-- todo-agent export · session {path.stem} -->\n\n# fix the notes")
    assert "> **❯** fix the notes" in printed.stdout and printed.stdout.rstrip().endswith("1/1 completed")
    assert not CONTROLS.search(printed.stdout)


async def test_the_command_with_an_unknown_id_exits_2_naming_the_nearest(workspace: Path) -> None:
    path = await recorded(workspace)
    result = todo_agent(workspace, None, "export", path.stem[:-1] + "x")
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"todo-agent: no session has the id '{path.stem[:-1]}x' here. Nearest: {path.stem} ")
    missing = todo_agent(workspace, None, "export", "gone/s.jsonl")
    assert missing.returncode == 2 and missing.stderr == "todo-agent: no session file at gone/s.jsonl\n"


def test_only_a_first_word_export_is_the_subcommand(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[tuple[str, Any]] = []
    monkeypatch.setattr(cli, "run", lambda args: ran.append(("app", args)) or 0)
    monkeypatch.setattr(cli, "run_export", lambda args: ran.append(("export", args)) or 0)
    for argv in (["-p", "export"], ["--demo"], [], ["-c"], ["--model", "export"]):
        with pytest.raises(SystemExit):
            cli.main(argv)
    with pytest.raises(SystemExit):
        cli.main(["export", "20261204", "-o", "x.md"])
    assert [kind for kind, _ in ran] == ["app", "app", "app", "app", "app", "export"]
    assert ran[0][1].prompt == "export" and ran[1][1].demo and ran[4][1].model == "export"
    assert (ran[5][1].session, ran[5][1].output) == ("20261204", "x.md")


def test_a_prompt_that_says_export_still_runs_headless(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "exported nothing"}]}))
    result = todo_agent(workspace, None, "-p", "export", "--model", f"script:{script}", "--output-format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"] == "exported nothing"
    (info,) = list_sessions(workspace)
    first = Session.view(info.path).transcript[0]
    assert isinstance(first, dict) and first["content"] == "export"


def test_the_export_module_loads_neither_textual_nor_openai() -> None:
    code = (
        "import sys, todo_agent.core.export.formats, todo_agent.core.export.source\n"
        "print(','.join(m for m in ('textual', 'rich', 'openai') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
