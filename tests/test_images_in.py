"""Images in (issue 32, item 3): `@shot.png`, a pasted path to one and the Read tool give a
model that takes images (`images = true`) the image as a content part; anything else gets
one clear line and the prompt's text still goes.

Real files made here (valid PNGs from zlib and struct, JPEG, GIF and WebP headers by hand),
the real `todo-agent -p` against the OpenAI-compatible fake (which refuses an image part
that is not a base64 data URL of the type its bytes are), the real app through Pilot, and
the runtime on a scripted model where what matters is the history."""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import zlib
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import agent, call
from fake_openai import FakeOpenAIServer, run_in_thread
from test_headless_e2e import todo_agent
from textual import events
from tui_helpers import SIZE, main_screen, make_app, screen_text, send, turn_done, wait_settled, wait_until

from todo_agent.core.events import Attached, Event
from todo_agent.core.input.file_index import pasted_image, pasted_path
from todo_agent.core.input.mentions import NO_IMAGES, Attacher, attachment_content, parse_attachment_message
from todo_agent.core.model.base import Message, ModelResponse, StreamItem, content_text
from todo_agent.core.model.history import IMAGE_DROPPED
from todo_agent.core.model.images import IMAGE_TOKENS, NotAnImage, read_header, size_text
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.runtime import Runtime
from todo_agent.core.session.transcript import Session
from todo_agent.core.settings import Config
from todo_agent.core.window.tokens import DEFAULT_CHARS_PER_TOKEN, TokenCounter, message_chars
from todo_agent.tui.transcript import IMAGE_MARK, FoldEntry, NoticeEntry, entries_from_history

# --- images made by hand --------------------------------------------------------------------


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, *, padding: int = 0) -> bytes:
    """A real PNG: 8-bit RGB, one red colour; `padding` bytes of a private chunk make it big."""
    rows = b"".join(b"\x00" + b"\xc8\x1e\x1e" * width for _ in range(height))
    extra = _chunk(b"prVt", bytes(padding)) if padding else b""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", ihdr)
        + extra
        + _chunk(b"IDAT", zlib.compress(rows))
        + _chunk(b"IEND", b"")
    )


def jpeg(width: int, height: int) -> bytes:
    """SOI, a JFIF APP0 segment, a baseline frame header (SOF0) with the size, EOI."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00" + b";"


def webp(width: int, height: int, chunk: bytes = b"VP8L") -> bytes:
    if chunk == b"VP8L":
        body = b"\x2f" + struct.pack("<I", (width - 1) | (height - 1) << 14) + bytes(9)
    elif chunk == b"VP8X":
        body = bytes(4) + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    else:  # lossy: a frame tag, the start code, the sizes
        body = b"\x30\x01\x00\x9d\x01\x2a" + struct.pack("<HH", width, height) + bytes(4)
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(body)) + b"WEBP" + chunk + struct.pack("<I", len(body)) + body


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def image_parts(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [
        part
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") == "image_url"
    ]


def urls(messages: Sequence[Message]) -> list[str]:
    return [part["image_url"]["url"] for part in image_parts(messages)]


async def run(runtime: Runtime, prompt: str) -> list[Event]:
    async with aclosing(runtime.turn.run(prompt)) as stream:
        return [event async for event in stream]


def scripted(workspace: Path, steps: Any, **config: Any) -> tuple[Runtime, ScriptedModel]:
    model = ScriptedModel.from_data(steps)
    return Runtime.create(Config(workspace=workspace, model="script:test", **config), model=model), model


# --- what the bytes are -----------------------------------------------------------------------


def test_the_four_types_and_their_sizes_are_read_from_their_headers() -> None:
    found = [
        read_header(data)
        for data in (
            png(1280, 720),
            jpeg(640, 480),
            gif(3, 2),
            webp(300, 200),
            webp(17, 9, b"VP8X"),
            webp(64, 48, b"VP8 "),
        )
    ]
    assert [(h.mime, h.width, h.height) for h in found] == [
        ("image/png", 1280, 720),
        ("image/jpeg", 640, 480),
        ("image/gif", 3, 2),
        ("image/webp", 300, 200),
        ("image/webp", 17, 9),
        ("image/webp", 64, 48),
    ]
    assert [size_text(n) for n in (1, 999, 210_400, 4_200_000)] == ["1 byte", "999 bytes", "210 KB", "4.2 MB"]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"just text, named .png", "its bytes are no PNG, JPEG, GIF or WebP image"),
        (png(4, 4)[:20], "its PNG header is missing or cut short"),
        (png(4, 4)[:29] + b"\0\0\0\0" + png(4, 4)[33:], "its PNG header is damaged (its checksum does not match)"),
        (jpeg(4, 4)[:20], "its JPEG frame header is missing or cut short"),
        (jpeg(0, 4), "its JPEG header says it is 0×4"),
        (webp(4, 4)[:12] + b"JUNK" + bytes(20), "its WebP header has no image chunk"),
    ],
)
def test_a_header_that_is_not_valid_for_its_type_is_no_image(data: bytes, why: str) -> None:
    with pytest.raises(NotAnImage, match=re.escape(why)):
        read_header(data)


def test_an_image_part_counts_a_fixed_estimate_in_the_window_not_its_base64() -> None:
    data = b64(png(1280, 720, padding=200_000))
    text = "<attachments>…</attachments>"
    message: Message = {
        "role": "user",
        "content": [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
        ],
    }
    assert (
        TokenCounter().message_tokens(message)
        == TokenCounter().message_tokens({"role": "user", "content": text}) + IMAGE_TOKENS
    )
    assert message_chars(message) < len(data) // 50
    assert round(IMAGE_TOKENS * DEFAULT_CHARS_PER_TOKEN) > 2000  # not the 0 a text-only count gave it


# --- @ mentions -------------------------------------------------------------------------------


def settings(workspace: Path, text: str) -> None:
    (workspace / ".todo-agent").mkdir(exist_ok=True)
    (workspace / ".todo-agent" / "settings.toml").write_text(text)


def test_an_at_image_goes_to_the_model_as_an_image_part(workspace: Path) -> None:
    shot = png(1280, 720)
    (workspace / "shot.png").write_bytes(shot)
    settings(workspace, "images = true\n")
    with run_in_thread([{"text": "A red rectangle."}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "describe @shot.png")
        requests, problems = list(server.requests), server.problems()
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "A red rectangle."
    assert problems == []  # the fake refuses an image part that is not the type its bytes are
    messages = requests[0]["messages"]
    assert messages[1] == {"role": "user", "content": "describe @shot.png"}
    attachments = messages[2]["content"]
    assert urls(messages) == [f"data:image/png;base64,{b64(shot)}"]
    label = f'<attachment-image path="shot.png" type="image/png" summary="1280×720 · {size_text(len(shot))}"/>'
    assert attachments[0]["type"] == "text" and attachments[0]["text"].endswith(label + "\n")
    assert attachments[1]["type"] == "image_url" and attachments[2]["text"] == "</attachments>"
    assert "not attached" not in result.stderr


def test_without_images_a_clear_line_instead_and_the_text_still_goes(workspace: Path) -> None:
    (workspace / "shot.png").write_bytes(png(8, 8))
    with run_in_thread([{"text": "I cannot see images."}]) as server:
        result = todo_agent(workspace, server.base_url, "-p", "describe @shot.png")
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    assert f"todo-agent: @shot.png: {NO_IMAGES}" in result.stderr.splitlines()
    assert NO_IMAGES == "not attached: the model does not take images (images = true in the settings turns them on)"
    messages = requests[0]["messages"]
    assert messages[1] == {"role": "user", "content": "describe @shot.png"}
    assert image_parts(messages) == []
    assert f'<attachment-note path="shot.png">{NO_IMAGES}</attachment-note>' in messages[2]["content"]


def attach(workspace: Path, text: str, **options: Any) -> tuple[list[Attached], str | list[dict[str, Any]]]:
    taken = Attacher(workspace, images=True, **options).take_all(text)
    return [item.attachment for item in taken], attachment_content(taken)


def test_an_image_over_the_limit_is_refused(workspace: Path) -> None:
    big = png(16, 16, padding=5_000_000)
    (workspace / "big.png").write_bytes(big)
    [item], content = attach(workspace, "look at @big.png")
    assert item.note == f"not attached: {len(big):,} bytes, more than the 4,000,000 an image may be"
    assert isinstance(content, str) and "base64" not in content


def test_a_text_file_named_png_is_refused_as_not_an_image(workspace: Path) -> None:
    (workspace / "notes.png").write_text("these are notes, not a picture\n")
    [item], content = attach(workspace, "@notes.png")
    assert item.note == "not attached: notes.png is not an image: its bytes are no PNG, JPEG, GIF or WebP image"
    assert isinstance(content, str)


def test_only_a_regular_file_in_the_workspace_is_read(workspace: Path, tmp_path: Path) -> None:
    os.mkfifo(workspace / "pipe.png")  # a read would wait for a writer for ever
    (tmp_path / "elsewhere.png").write_bytes(png(2, 2))
    (workspace / "link.png").symlink_to(tmp_path / "elsewhere.png")
    notes = {item.path: item.note for item in attach(workspace, "@pipe.png @link.png")[0]}
    assert notes == {
        "pipe.png": "not attached: pipe.png is not a regular file",
        "link.png": "not attached: it is outside the workspace",
    }


def test_a_jpeg_named_png_goes_as_image_jpeg(workspace: Path) -> None:
    photo = jpeg(640, 480)
    (workspace / "photo.png").write_bytes(photo)
    [item], content = attach(workspace, "@photo.png")
    assert (item.path, item.mime, item.summary, item.note) == ("photo.png", "image/jpeg", "640×480 · 35 bytes", "")
    assert urls([{"role": "user", "content": content}]) == [f"data:image/jpeg;base64,{b64(photo)}"]


def test_a_prompt_takes_five_images_at_most_and_an_image_without_an_image_name_by_its_bytes(workspace: Path) -> None:
    for n in range(6):
        (workspace / f"s{n}.gif").write_bytes(gif(n + 1, 1))
    (workspace / "logo").write_bytes(webp(10, 10))
    found, content = attach(workspace, "@logo " + " ".join(f"@s{n}.gif" for n in range(6)))
    assert [(a.path, a.mime or a.note) for a in found][:2] == [("logo", "image/webp"), ("s0.gif", "image/gif")]
    assert found[-1].note == "not attached: at most 5 images go with one prompt"
    assert len(image_parts([{"role": "user", "content": content}])) == 5
    # The text parts joined are the attachments' text, which the app reads back on resume.
    again = parse_attachment_message(content_text(content))
    assert again == found


# --- Read -------------------------------------------------------------------------------------


async def test_read_on_an_image_shows_it_to_a_model_that_takes_images(workspace: Path) -> None:
    shot = png(64, 32)
    (workspace / "shot.png").write_bytes(shot)
    runtime, model = scripted(
        workspace, [{"tool_calls": [call("Read", file_path="shot.png")]}, "a red bar"], images=True
    )
    await run(runtime, "what is in shot.png?")
    second = model.requests[1]
    (result,) = [m for m in second if m["role"] == "tool"]
    assert result["content"] == (
        f"image/png 64×32, {size_text(len(shot))}: shot.png is shown to you as an image in a message after the results"
    )
    after = second[second.index(result) + 1]
    assert after["role"] == "user" and urls([after]) == [f"data:image/png;base64,{b64(shot)}"]
    assert "Read (call_" in after["content"][0]["text"]
    assert urls(model.requests[0]) == []
    runtime.close()


async def test_read_on_an_image_says_what_it_is_to_a_model_without_images(workspace: Path) -> None:
    (workspace / "photo.jpg").write_bytes(jpeg(1920, 1080))
    runtime, model = scripted(workspace, [{"tool_calls": [call("Read", file_path="photo.jpg")]}, "ok"])
    await run(runtime, "look")
    (result,) = [m["content"] for m in model.requests[1] if m["role"] == "tool"]
    assert result == "image/jpeg 1920×1080, 35 bytes: this model does not take images"
    assert image_parts(model.requests[1]) == []
    runtime.close()


async def test_a_sub_agents_read_image_goes_to_its_own_next_request(workspace: Path) -> None:
    (workspace / "shot.png").write_bytes(png(5, 5))
    script = {
        "steps": [{"tool_calls": [agent("Look", "look at shot.png")]}, {"text": "it saw it"}],
        "agents": [{"match": "Look", "steps": [{"tool_calls": [call("Read", file_path="shot.png")]}, {"text": "red"}]}],
    }
    runtime, model = scripted(workspace, script, images=True)
    await run(runtime, "go")
    directory = runtime.session.path.with_name(f"{runtime.session.id}.agents")
    child = Session.open(directory / "general-1.jsonl")
    assert urls(child.messages) == [f"data:image/png;base64,{b64(png(5, 5))}"]
    assert all(urls(request) == [] for request in model.requests)  # never the main agent's
    child.close()
    runtime.close()


# --- the server refuses it, compaction ----------------------------------------------------------


async def test_an_attached_image_the_server_refuses_is_sent_again_without_it(workspace: Path) -> None:
    (workspace / "shot.png").write_bytes(png(4, 4))
    script = [{"http_error": 400, "message": "this model does not support image input"}, {"text": "no picture"}]
    async with FakeOpenAIServer(script) as server:
        config = Config(
            workspace=workspace,
            model="text-model",
            base_url=server.base_url,
            api_key="k",
            images=True,
            request_retries=0,
        )
        runtime = Runtime.create(config)
        events = await run(runtime, "describe @shot.png")
        refused, again = server.requests
    assert len(image_parts(refused["messages"])) == 1
    assert image_parts(again["messages"]) == [] and IMAGE_DROPPED.format(status=400) in json.dumps(again["messages"])
    assert again["messages"][1]["content"] == "describe @shot.png"
    assert any("sent again without them" in getattr(e, "text", "") for e in events)
    assert image_parts(runtime.sessions.history) == []  # and it stays out
    runtime.close()


class Summarising:
    """The agent's requests go to the script; a compaction's summary requests (no tools) are logged and answered."""

    def __init__(self, steps: list[Any]) -> None:
        self.script = ScriptedModel.from_data(steps)
        self.summaries: list[list[Message]] = []
        self.name = "script"

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *, max_tokens: int | None = None
    ) -> AsyncIterator[StreamItem]:
        if tools:
            async for item in self.script.stream(messages, tools, max_tokens=max_tokens):
                yield item
            return
        self.summaries.append([dict(m) for m in messages])
        yield ModelResponse("## Goal\nDescribe the screenshot.\n## Remaining\nNothing.")


async def test_a_compaction_replaces_the_image_with_its_line_and_the_summary_request_holds_no_base64(
    workspace: Path,
) -> None:
    shot = png(1280, 720)
    (workspace / "shot.png").write_bytes(shot)
    chunk = "".join(f"line {n}: the quick brown fox jumps over the lazy dog\n" for n in range(60))
    model = Summarising([{"text": f"{n}: {chunk}"} for n in range(3)])
    config = Config(workspace=workspace, model="script:test", context_window=32_768, images=True)
    runtime = Runtime.create(config, model=model)
    for prompt in ("describe @shot.png", "and the colours?", "thanks"):
        await run(runtime, prompt)
    assert len(image_parts(runtime.sessions.history)) == 1  # in the history as it was sent, until…
    async with aclosing(runtime.turn.compact()) as stream:
        names = [type(e).__name__ async for e in stream]
    assert names == ["Compacting", "Compacted", "TurnEnd"]
    sent = json.dumps(model.summaries)
    line = f'attachment-image path=\\"shot.png\\" type=\\"image/png\\" summary=\\"1280×720 · {size_text(len(shot))}\\"'
    assert line in json.dumps(model.summaries, ensure_ascii=False)
    assert "base64" not in sent and b64(shot)[:40] not in sent
    assert image_parts(runtime.sessions.history) == []
    assert 'attachment-image path="shot.png"' in runtime.sessions.history[0]["content"]  # the one line is what is kept
    runtime.close()


# --- the app ----------------------------------------------------------------------------------


async def test_the_conversation_shows_the_image_in_one_line_live_and_on_resume(workspace: Path) -> None:
    shot = png(1280, 720)
    (workspace / "shot.png").write_bytes(shot)
    app = make_app(workspace, ["A red rectangle."], images=True)
    shown = f"⎿  {IMAGE_MARK} shot.png  1280×720 · {size_text(len(shot))}"
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "describe @shot.png")
        await turn_done(pilot)
        await wait_settled(pilot)
        fold = next(e for e in main_screen(app).conversation.entries if isinstance(e, FoldEntry))
        assert (fold.label, fold.detail) == (f"{IMAGE_MARK} shot.png", f"1280×720 · {size_text(len(shot))}")
        assert shown in screen_text(app)
        main_screen(app).runtime.session.close()  # as quitting does: the session is free to resume
    again = make_app(workspace, [], continue_latest=True, images=True)
    async with again.run_test(size=SIZE) as pilot:
        await wait_settled(pilot)
        assert shown in screen_text(again)


async def test_without_images_the_app_says_why_and_sends_the_text(workspace: Path) -> None:
    (workspace / "shot.png").write_bytes(png(4, 4))
    app = make_app(workspace, ["no"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "describe @shot.png")
        await turn_done(pilot)
        warnings = [e.text for e in main_screen(app).conversation.entries if isinstance(e, NoticeEntry)]
        assert f"@shot.png: {NO_IMAGES}" in warnings
        assert main_screen(app).runtime.sessions.history[0]["content"] == "describe @shot.png"


def test_a_resumed_attachment_message_with_an_image_is_its_line_again(workspace: Path) -> None:
    (workspace / "a.png").write_bytes(png(2, 3))
    (workspace / "b.txt").write_text("hello\n")
    _, content = attach(workspace, "@a.png @b.txt")
    entries = entries_from_history([{"role": "user", "content": content}])
    assert [(e.label, e.detail) for e in entries if isinstance(e, FoldEntry)] == [
        (f"{IMAGE_MARK} a.png", f"2×3 · {size_text(len(png(2, 3)))}"),
        ("@b.txt", "1 line"),
    ]


# --- a pasted path --------------------------------------------------------------------------


def test_what_a_pasted_path_is(workspace: Path, tmp_path: Path) -> None:
    (workspace / "shots").mkdir()
    (workspace / "shots" / "my shot.png").write_bytes(png(2, 2))
    (workspace / "notes.txt").write_text("x\n")
    (tmp_path / "outside.png").write_bytes(png(2, 2))
    full = workspace / "shots" / "my shot.png"
    for pasted in (str(full), f"'{full}'", str(full).replace(" ", "\\ "), f"file://{str(full).replace(' ', '%20')}\n"):
        assert pasted_image(pasted, workspace) == "shots/my shot.png", pasted
    assert pasted_image("shots/my shot.png", workspace) == "shots/my shot.png"  # relative: to the workspace
    assert pasted_image(str(tmp_path / "outside.png"), workspace) is None
    assert pasted_image(str(workspace / "gone.png"), workspace) is None
    assert pasted_image(str(full), workspace, hidden=lambda path: path.endswith(".png")) is None
    assert pasted_path(str(workspace / "notes.txt")) is None  # looks at no file: the name says it is no image
    assert pasted_path("two\nlines.png") is None and pasted_path("file://elsewhere/x.png") is None


async def test_a_pasted_image_path_becomes_an_attachment(workspace: Path) -> None:
    shot = png(320, 200)
    (workspace / "shot one.png").write_bytes(shot)
    app = make_app(workspace, ["a red card"], images=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app)
        await wait_until(pilot, lambda: screen.runtime is not None)
        prompt = screen.query_one("#prompt")
        prompt.focus()
        prompt.text = "what is this? "  # type: ignore[attr-defined]
        prompt.move_cursor((0, len("what is this? ")))  # type: ignore[attr-defined]
        app.post_message(events.Paste(str(workspace / "shot one.png")))  # as the terminal's driver does
        await wait_until(pilot, lambda: prompt.text == 'what is this? @"shot one.png" ')  # type: ignore[attr-defined]
        app.post_message(events.Paste("not a path"))  # any other paste goes in as it is
        await wait_until(pilot, lambda: prompt.text.endswith("not a path"))  # type: ignore[attr-defined]
        await pilot.press("enter")
        await turn_done(pilot)
        fold = next(e for e in screen.conversation.entries if isinstance(e, FoldEntry))
        assert fold.label == f"{IMAGE_MARK} shot one.png"
        assert urls(screen.runtime.sessions.history) == [f"data:image/png;base64,{b64(shot)}"]
