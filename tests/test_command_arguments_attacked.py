"""A command file's `` !`cmd` `` lines with hostile arguments, through a real turn and a real
bash: whatever the person (or text they pasted) gives as arguments, and wherever the file
puts the placeholder, the argument reaches the command as data and never runs.

Each payload tries to create a marker file; no marker may ever exist. Where the placeholder
stands in a position bash evaluates (arithmetic, `${…}`, the program's name), the command
is refused before anything runs."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path

import pytest

from todo_agent.core.events import Event, Notice, TurnEnd
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config, user_settings_path

PAYLOADS = {
    "substitution": "$(touch M1)",
    "single-quote break": "';touch M2;'",
    "double-quote break": '"; touch M3; "',
    "backticks": "`touch M4`",
}

RUNS = {  # the line in the file: the argument comes back as data
    "bare": "echo got:$ARGUMENTS:end",
    "single-quoted": "echo 'got:$ARGUMENTS:end'",
    "double-quoted": 'echo "got:$ARGUMENTS:end"',
    "in $(…)": "echo $(echo got:$ARGUMENTS:end)",
    'in "$(…)"': 'echo "$(echo "got:$ARGUMENTS:end")"',
    "$'…'": "echo $'got:$ARGUMENTS:end'",
    "after a pipe": "printf '%s\\n' x | sed s/x/got:$ARGUMENTS:end/",
}

REFUSED = {  # the line in the file: refused, since bash would read the argument as code
    "arithmetic": "echo $(( $ARGUMENTS + 1 ))",
    "old arithmetic": "echo $[ $ARGUMENTS ]",
    "${…}": "echo ${HOME:-$ARGUMENTS}",
    "[[ -eq ]]": "[[ 1 -eq $ARGUMENTS ]] && echo same",
    "let": "let n=$ARGUMENTS",
    "program position": "$ARGUMENTS --version",
    "sh -c": 'sh -c "$ARGUMENTS"',
}


def command(text: str) -> None:
    path = user_settings_path().parent / "commands" / "probe.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"Output:\n!`{text}`\nDone.")


async def run(
    workspace: Path, prompt: str, approver: object = None, *, answers: int = 1
) -> tuple[list[Event], ScriptedModel]:
    model = ScriptedModel.from_data(["ok"] * answers)
    runtime = Runtime.create(Config(workspace=workspace), model=model)
    runtime.set_approver(approver)  # type: ignore[arg-type]
    async with aclosing(runtime.turn.run(prompt)) as events:
        return [event async for event in events], model


def markers(tmp_path: Path) -> list[Path]:
    return sorted(p for p in tmp_path.rglob("M[0-9]") if p.is_file())


@pytest.mark.parametrize("line", RUNS.values(), ids=RUNS.keys())
@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
async def test_an_argument_reaches_the_line_as_data(workspace: Path, tmp_path: Path, line: str, payload: str) -> None:
    command(line)
    events, model = await run(workspace, f"/probe {payload}")
    assert markers(tmp_path) == []
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "done"
    sent = next(str(m["content"]) for m in model.requests[0] if m["role"] == "user")
    assert f"got:{payload}:end" in sent


@pytest.mark.parametrize("line", REFUSED.values(), ids=REFUSED.keys())
@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
async def test_an_argument_where_bash_evaluates_it_is_refused(
    workspace: Path, tmp_path: Path, line: str, payload: str
) -> None:
    command(line)
    events, model = await run(workspace, f"/probe {payload}", answers=0)
    assert markers(tmp_path) == []
    assert isinstance(events[-1], TurnEnd) and events[-1].reason == "blocked"
    assert any(isinstance(e, Notice) and "/probe not sent" in e.text for e in events), events
    assert model.requests == []


async def test_a_project_files_approval_shows_the_argument_as_a_variable_never_in_the_line(
    workspace: Path, tmp_path: Path
) -> None:
    path = workspace / ".claude/commands/probe.md"
    path.parent.mkdir(parents=True)
    path.write_text("!`echo \"got:$1:end\" 'and:$2'`")
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("yes")

    _events, model = await run(workspace, "/probe '$(touch M1)' \"';touch M2;'\"", approver)
    assert markers(tmp_path) == []
    (request,) = asked
    ran = request.preview.splitlines()[0]
    assert ran == "echo \"got:${TODO_AGENT_ARG_1}:end\" 'and:'\"${TODO_AGENT_ARG_2}\"''"
    assert "touch" not in ran  # the line that runs never holds the argument's text
    assert "# with TODO_AGENT_ARG_1=" in request.preview  # the person still sees what it reads
    sent = next(str(m["content"]) for m in model.requests[0] if m["role"] == "user")
    assert "got:$(touch M1):end and:';touch M2;'" in sent
