"""A server's images, for a model that accepts images: each is checked to be what it claims
before it is sent (a bad one becomes a one-line note), and an image the model's server
refuses (HTTP 400) is dropped from the history, so the session goes on, `--continue` too.

Real servers: the SDK-built test server over stdio, and the OpenAI-compatible fake on
loopback (`tests/fake_openai.py`) answering as a server that will not take the image does."""

from __future__ import annotations

import base64
import json
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAIServer
from mcp_helpers import stdio_spec

from todo_agent.core.mcp.images import Image, accepted, refusal
from todo_agent.core.model.history import IMAGE_DROPPED
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.runtime import Runtime
from todo_agent.core.session.transcript import Session
from todo_agent.core.settings import Config

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="watches server processes in /proc")

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAAABJRU5ErkJggg=="
)
GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,"
GIF += b"\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def image(mime: str, data: str) -> Image:
    return Image("mcp__t__x", "c1", mime, data, len(data) * 3 // 4)


@pytest.mark.parametrize(
    ("mime", "data", "why"),
    [
        ("image/png", b64(GIF), "it claims image/png but its bytes are a GIF"),
        ("image/png", b64(b"<html>not a picture</html>"), "it claims image/png but its bytes are no image of a known"),
        ("image/png", "iVBORw0KGgo$$$not base64", "its data is not valid base64"),
        ("image/png", "iVBORw0KGgoAAAANSUhEUg\nAAAA", "its data is not valid base64"),
        ("image/svg+xml", b64(b"<svg/>"), "image/svg+xml is not a type the model reads (PNG, JPEG, GIF, WebP)"),
    ],
)
def test_an_image_that_is_not_what_it_claims_is_refused(mime: str, data: str, why: str) -> None:
    refused = refusal(image(mime, data))
    assert refused is not None and refused.startswith(why)


def test_the_four_types_pass_as_they_are() -> None:
    webp = b"RIFF\x1a\x00\x00\x00WEBPVP8L" + b"\x00" * 14
    for mime, data in [
        ("image/png", PNG),
        ("image/gif", GIF),
        ("image/jpg", b"\xff\xd8\xff\xe0rest"),
        ("image/webp", webp),
    ]:
        assert refusal(image(mime, b64(data))) is None, mime
    sent, notes = accepted([image("image/jpg", b64(b"\xff\xd8\xff\xe0rest"))])
    assert [i.mime for i in sent] == ["image/jpeg"] and notes == []


def config(workspace: Path, notes: Path, **kw: Any) -> Config:
    return Config(
        workspace=workspace,
        permission_mode="bypassPermissions",
        mcp_servers=[stdio_spec("t", notes)],
        images=True,
        **({"model": "script:x"} | kw),
    )


async def run_turn(runtime: Runtime, prompt: str) -> list[Any]:
    events = []
    async with aclosing(runtime.turn.run(prompt)) as stream:
        async for event in stream:
            events.append(event)
    return events


def image_parts(messages: list[Any]) -> list[Any]:
    return [
        part
        for m in messages
        if isinstance(m.get("content"), list)
        for part in m["content"]
        if part.get("type") == "image_url"
    ]


async def test_a_bad_image_from_a_server_is_a_note_and_never_sent(workspace: Path, notes: Path) -> None:
    call = {"name": "mcp__t__odd_picture", "arguments": {"mime": "image/png", "data": b64(GIF)}}
    model = ScriptedModel.from_data([{"tool_calls": [call]}, "no picture then"])
    runtime = Runtime.create(config(workspace, notes), model=model)
    try:
        assert await runtime.mcp.connect() == []
        await run_turn(runtime, "look")
        second = model.requests[1]
        (result,) = [m["content"] for m in second if m["role"] == "tool"]
        note = "[the image is not shown to the model: it claims image/png but its bytes are a GIF]"
        assert result == f"[image: image/png, {len(GIF)} bytes]\n{note}"
        assert image_parts(second) == []
    finally:
        await runtime.mcp.stop()
        runtime.close()


def real_model(workspace: Path, notes: Path, base_url: str, **kw: Any) -> Config:
    return config(workspace, notes, model="vision-model", base_url=base_url, api_key="k", request_retries=0, **kw)


async def test_an_image_the_models_server_refuses_is_dropped_and_the_session_goes_on(
    workspace: Path, notes: Path
) -> None:
    script = [
        {"tool_calls": [{"id": "c1", "name": "mcp__t__picture", "arguments": {}}]},
        {"http_error": 400, "message": "You uploaded an unsupported image. Please make sure your image is valid."},
        {"text": "I could not see it"},
        {"text": "still here"},
    ]
    async with FakeOpenAIServer(script) as server:
        runtime = Runtime.create(real_model(workspace, notes, server.base_url))
        try:
            assert await runtime.mcp.connect() == []
            events = await run_turn(runtime, "look")
            assert [type(e).__name__ for e in events if type(e).__name__ in ("Error", "TurnEnd")] == ["TurnEnd"]
            notice = next(e for e in events if type(e).__name__ == "Notice" and "refused" in e.text)
            assert "unsupported image" in notice.text and "sent again without them" in notice.text
            await run_turn(runtime, "and now?")
            path = runtime.session.path
        finally:
            await runtime.mcp.stop()
            runtime.close()
        refused, again, later = server.requests[1:]
        assert len(image_parts(refused["messages"])) == 1
        assert image_parts(again["messages"]) == [] and image_parts(later["messages"]) == []
        assert IMAGE_DROPPED.format(status=400) in json.dumps(again["messages"])
    kept = Session.open(path)
    try:
        assert image_parts(kept.messages) == []  # `--continue` sends no image either
    finally:
        kept.close()


async def test_continue_of_a_session_that_holds_a_refused_image_goes_on(workspace: Path, notes: Path) -> None:
    """A session saved with an image the server refuses (as every earlier version kept it)."""
    session = Session.create(workspace)
    session.append({"role": "user", "content": "look"})
    session.append({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "mcp__t__picture", "arguments": "{}"}}
    ]})  # fmt: skip
    session.append({"role": "tool", "tool_call_id": "c1", "content": "[image: image/png, 70 bytes]"})
    image_message = {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "<system-reminder>The images that mcp__t__picture (c1) returned.</system-reminder>",
            },
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
        ],
    }
    session.append(image_message)
    session.append({"role": "assistant", "content": "a dot"})
    session.close()
    script = [{"http_error": 400, "message": "Invalid image."}, {"text": "going on"}]
    async with FakeOpenAIServer(script) as server:
        runtime = Runtime.create(real_model(workspace, notes, server.base_url), continue_latest=True)
        try:
            events = await run_turn(runtime, "go on")
            assert not [e for e in events if type(e).__name__ == "Error"]
            path = runtime.session.path
        finally:
            runtime.close()
        assert len(image_parts(server.requests[0]["messages"])) == 1
        assert image_parts(server.requests[1]["messages"]) == []
    kept = Session.open(path)
    try:
        assert image_parts(kept.messages) == [] and kept.messages[-1]["content"] == "going on"
        assert [m["role"] for m in kept.messages] == [
            "user",
            "assistant",
            "tool",
            "user",
            "assistant",
            "user",
            "assistant",
        ]
    finally:
        kept.close()


async def test_a_refusal_that_was_not_the_images_keeps_them(workspace: Path, notes: Path) -> None:
    """Sent again without its images and refused again: the images were not the reason,
    so they stay, and the refusal is the turn's error."""
    script = [
        {"tool_calls": [{"id": "c1", "name": "mcp__t__picture", "arguments": {}}]},
        {"http_error": 400, "message": "something else is wrong"},
        {"http_error": 400, "message": "something else is wrong"},
    ]
    async with FakeOpenAIServer(script) as server:
        runtime = Runtime.create(real_model(workspace, notes, server.base_url))
        try:
            assert await runtime.mcp.connect() == []
            events = await run_turn(runtime, "look")
            errors = [e for e in events if type(e).__name__ == "Error"]
            assert len(errors) == 1 and "something else is wrong" in errors[0].message
            assert len(image_parts(runtime.sessions.history)) == 1
        finally:
            await runtime.mcp.stop()
            runtime.close()
