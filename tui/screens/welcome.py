"""Shown when no model is configured: how to set one up. Not an error."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Markdown

from todo_agent.core.settings import user_settings_path

WELCOME = """\
# Welcome to todo-agent

todo-agent is a terminal coding agent that **stays on plan**: the model keeps a task list,
you watch it in the panel, and nobody loses track.

**Just looking?** Run `todo-agent --demo`: a scripted session on a small demo project, with a
task list, an edit and a command that ask for your approval. Offline, no key needed.

No model is configured yet. Pick one, then start `todo-agent` again.

## OpenAI

```
export OPENAI_API_KEY=sk-...
todo-agent                    # default model gpt-4o-mini; or --model NAME
```

## A local server (any OpenAI-compatible endpoint with tool calls)

- **Ollama**: `ollama serve`, then
  `todo-agent --base-url http://localhost:11434/v1 --model qwen2.5-coder`
- **vLLM**: `vllm serve MODEL --enable-auto-tool-choice --tool-call-parser hermes`, then
  `todo-agent --base-url http://localhost:8000/v1 --model MODEL`
- **llama.cpp**: `llama-server -m model.gguf --jinja --port 8080`, then
  `todo-agent --base-url http://localhost:8080/v1`

`OPENAI_BASE_URL` and `TODO_AGENT_MODEL` work too, and so do `model` / `base_url` in
your user settings file, `{settings}`.
"""


def welcome_text(settings: Path | None = None) -> str:
    """The welcome page, naming the user settings file where this platform keeps it
    (`$XDG_CONFIG_HOME` on Linux, `~/Library/Application Support` on macOS, …)."""
    path = settings or user_settings_path()
    home = Path.home()
    shown = f"~/{path.relative_to(home).as_posix()}" if path.is_relative_to(home) else str(path)
    return WELCOME.replace("{settings}", shown)


class WelcomeScreen(Screen[None]):
    CSS_PATH = "welcome.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "app.quit", "Quit", tooltip="Quit todo-agent", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="welcome-body"):
            yield Markdown(welcome_text(), id="welcome-text")
        yield Footer()
