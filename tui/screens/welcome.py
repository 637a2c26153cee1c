"""Shown when no model is configured: how to set one up. Not an error."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Markdown

WELCOME = """\
# Welcome to todo-agent

todo-agent is a terminal coding agent that **stays on plan**: the model keeps a task list,
you watch it in the panel, and nobody loses track.

No model is configured yet. Pick one, then start `todo-agent` again.

## OpenAI

```
export OPENAI_API_KEY=sk-...
todo-agent                    # or: todo-agent --model gpt-4.1
```

## A local server (any OpenAI-compatible endpoint)

| Server | Start it | Then |
|---|---|---|
| Ollama | `ollama serve` | `todo-agent --base-url http://localhost:11434/v1 --model qwen2.5-coder` |
| vLLM | `vllm serve MODEL` | `todo-agent --base-url http://localhost:8000/v1 --model MODEL` |
| llama.cpp | `llama-server -m model.gguf --port 8080` | `todo-agent --base-url http://localhost:8080/v1` |

`OPENAI_BASE_URL` and `TODO_AGENT_MODEL` work too, and so do `model` / `base_url` in
`.todo-agent/settings.toml`.

## Just looking?

```
todo-agent --demo
```

runs a scripted session on a small demo project: a real multi-step run with tasks, an
edit and a command that asks for your approval. It works offline, with no key.
"""


class WelcomeScreen(Screen[None]):
    CSS_PATH = "welcome.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "app.quit", "Quit", tooltip="Quit todo-agent", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="welcome-body"):
            yield Markdown(WELCOME, id="welcome-text")
        yield Footer()
