"""The long session both benchmarks resume: N exchanges of a prompt, a Read call with its
result, and a Markdown answer (`answer`, formatted with the exchange's number `n`)."""

from __future__ import annotations

from pathlib import Path


def build_session(workspace: Path, exchanges: int, answer: str, root: Path | None = None) -> None:
    from todo_agent.core.session.transcript import Session

    session = Session.create(workspace, root=root)
    for n in range(exchanges):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "m.py"}'}}
        session.append({"role": "user", "content": f"Look at module {n} and tell me what is wrong"})
        session.append({"role": "assistant", "content": None, "tool_calls": [call]})
        session.append({"role": "tool", "tool_call_id": f"c{n}", "content": "     1\tdef parse(text):\n" * 30})
        session.append({"role": "assistant", "content": answer.format(n=n)})
    session.close()
