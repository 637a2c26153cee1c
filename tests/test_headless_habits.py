"""`todo-agent -p` with `@` mentions and custom commands: the real command against a local
OpenAI-compatible server, which records what it was sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_openai import run_in_thread
from test_headless_e2e import todo_agent


def user_messages(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "user"]


def test_a_headless_prompt_attaches_mentioned_files(workspace: Path) -> None:
    (workspace / "cli.py").write_text("import sys\nprint(sys.argv)\n")
    (workspace / "blob.bin").write_bytes(b"\0\1\2")
    with run_in_thread([{"text": "It prints its arguments."}]) as server:
        result = todo_agent(workspace, server.base_url, "--model", "m", "-p", "explain @cli.py and @blob.bin")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "It prints its arguments."
    assert "todo-agent: @blob.bin: not attached: blob.bin looks like a binary file" in result.stderr
    prompt, attached = user_messages(server.requests[0])[:2]
    assert prompt == "explain @cli.py and @blob.bin"
    file = '<attachment path="cli.py" summary="2 lines">\n     1\timport sys\n     2\tprint(sys.argv)\n</attachment>'
    assert file in attached
    assert '<attachment-note path="blob.bin">' in attached


def test_a_headless_custom_command_expands_and_its_shell_lines_need_an_allow_rule(workspace: Path) -> None:
    commands = workspace / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review\n---\nReview $ARGUMENTS.\nFiles: !`ls`\n")
    (workspace / "posts.py").write_text("x = 1\n")
    with run_in_thread([{"text": "Reviewed."}]) as server:
        refused = todo_agent(workspace, server.base_url, "--model", "m", "-p", "/review posts.py")
        assert refused.returncode == 1
        assert "/review not sent" in refused.stderr and "allow rule" in refused.stderr
        assert server.requests == []  # nothing reached the model
        settings = workspace / ".todo-agent" / "settings.toml"
        settings.parent.mkdir()
        settings.write_text('[permissions]\nallow = ["Bash(ls)"]\n')
        result = todo_agent(
            workspace, server.base_url, "--model", "m", "-p", "/review posts.py", "--output-format", "stream-json"
        )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    expanded = next(e for e in events if e["type"] == "CommandExpanded")
    assert expanded["name"] == "/review" and expanded["source"] == ".claude/commands/review.md"
    assert "Review posts.py.\nFiles: posts.py" in expanded["text"]
    [sent] = user_messages(server.requests[0])[:1]
    assert sent.startswith("<command-name>/review</command-name>") and "Files: posts.py" in sent
