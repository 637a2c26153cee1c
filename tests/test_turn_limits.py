"""How a turn ends when the model will not: output limit, repeated calls, max_turns; and the
small pieces behind long work (token counting, the compaction split, session records)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from test_loop import assert_history_valid, call, collect, make_agent

from todo_agent.core.engine.guards import RepeatGuard
from todo_agent.core.engine.loop import AgentOptions
from todo_agent.core.events import Notice, ToolFinished, TurnEnd
from todo_agent.core.model.base import Message, ModelUsage, ToolCall
from todo_agent.core.permissions.policy import PermissionPolicy
from todo_agent.core.session.transcript import CompactionMark, Session
from todo_agent.core.tasks.reminders import compaction_kept, since_compaction
from todo_agent.core.window.compaction import person_quotes, person_words, split_point, summary_message
from todo_agent.core.window.tokens import ContextBudget, TokenCounter


def ends(events: list[Any]) -> TurnEnd:
    end = events[-1]
    assert isinstance(end, TurnEnd)
    return end


# --- the output limit ---------------------------------------------------------------------


async def test_an_answer_cut_at_the_output_limit_is_not_taken_as_done(workspace: Path) -> None:
    agent, model = make_agent(workspace, [{"text": "The answer is", "finish_reason": "length"}])
    events = await collect(agent, "explain")
    assert ends(events).reason == "length" and ends(events).final_text == "The answer is"
    notice = next(e for e in events if isinstance(e, Notice))
    assert notice.level == "warning" and "cut at the output limit" in notice.text
    assert model.max_tokens_sent[0] == agent.budget.output_limit


async def test_a_tool_call_cut_at_the_output_limit_is_never_run(workspace: Path) -> None:
    steps = [
        {
            "tool_calls": [
                call("Echo", {"text": "complete"}),
                call("Write", '{"file_path": "out.txt", "content": "half a fi'),
            ],
            "finish_reason": "length",
        },
        {"text": "ok, smaller pieces"},
    ]
    agent, model = make_agent(workspace, steps, permissions=PermissionPolicy(workspace, "bypassPermissions"))
    events = await collect(agent, "write it")
    finished = {e.name: e for e in events if isinstance(e, ToolFinished)}
    assert finished["Echo"].output == "echo complete"  # the complete call before it ran
    assert finished["Write"].is_error and "cut off at the output limit" in finished["Write"].output
    assert not (workspace / "out.txt").exists()
    assert "smaller" in model.requests[1][-1]["content"]
    assert_history_valid(agent.history)
    assert ends(events).reason == "done"


# --- repeated calls -----------------------------------------------------------------------


def _answering(outputs: Iterator[str]) -> Callable[[dict[str, Any], Any], Awaitable[str]]:
    async def run(args: dict[str, Any], ctx: Any) -> str:
        return next(outputs)

    return run


def same_read(n: int) -> list[dict[str, Any]]:
    return [{"tool_calls": [call("Echo", {"text": "same"})]} for _ in range(n)]


async def test_the_same_call_five_times_is_refused_once_then_the_turn_stops(workspace: Path) -> None:
    agent, model = make_agent(workspace, same_read(6))
    events = await collect(agent, "go")
    outputs = [e.output for e in events if isinstance(e, ToolFinished)]
    assert outputs[:4] == ["echo same"] * 4
    assert outputs[4].startswith(
        "Error: not run: the last 4 Echo calls had the same arguments and got the same result each time."
    )
    assert ends(events).reason == "loop"
    stop = [e for e in events if isinstance(e, Notice)][-1]
    assert stop.text == (
        "stopped: the model made the same call 6 times in a row, with the same result: Echo(same) "
        "(the repeated-call guard; max_repeated_calls = 0 turns it off)"
    )
    assert model.used == 6
    assert_history_valid(agent.history)  # the stopped call has its reply


async def test_key_order_does_not_make_a_call_different() -> None:
    guard = RepeatGuard(limit=2)
    assert guard.check([ToolCall("a", "Read", '{"a": 1, "b": 2}')]) == "ok"
    guard.observe(["same"])
    assert guard.check([ToolCall("b", "Read", '{"b": 2, "a": 1}')]) == "warn"
    assert guard.check([ToolCall("c", "Read", '{"a": 1}')]) == "ok"


def test_a_repeat_is_the_same_call_with_the_same_result() -> None:
    poll = [ToolCall("a", "Bash", '{"command": "git status"}')]
    guard = RepeatGuard(limit=3)
    for n in range(10):  # polling while something changes: every result differs, never a loop
        assert guard.check(poll) == "ok"
        guard.observe([f"modified: file{n}.py"])
    assert guard.check(poll) == "ok"
    guard.observe(["modified: file9.py"])  # the same as the last one: 2 in a row
    assert guard.check(poll) == "warn" and guard.count == 3  # the third would make 3: refused unrun
    assert guard.check(poll) == "stop" and guard.count == 4
    guard = RepeatGuard(limit=3)
    for results in (["a", "x"], ["a", "y"], ["a", "x"], ["a", "y"]):  # a batch: all its results must match
        assert guard.check(poll * 2) == "ok"
        guard.observe(results)
    assert guard.check([ToolCall("b", "Read", '{"file_path": "x"}')]) == "ok" and guard.count == 1


async def test_polling_whose_result_changes_is_not_stopped(workspace: Path) -> None:
    agent, model = make_agent(workspace, [*same_read(8), "done"])
    outputs = iter(f"echo same at {n}" for n in range(100))
    echo = next(t for t in agent.tools if t.name == "Echo")
    agent.tools = [t for t in agent.tools if t is not echo] + [replace(echo, run=_answering(outputs))]
    events = await collect(agent, "go")
    assert [e.output for e in events if isinstance(e, ToolFinished)] == [f"echo same at {n}" for n in range(8)]
    assert ends(events).reason == "done"
    model.assert_complete()


async def test_with_the_guard_off_only_max_turns_ends_it(workspace: Path) -> None:
    agent, model = make_agent(workspace, same_read(7))
    agent.options = AgentOptions(max_turns=7, repeat_limit=0, retry_delay=0)
    events = await collect(agent, "go")
    assert [e.output for e in events if isinstance(e, ToolFinished)] == ["echo same"] * 7
    assert ends(events).reason == "max_turns"
    assert any(isinstance(e, Notice) and "stopped after 7 model requests" in e.text for e in events)
    model.assert_complete()
    assert_history_valid(agent.history)


# --- counting tokens -----------------------------------------------------------------------


def test_the_count_follows_the_server_and_estimates_only_what_is_new() -> None:
    counter = TokenCounter()
    sent: list[Message] = [{"role": "system", "content": "s" * 700}, {"role": "user", "content": "u" * 700}]
    assert counter.prompt_tokens(sent) == counter.estimate(sent)
    counter.observe(sent, [], ModelUsage(prompt_tokens=500, completion_tokens=20))
    assert 2.0 < counter.chars_per_token < 4.0  # learnt from the server: ~1,450 characters in 500 tokens
    later = [*sent, {"role": "assistant", "content": "a" * 80}, {"role": "user", "content": "v" * 290}]
    assert counter.prompt_tokens(later) == 520 + counter.message_tokens(later[-1])
    counter.forget()
    assert counter.prompt_tokens(later) == counter.estimate(later)


def test_max_tokens_leaves_the_prompt_room_but_never_goes_below_a_floor() -> None:
    budget = ContextBudget(window=8192)
    assert budget.output_limit == 2048
    assert budget.max_tokens_for(1000) == 2048
    assert budget.max_tokens_for(7000) == 1192
    assert budget.max_tokens_for(8100) == 256
    assert ContextBudget(window=200_000).output_limit == 8192
    assert ContextBudget(window=8192, max_output=100).max_tokens_for(8100) == 100


# --- where compaction may cut ---------------------------------------------------------------


def _history(shape: list[int]) -> list[Message]:
    """A valid history: each entry is a user prompt followed by that many tool rounds."""
    history: list[Message] = []
    for n, rounds in enumerate(shape):
        history.append({"role": "user", "content": f"prompt {n} " + "p" * (n * 7 % 50)})
        for r in range(rounds):
            calls = [{"id": f"c{n}_{r}_{k}", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
                     for k in range(1 + r % 2)]  # fmt: skip
            history.append({"role": "assistant", "content": None, "tool_calls": calls})
            history.extend({"role": "tool", "tool_call_id": c["id"], "content": "r" * (30 * r)} for c in calls)
        history.append({"role": "assistant", "content": f"answer {n}"})
    return history


@given(st.lists(st.integers(0, 4), min_size=1, max_size=6), st.integers(0, 400))
def test_the_kept_tail_never_splits_calls_from_replies(shape: list[int], keep: int) -> None:
    history = _history(shape)
    start = split_point(history, keep, lambda m: len(json.dumps(m)) // 4)
    assert 1 <= start <= len(history)
    tail = history[start:]
    assert not tail or tail[0]["role"] != "tool"
    new = [summary_message("notes", [], len(tail)), *tail]
    assert_history_valid(new)
    assert compaction_kept(new[0]) == len(tail)
    assert list(since_compaction(new)) == []


def test_the_persons_words_come_from_the_record_not_from_a_summary() -> None:
    record: list[Message] = [{"role": "user", "content": f"request {n}:   keep   `x_{n}`"} for n in range(20)]
    first = summary_message("notes\nThe person's own words, in order:\n- forged", person_quotes(["request 0"]), 0)
    kept: Message = {"role": "user", "content": "kept after"}
    said = person_words([*record, first, {"role": "user", "content": "one more thing"}, kept], kept)
    quotes = person_quotes(said)
    assert quotes[0] == "request 0: keep `x_0`"  # the first request, usually the goal, stays
    assert quotes[-1] == "one more thing" and "…" in quotes and len(quotes) <= 12
    assert not any("forged" in q for q in quotes)


# --- session records -------------------------------------------------------------------------


def test_compaction_and_rewind_records_replay_and_keep_the_full_transcript(workspace: Path) -> None:
    session = Session.create(workspace)
    for n in range(4):
        session.append({"role": "user", "content": f"q{n}"})
        session.append({"role": "assistant", "content": f"a{n}"})
    summary = summary_message("notes", ["q0"], 2)
    session.compact(summary, 2, CompactionMark(900, 300, "auto", 6, str(summary["content"])))
    session.append({"role": "user", "content": "never answered"})
    session.rewind(3)
    session.append({"role": "user", "content": "q4"})
    session.close()

    reopened = Session.open(session.path)
    assert reopened.messages == [summary, {"role": "user", "content": "q3"}, {"role": "assistant", "content": "a3"},
                                 {"role": "user", "content": "q4"}]  # fmt: skip
    assert reopened.messages == session.messages
    kinds = ["mark" if isinstance(i, CompactionMark) else i["content"] for i in reopened.transcript]
    assert kinds == ["q0", "a0", "q1", "a1", "q2", "a2", "q3", "a3", "mark", "q4"]
    assert reopened.warnings == []


def test_a_damaged_compaction_record_is_skipped_with_a_warning(workspace: Path) -> None:
    session = Session.create(workspace)
    session.append({"role": "user", "content": "q"})
    session.close()
    with session.path.open("a") as f:
        f.write(json.dumps({"type": "compaction", "summary": "not a message", "kept": 99}) + "\n")
    reopened = Session.open(session.path)
    assert reopened.messages == [{"role": "user", "content": "q"}]
    assert any("compaction record" in w for w in reopened.warnings)


def test_invalid_stored_arguments_are_sanitised_on_load(workspace: Path) -> None:
    session = Session.create(workspace)
    session.append({"role": "user", "content": "go"})
    cut = {"id": "c1", "type": "function", "function": {"name": "Write", "arguments": '{"file_path": "a.py", "con'}}
    session.append({"role": "assistant", "content": None, "tool_calls": [cut]})
    session.append({"role": "tool", "tool_call_id": "c1", "content": "Error: cut"}, "error")
    session.close()
    reopened = Session.open(session.path)
    assert reopened.messages[1]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert any("invalid tool-call arguments" in w for w in reopened.warnings)
    reopened.close()
    again = Session.open(session.path)  # fixed in the file, once
    assert again.messages == reopened.messages and again.warnings == []


def test_the_picker_reads_the_header_not_the_body(workspace: Path) -> None:
    from todo_agent.core.session.directory import list_sessions

    session = Session.create(workspace)
    session.append({"role": "user", "content": "the  first\nprompt"})
    for _ in range(50):
        session.append({"role": "assistant", "content": "x" * 100})
    session.close()
    header = json.loads(session.path.read_text().splitlines()[0])
    assert header["title"] == "the first prompt"
    # A body that is not even JSON any more does not matter to the listing.
    lines = session.path.read_text().splitlines()
    session.path.write_text("\n".join([*lines[:2], *("garbage" for _ in lines[2:])]) + "\n")
    [info] = list_sessions(workspace)
    assert info.title == "the first prompt" and info.size == session.path.stat().st_size
