"""A long session in the real app: resume time, mounted widgets, scroll step, input echo.

Usage: python benchmarks/long_session.py [--exchanges 150]
Builds a session of N exchanges (a prompt, a Markdown answer with a list and code, and
a Read tool call with its result), resumes it with --continue semantics in the real
app (headless, 120x36), and reports:
- resume: from app start until the conversation is mounted,
- widgets: how many widgets are mounted afterwards (the same with any history),
- scroll: median time of one page-up step, including the repaint,
- input: median time for a typed key to reach the prompt while the app is idle.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from history import build_session

from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.settings import Config
from todo_agent.tui.app import TodoAgentApp

ANSWER = """Here is what I found in `module_{n}.py`:

- the loader reads **every** file twice
- `parse()` ignores errors

```python
def parse(text):
    return [line.split(",") for line in text.splitlines()]
```
"""


async def measure(exchanges: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        build_session(workspace, exchanges, ANSWER)
        config = Config(workspace=workspace, model="script:bench")
        started = time.perf_counter()
        app = TodoAgentApp.for_config(config, continue_latest=True, model=ScriptedModel([]), animations=False)
        async with app.run_test(size=(120, 36)) as pilot:
            prompt = app.screen.query_one("#prompt")
            conversation = app.screen.query_one("#conversation")
            while not getattr(conversation, "entries", None):
                await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            resume = time.perf_counter() - started
            widgets = len(list(app.screen.query("*")))
            scroll = []
            for _ in range(20):
                t = time.perf_counter()
                await pilot.press("pageup")
                await pilot.pause()
                scroll.append(time.perf_counter() - t)
            prompt.focus()
            typing = []
            for ch in "hello world":
                t = time.perf_counter()
                await pilot.press(ch)
                await pilot.pause()
                typing.append(time.perf_counter() - t)
    messages = exchanges * 4
    print(
        f"{exchanges} exchanges ({messages} messages): resume {resume * 1000:.0f} ms, {widgets} widgets mounted, "
        f"scroll step {statistics.median(scroll) * 1000:.0f} ms, key echo {statistics.median(typing) * 1000:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exchanges", type=int, default=150)
    args = parser.parse_args()
    asyncio.run(measure(args.exchanges))


if __name__ == "__main__":
    main()
