"""Custom slash commands: where they are read from, their front matter and arguments, their
`!` lines and the approval a project file needs, and `@` inside them; in a real runtime."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from todo_agent.core.events import Attached, CommandExpanded, Event, Notice, TurnEnd
from todo_agent.core.input.approvals import approvals_path
from todo_agent.core.input.custom_commands import (
    CommandSource,
    expand,
    load_commands,
    parse_front_matter,
    parse_header,
    shell_lines,
    substitute,
)
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config, user_settings_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def user_commands() -> Path:
    return user_settings_path().parent / "commands"


def make_runtime(workspace: Path, steps: list[Any], **config: Any) -> tuple[Runtime, ScriptedModel]:
    model = ScriptedModel.from_data(steps)
    return Runtime.create(Config(workspace=workspace, **config), model=model), model


async def turn(runtime: Runtime, prompt: str) -> list[Event]:
    async with aclosing(runtime.turn.run(prompt)) as events:
        return [event async for event in events]


def prompts(model: ScriptedModel) -> list[str]:
    """The user messages of the last request."""
    return [str(m["content"]) for m in model.requests[-1] if m["role"] == "user"]


# --- reading the files ------------------------------------------------------------------


def test_commands_come_from_all_four_places_and_the_project_wins(workspace: Path) -> None:
    home = Path.home()
    write(workspace / ".todo-agent/commands/review.md", "project review")
    write(workspace / ".claude/commands/review.md", "claude review")
    write(workspace / ".claude/commands/frontend/lint.md", "lint it")
    write(user_commands() / "standup.md", "---\ndescription: My standup\n---\nwhat did I do")
    write(home / ".claude/commands/explain.md", "Explain $ARGUMENTS simply.\nMore text.")
    runtime, _ = make_runtime(workspace, [])
    commands = runtime.turn.commands().commands
    assert sorted(commands) == ["/explain", "/frontend:lint", "/review", "/standup"]
    assert commands["/review"].body == "project review" and commands["/review"].scope == "project"
    assert commands["/review"].label == ".todo-agent/commands/review.md"
    assert commands["/standup"].scope == "user" and commands["/standup"].description == "My standup"
    assert commands["/explain"].description == "Explain $ARGUMENTS simply."  # the first line, when none is given
    assert commands["/explain"].label == "~/.claude/commands/explain.md"


def test_a_built_in_name_loses_with_a_notice(workspace: Path) -> None:
    write(workspace / ".claude/commands/help.md", "my help")
    write(workspace / ".claude/commands/bad name.md", "x")
    runtime, _ = make_runtime(workspace, [])
    runtime.turn.reserve_command_names(["/help", "/quit"])
    found = runtime.turn.commands()
    assert "/help" not in found.commands
    assert any("/help (.claude/commands/help.md) is not used: /help is a built-in command" in n for n in found.notices)
    assert any("bad name.md skipped" in n for n in found.notices)
    assert any("/help is a built-in" in n.text for n in runtime.startup_notices())


def test_front_matter_as_claude_code_writes_it() -> None:
    meta, body = parse_front_matter(
        '---\ndescription: "Review: carefully"\nargument-hint: [file] [focus]\n'
        "allowed-tools: Bash(git add:*), Bash(git status:*), Read\nmodel: small-model\n---\n\nThe body\n"
    )
    assert meta == {
        "description": "Review: carefully",
        "argument-hint": "[file] [focus]",
        "allowed-tools": "Bash(git add:*), Bash(git status:*), Read",
        "model": "small-model",
    }
    assert body == "The body\n"
    listed, _ = parse_front_matter("---\nallowed-tools:\n  - Read\n  - 'Bash(ls:*)'\n---\nx")
    assert listed == {"allowed-tools": ["Read", "Bash(ls:*)"]}
    assert parse_front_matter("no front matter\n---\n") == ({}, "no front matter\n---\n")
    assert parse_front_matter("---\nunclosed: yes\n") == ({}, "---\nunclosed: yes\n")


def test_arguments(tmp_path: Path) -> None:
    source = CommandSource(tmp_path, "project", ".claude/commands")
    write(tmp_path / "fix.md", "Fix issue $1 in $2 ($ARGUMENTS). $3 is empty.")
    write(tmp_path / "plain.md", "Review the code.")
    write(tmp_path / "shell.md", "Diff: !`git diff -- $1`\nArgs: $ARGUMENTS")
    commands = load_commands([source]).commands
    assert expand(
        commands["/fix"], '42 "src/a b.py"'
    ) == 'Fix issue 42 in src/a b.py (42 "src/a b.py"). $3 is empty.'.replace("$3", "")
    assert expand(commands["/plain"], "posts.py") == "Review the code.\n\nARGUMENTS: posts.py"
    assert expand(commands["/plain"], "") == "Review the code."
    # In a shell line an argument is data the command reads from its environment, never code.
    [line] = shell_lines(commands["/shell"], "'x; rm -rf ~'")
    assert line.text == 'git diff -- "${TODO_AGENT_ARG_1}"' and line.env == (("TODO_AGENT_ARG_1", "x; rm -rf ~"),)
    assert line.judged == "git diff -- 'x; rm -rf ~'"  # what the deny rules also see
    assert expand(commands["/shell"], "a", ["OUT"]) == "Diff: OUT\nArgs: a"
    # Text the person typed is not read again for commands or placeholders.
    assert expand(commands["/plain"], "!`touch pwned` $1") == "Review the code.\n\nARGUMENTS: !`touch pwned` $1"
    assert substitute("$10 $1", "a b c d e f g h i j") == "j a"


# --- running them ---------------------------------------------------------------------


async def test_a_claude_command_with_arguments_becomes_the_prompt(workspace: Path) -> None:
    write(workspace / ".claude/commands/review.md", "---\ndescription: Review a file\n---\nReview $ARGUMENTS for bugs.")
    (workspace / "posts.py").write_text("def f(): pass\n")
    runtime, model = make_runtime(workspace, ["Looks fine."])
    events = await turn(runtime, "/review @posts.py")
    expanded = next(e for e in events if isinstance(e, CommandExpanded))
    assert (expanded.name, expanded.source, expanded.text) == (
        "/review",
        ".claude/commands/review.md",
        "Review @posts.py for bugs.",
    )
    [attached] = [e for e in events if isinstance(e, Attached)]
    assert attached.path == "posts.py" and "def f(): pass" in attached.content
    sent = prompts(model)
    assert parse_header(sent[0]) == ("/review", "@posts.py", ".claude/commands/review.md", "Review @posts.py for bugs.")
    assert sent[1].startswith("<attachments>") and "def f(): pass" in sent[1]
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "done"


async def test_a_project_commands_shell_lines_run_after_one_approval_per_version(workspace: Path) -> None:
    command = write(workspace / ".todo-agent/commands/status.md", "Status:\n!`echo hello-from-$1`\nSummarise.")
    asked: list[ApprovalRequest] = []
    answers = ["yes"]

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer(answers.pop(0))  # type: ignore[arg-type]

    runtime, model = make_runtime(workspace, ["one", "two", "three"])
    runtime.set_approver(approver)
    await turn(runtime, "/status there")
    assert len(asked) == 1
    assert asked[0].preview == 'echo hello-from-"${TODO_AGENT_ARG_1}"\n# with TODO_AGENT_ARG_1=there'
    assert asked[0].remembered_for == ".todo-agent/commands/status.md"
    assert "Status:\nhello-from-there\nSummarise." in prompts(model)[0]
    await turn(runtime, "/status again")  # the same version: not asked again
    assert len(asked) == 1 and "hello-from-again" in prompts(model)[-1]
    assert approvals_path().exists()
    command.write_text("Status:\n!`echo changed-$1`\n")  # a new version: asked again
    answers.append("no")
    events = await turn(runtime, "/status x")
    assert len(asked) == 2
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "blocked"
    assert any(isinstance(e, Notice) and "you declined its shell commands" in e.text for e in events)
    assert not any("changed-x" in str(m.get("content")) for m in runtime.sessions.history)
    answers.append("yes")
    await turn(runtime, "/status y")
    assert "changed-y" in prompts(model)[-1]


async def test_headless_runs_a_project_files_lines_only_under_an_allow_rule(workspace: Path) -> None:
    write(workspace / ".claude/commands/st.md", "!`echo hi`")
    runtime, model = make_runtime(workspace, [])
    runtime.set_approver(None)
    events = await turn(runtime, "/st")
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "blocked"
    assert any(isinstance(e, Notice) and "allow rule" in e.text for e in events)
    allowed, model = make_runtime(workspace, ["ok"], allow=["Bash(echo hi)"])
    allowed.set_approver(None)
    await turn(allowed, "/st")
    assert prompts(model)[0].endswith("hi")


async def test_the_persons_own_commands_run_their_lines_but_deny_rules_hold(workspace: Path) -> None:
    write(user_commands() / "mine.md", "!`echo mine`")
    write(user_commands() / "push.md", "!`git push`")
    runtime, model = make_runtime(workspace, ["ok"], deny=["Bash(git push:*)"])
    runtime.set_approver(None)
    await turn(runtime, "/mine")
    assert prompts(model)[0].endswith("mine")
    events = await turn(runtime, "/push")
    assert any(isinstance(e, Notice) and "is denied" in e.text and "git push" in e.text for e in events)


async def test_allowed_tools_hold_for_the_commands_turn_only(workspace: Path) -> None:
    write(user_commands() / "tidy.md", "---\nallowed-tools: Bash(touch:*)\n---\nTidy up.")
    step = {"tool_calls": [{"name": "Bash", "arguments": {"command": "touch made.txt"}}]}
    runtime, _ = make_runtime(workspace, [step, "done", step])  # the second turn stops at the "no"
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("no")

    runtime.set_approver(approver)
    await turn(runtime, "/tidy")
    assert (workspace / "made.txt").exists() and asked == []
    (workspace / "made.txt").unlink()
    await turn(runtime, "tidy up again")  # a plain prompt: the rule is gone
    assert [r.tool for r in asked] == ["Bash"] and not (workspace / "made.txt").exists()


async def test_a_project_file_cannot_grant_itself_tools_headless(workspace: Path) -> None:
    write(workspace / ".claude/commands/grab.md", "---\nallowed-tools: Bash\n---\nGo.")
    step = {"tool_calls": [{"name": "Bash", "arguments": {"command": "touch pwned"}}]}
    runtime, _ = make_runtime(workspace, [step, "done"])
    runtime.set_approver(None)
    events = await turn(runtime, "/grab")
    assert any(isinstance(e, Notice) and "allowed-tools apply once you approve" in e.text for e in events)
    assert not (workspace / "pwned").exists()


@pytest.mark.parametrize("prompt", ["/nothing here", "/tmp/file is big"])
async def test_a_prompt_that_is_no_command_goes_as_typed(workspace: Path, prompt: str) -> None:
    runtime, model = make_runtime(workspace, ["ok"])
    await turn(runtime, prompt)
    assert prompts(model) == [prompt]
