"""An agent file's `model`: Claude Code's aliases mean the session's model, and a name the
server does not list runs on the session's model with a notice (over real HTTP)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_helpers import agent, inner, run
from fake_openai import FakeOpenAIServer

from todo_agent.core.agents.definitions import read_agent_file
from todo_agent.core.events import Notice
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config


def agent_file(workspace: Path, name: str, model: str) -> Path:
    path = workspace / ".claude" / "agents" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {name}\nmodel: {model}\n---\nYou are {name}.\n")
    return path


def test_claude_codes_aliases_read_as_the_sessions_model(workspace: Path) -> None:
    for alias in ("sonnet", "opus", "haiku", "inherit", "Sonnet"):
        found, warnings = read_agent_file(agent_file(workspace, "a", alias), project=True)
        assert found is not None and found.model is None and warnings == [], alias
    found, _ = read_agent_file(agent_file(workspace, "b", "qwen-coder"), project=True)
    assert found is not None and found.model == "qwen-coder"


async def test_aliases_and_unlisted_names_run_on_the_sessions_model(workspace: Path) -> None:
    agent_file(workspace, "reviewer", "sonnet")
    agent_file(workspace, "helper", "gpt-9")
    agent_file(workspace, "small", "small-model")
    items = [
        {"tool_calls": [agent("Review", "review it", subagent_type="reviewer")]},
        {"match": "review it", "text": "reviewed"},
        {"tool_calls": [agent("Help", "help out", subagent_type="helper")]},
        {"match": "help out", "text": "helped"},
        {"tool_calls": [agent("Small", "small job", subagent_type="small")]},
        {"match": "small job", "text": "small done"},
        {"text": "all done"},
    ]
    async with FakeOpenAIServer(items, models=["real-model", "small-model"]) as server:
        config = Config(workspace=workspace, model="real-model", base_url=server.base_url, api_key="test")
        runtime = Runtime.create(config)
        await asyncio.to_thread(runtime.warm_up)  # asks the server which models it has
        events = await run(runtime, "go")
        server.assert_clean()
        models = [body["model"] for body in server.requests]
    # Every request found its model: the alias and the unlisted name went to the session's.
    assert models == ["real-model", "real-model", "real-model", "real-model", "real-model", "small-model", "real-model"]
    notices = {
        name: [e.text for e in inner(events, name) if isinstance(e, Notice)] for name in ("reviewer-1", "helper-2")
    }
    assert notices["reviewer-1"] == []
    (said,) = notices["helper-2"]
    assert "'gpt-9'" in said and "does not list" in said and "real-model" in said
    assert not [e for e in inner(events, "small-3") if isinstance(e, Notice)]
