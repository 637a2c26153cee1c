"""The fixed prefix of every request: system prompt plus tool schemas, in tokens.

Usage: python benchmarks/prefix.py [--base-url http://127.0.0.1:8080/v1]

Without a server it prints todo-agent's own estimate (characters / 3.5) per task-tool set
and per tool. With `--base-url` it also asks the server: one request with the prefix and
the prompt "hi" (max_tokens 1) and one with "hi" alone; the difference of their
`usage.prompt_tokens` is the prefix by the server's own tokenizer and chat template.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config

HI: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]


async def server_count(base_url: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="not-needed")
    try:
        stream = await client.chat.completions.create(
            model="any",
            messages=messages,  # type: ignore[arg-type]
            tools=tools or openai.omit,  # type: ignore[arg-type]
            max_tokens=1,
            stream=True,
            stream_options={"include_usage": True},
        )
        prompt = 0
        async for chunk in stream:
            if chunk.usage is not None:
                prompt = chunk.usage.prompt_tokens
        return prompt
    finally:
        await client.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url")
    args = parser.parse_args()
    workspace = Path(tempfile.mkdtemp())
    for version in ("v2", "v1"):
        config = Config(workspace=workspace, model="script:x", tasks_version=version)
        runtime = Runtime.create(config, model=ScriptedModel([]))
        agent = runtime.agent
        schemas = [t.schema() for t in agent.tools]
        line = f"tasks {version}: estimate {agent.prefix_tokens():,} tokens"
        if args.base_url:
            system = [{"role": "system", "content": agent.system_prompt}]
            full = await server_count(args.base_url, [*system, *HI], schemas)
            bare = await server_count(args.base_url, HI, [])
            line += f"; the server counts {full - bare:,} ({full:,} with 'hi', {bare} for 'hi' alone)"
        print(line)
        sizes = ", ".join(f"{t.name} {agent.counter.tokens(len(json.dumps(t.schema())))}" for t in agent.tools)
        print(f"  system prompt {agent.counter.tokens(len(agent.system_prompt))}; tools: {sizes}")
        runtime.session.close()


if __name__ == "__main__":
    asyncio.run(main())
