"""Long work in the real app: /compact, overflow recovery against a real HTTP server,
the status line after a resume, the output limit, and what the server says about itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAIServer
from test_tui_app import notices
from tui_helpers import SIZE, main_screen, make_app, screen_text, send, turn_done, wait_until

from todo_agent.core.runtime import NO_TOOLS_TEMPLATE
from todo_agent.core.session.transcript import Session
from todo_agent.core.settings import Config
from todo_agent.tui.app import TodoAgentApp
from todo_agent.tui.transcript import AssistantEntry, NoticeEntry
from todo_agent.tui.widgets.status import context_label

SUMMARY = "## Goal\nAdd a --verbose flag.\n## Remaining\nDocument it."


def status_text(app: TodoAgentApp, part: str) -> str:
    return str(main_screen(app).status.query_one(f"#status-{part}").render())


async def test_compact_in_the_app_shows_tokens_before_and_after(workspace: Path) -> None:
    long = " ".join(f"detail {n} of the plan," for n in range(300))
    app = make_app(workspace, [f"First answer. {long}", f"Second answer. {long}", SUMMARY])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "add a --verbose flag to cli.py")
        await turn_done(pilot)
        await send(pilot, "and document it")
        await turn_done(pilot)
        runtime = main_screen(app).runtime
        before = runtime.turn.context_usage()[0]
        await send(pilot, "/compact keep the flag name")
        await wait_until(pilot, lambda: any(n.startswith("compacted the conversation") for n in notices(app)), limit=30)
        await turn_done(pilot)
        notice = next(n for n in notices(app) if n.startswith("compacted the conversation"))
        after = runtime.turn.context_usage()[0]
        assert f"(/compact): {before:,} → {after:,} tokens" in notice
        assert after < before
        assert str(runtime.sessions.history[0]["content"]).startswith(
            "<system-reminder>\nThis conversation was compacted"
        )
        assert status_text(app, "context") == context_label(after, runtime.budget.window)
        summary_request = app.runtime.model.get().requests[-1]  # type: ignore[union-attr, attr-defined]
        assert "keep the flag name" in summary_request[-1]["content"]


async def test_compact_that_fails_leaves_history_untouched(workspace: Path) -> None:
    app = make_app(workspace, ["First answer.", {"error": "server", "message": "server error (HTTP 500): boom"}])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        await turn_done(pilot)
        runtime = main_screen(app).runtime
        history = [dict(m) for m in runtime.sessions.history]
        await send(pilot, "/compact")
        await wait_until(pilot, lambda: any("could not compact" in n for n in notices(app)), limit=30)
        await turn_done(pilot)
        assert runtime.sessions.history == history
        assert any("HTTP 500" in n and "unchanged" in n for n in notices(app))


async def test_compact_is_in_the_palette(workspace: Path) -> None:
    from todo_agent.tui.palette import palette_entries

    app = make_app(workspace, [])
    async with app.run_test(size=SIZE):
        titles = [e.title for e in palette_entries(main_screen(app))]
        assert any(t.startswith("/compact") for t in titles)


@pytest.mark.parametrize("shape", ["openai", "llama"])
async def test_an_overflow_in_the_app_compacts_and_retries(workspace: Path, shape: str) -> None:
    (workspace / "big.txt").write_text("a line of a big file that fills the window\n" * 280)  # ~12k chars
    responses = [
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "big.txt"}}]},
        {"text": "Read it after compacting."},
    ]
    async with FakeOpenAIServer(
        responses, context_limit=6500, overflow_shape=shape, without_tools={"text": SUMMARY}
    ) as server:
        config = Config(workspace=workspace, model="fake-model", base_url=server.base_url, api_key="sk-test")
        app = TodoAgentApp.for_config(config, animations=False)
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "read big.txt")
            await wait_until(pilot, lambda: AssistantEntry("Read it after compacting.") in entries(app), limit=30)
            await turn_done(pilot)
            texts = notices(app)
    assert server.refused == 1
    assert any(t.startswith("compacted the conversation (the server refused it as too long)") for t in texts)
    assert not any("does not fit" in t for t in texts)
    if shape == "llama":  # llama.cpp names its window; OpenAI's words do too
        assert any("6,500 tokens" in t for t in texts)


def entries(app: TodoAgentApp) -> list[Any]:
    return list(main_screen(app).conversation.entries)


async def test_the_status_line_shows_a_resumed_sessions_size(workspace: Path) -> None:
    session = Session.create(workspace)
    for n in range(5):
        session.append({"role": "user", "content": f"question {n} " + "x" * 400})
        session.append({"role": "assistant", "content": f"answer {n} " + "y" * 400})
    session.close()
    app = make_app(workspace, [], continue_latest=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        used, window = main_screen(app).runtime.turn.context_usage()
        assert used > 1000
        assert status_text(app, "context") == context_label(used, window)
        assert "0 tokens" not in screen_text(app)


async def test_an_answer_cut_at_the_output_limit_is_said(workspace: Path) -> None:
    app = make_app(workspace, [{"text": "The three steps are: first", "finish_reason": "length"}])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "explain")
        await turn_done(pilot)
        assert AssistantEntry("The three steps are: first") in entries(app)
        cut = [e for e in entries(app) if isinstance(e, NoticeEntry) and "cut at the output limit" in e.text]
        assert cut and cut[0].level == "warning"


async def test_the_servers_own_model_window_and_template_are_used(workspace: Path) -> None:
    props = {"default_generation_settings": {"n_ctx": 16384}, "chat_template_caps": {"supports_tool_calls": False}}
    answer = [{"text": "hello from the real model"}]
    async with FakeOpenAIServer(answer, models=["qwen2.5-coder-7b"], props=props) as server:
        config = Config(workspace=workspace, base_url=server.base_url)  # no model chosen
        app = TodoAgentApp.for_config(config, animations=False)
        async with app.run_test(size=SIZE) as pilot:
            screen = main_screen(app)
            await wait_until(pilot, lambda: status_text(app, "model") == "qwen2.5-coder-7b")
            assert screen.runtime.budget.window == 16384
            assert status_text(app, "context").endswith("/16k (0%)")
            assert NO_TOOLS_TEMPLATE in notices(app)
            assert "context window 16,384 tokens (from the server)" in notices(app)
            await send(pilot, "hi")
            await turn_done(pilot)
            assert AssistantEntry("hello from the real model") in entries(app)
    assert server.requests[0]["model"] == "qwen2.5-coder-7b"  # not gpt-4o-mini (that would be a 404 here)


async def test_a_resumed_compacted_session_shows_the_marker_and_the_same_list(workspace: Path) -> None:
    long = " ".join(f"step {n} of the plan," for n in range(300))
    steps: list[Any] = [
        {"tool_calls": [{"name": "TaskCreate", "arguments": {"subject": s}} for s in ("read", "edit")]},
        {"tool_calls": [{"name": "TaskUpdate", "arguments": {"taskId": "1", "status": "completed"}}]},
        f"Read it. {long}",
        SUMMARY,
    ]
    first = make_app(workspace, steps)
    async with first.run_test(size=SIZE) as pilot:
        await send(pilot, "plan it")
        await turn_done(pilot)
        await send(pilot, "/compact")
        await wait_until(
            pilot, lambda: any(n.startswith("compacted the conversation") for n in notices(first)), limit=30
        )
        await turn_done(pilot)
        before = [(t.id, t.subject, t.status) for t in main_screen(first).panel.tasks]
        main_screen(first).runtime.session.close()  # as quitting does: the session is free to resume
    assert before == [("1", "read", "completed"), ("2", "edit", "pending")]

    resumed = make_app(workspace, [], continue_latest=True)
    async with resumed.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = main_screen(resumed)
        assert [(t.id, t.subject, t.status) for t in screen.panel.tasks] == before
        assert any(n.startswith("compacted here:") for n in notices(resumed))
        assert str(screen.runtime.sessions.history[0]["content"]).startswith(
            "<system-reminder>\nThis conversation was compacted"
        )


async def test_a_busy_server_is_waited_out_counting_down_and_esc_stops_the_wait(workspace: Path) -> None:
    busy = {"http_error": 503, "message": "Loading model", "headers": {"retry-after": "30"}}
    async with FakeOpenAIServer([busy], retry_after_ms=None) as server:
        config = Config(workspace=workspace, model="fake-model", base_url=server.base_url, api_key="sk-test")
        app = TodoAgentApp.for_config(config, animations=False)  # the countdown moves all the same
        async with app.run_test(size=SIZE) as pilot:
            status = main_screen(app).status
            now = [1000.0]
            status.clock = lambda: now[0]  # type: ignore[method-assign]
            await send(pilot, "hi")
            waiting = "server busy (503) — retrying in 30 s (1 of 6)"
            await wait_until(pilot, lambda: status_text(app, "activity").startswith(waiting))
            assert "server busy (HTTP 503): Loading model — retrying in 30 s (1 of 6)" in notices(app)
            now[0] += 12.2
            later = "server busy (503) — retrying in 18 s (1 of 6)"
            await wait_until(pilot, lambda: status_text(app, "activity").startswith(later))  # the next tick
            await pilot.press("escape")
            await wait_until(pilot, lambda: not main_screen(app).busy, limit=10)  # at once, not in 18 s
            await pilot.pause()
            assert status_text(app, "activity").startswith("ready")
            assert "interrupted: the rest of this turn was cancelled" in notices(app)
    assert len(server.requests) == 1
