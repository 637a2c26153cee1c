"""`openai`'s type packages load when first used (`core/model/openai_types.py`): a real
chat completion streams over real HTTP with most of them never imported, and every name
they export is still there when asked for. In a fresh interpreter, since the test process
may have imported `openai` already."""

from __future__ import annotations

import asyncio
import json
import sys
from asyncio.subprocess import PIPE

from fake_openai import FakeOpenAIServer

PROGRAM = """
import asyncio, json, sys
from todo_agent.core.runtime import create_model

async def main(base_url):
    model = create_model("m", base_url=base_url, api_key="x")
    text = ""
    async for event in model.stream([{"role": "user", "content": "hi"}], []):
        text += event if isinstance(event, str) else ""
    loaded = sorted(m for m in sys.modules if m.startswith("openai"))
    import openai
    import openai.types as types
    names = [types.Completion.__name__, openai.types.responses.Response.__name__]
    from openai.types.responses import ResponseInputItemParam  # noqa: F401
    exec("from openai.types import *", {})
    print(json.dumps({"text": text, "loaded": loaded, "names": names}))

asyncio.run(main(sys.argv[1]))
"""


async def test_a_chat_completion_streams_with_the_type_packages_deferred() -> None:
    server = FakeOpenAIServer([{"text": "hello there"}])
    async with server:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", PROGRAM, server.base_url, stdout=PIPE, stderr=PIPE
        )  # the server answers on this event loop: the child must not block it
        out, err = await asyncio.wait_for(child.communicate(), 60)
        assert child.returncode == 0, err.decode()
    found = json.loads(out.decode().splitlines()[-1])
    assert found["text"] == "hello there"
    responses = [m for m in found["loaded"] if m.startswith("openai.types.responses.")]
    assert len(responses) < 20, responses  # of ~250: the package's __init__ did not run
    assert "openai.types.image" not in found["loaded"] and "openai.types.chat" in found["loaded"]
    assert found["names"] == ["Completion", "Response"]  # asked for: there
