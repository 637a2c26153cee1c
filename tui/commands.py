"""Slash commands and keys: the one table the prompt completion, `/help` and the palette read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SlashCommand:
    name: str
    """With the slash: `/todos`."""
    description: str
    usage: str = ""
    """Arguments, e.g. `[MODE]`; empty when it takes none."""
    source: str = ""
    """For the person's own commands, the file it comes from (`.claude/commands/review.md`)."""


SLASH_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("/todos", "Print the task list and each task's files; `history`: every version", "[history]"),
    SlashCommand("/new", "Start a new session with an empty task list"),
    SlashCommand("/resume", "Pick an earlier session to resume"),
    SlashCommand("/rewind", "Go back to before an earlier prompt: conversation, files or both (esc esc too)"),
    SlashCommand("/redo", "Undo the latest /rewind (until the next prompt)"),
    SlashCommand("/export", "Export the session (.md, .html or .json by FILE's name; none: clipboard too)", "[FILE]"),
    SlashCommand("/context", "What the next request holds: each part's tokens, the plan's cost, the room left"),
    SlashCommand("/compact", "Summarise older messages to free context", "[FOCUS]"),
    SlashCommand("/shells", "Background commands: see their output, stop one"),
    SlashCommand("/sandbox", "Show the sandbox, or switch it for this session", "[on|off|auto|read-only]"),
    SlashCommand("/goal", "Work until every task is completed and every check passes (no text: the list)", "[TEXT]"),
    SlashCommand("/mode", "Cycle the permission mode, or set one by name", "[MODE]"),
    SlashCommand("/model", "Show the model, or switch to another", "[NAME]"),
    SlashCommand("/effort", "Show or set how hard a reasoning model thinks", "[LEVEL]"),
    SlashCommand("/mcp", "MCP servers; reconnect, enable or disable NAME; trust", "[ACTION NAME]"),
    SlashCommand("/help", "Show commands and keys"),
    SlashCommand("/quit", "Quit todo-agent"),
)


def complete(text: str, custom: Sequence[SlashCommand] = ()) -> list[SlashCommand]:
    """Commands the prompt text could be the start of (only while it is one word): the
    built-in ones, then the person's own (`custom`)."""
    if not text.startswith("/") or any(c.isspace() for c in text):
        return []
    return [c for c in (*SLASH_COMMANDS, *custom) if c.name.startswith(text)]


def parse(text: str) -> tuple[SlashCommand, str] | None:
    """`("/mode", "plan")` for `/mode plan`; None if `text` is not a known command.

    A command that takes no argument followed by more text is a prompt, not a command:
    `/quit the retry loop after 3 attempts` must reach the model, not close the app.
    """
    name, _, argument = text.strip().partition(" ")
    argument = argument.strip()
    for command in SLASH_COMMANDS:
        if command.name == name and (command.usage or not argument):
            return command, argument
    return None


def looks_like_command(text: str) -> bool:
    """Whether `text` that `parse` does not know is a mistyped command rather than a prompt.

    Only a lone slash word (`/compact`, `/hlep`) is: a prompt can start with a path
    (`/tmp is full, please clean it`), and a path alone (`/usr/lib`) has a second slash.
    """
    word = text.strip()
    return word.startswith("/") and len(word) > 1 and "/" not in word[1:] and not any(c.isspace() for c in word)


KEYS: tuple[tuple[str, str], ...] = (
    ("enter", "send the prompt"),
    ("shift+enter, ctrl+j", "new line"),
    ("up, down", "earlier prompts"),
    ("tab", "complete a /command or @file"),
    ("@", "attach a file or folder (@path, @path:10-40)"),
    ("!", "run a shell command yourself (!git status)"),
    ("pageup, pagedown", "scroll the conversation"),
    ("escape", "interrupt (elsewhere: back to the prompt)"),
    ("escape twice", "on an empty prompt with nothing running: /rewind"),
    ("shift+tab", "cycle the permission mode"),
    ("ctrl+t", "show or hide the task panel"),
    ("ctrl+o", "show or hide the last tool output"),
    ("ctrl+p", "command palette"),
    ("ctrl+c twice, ctrl+q", "quit"),
)
PANEL_KEYS = (
    "a add · e edit · v check · b budget · space/x tick · d delete · shift+up/K, shift+down/J move · "
    "enter what it changed · r rewind its files · u undo your last change"
)


def help_text(custom: Sequence[SlashCommand] = ()) -> str:
    rows = [(f"{c.name} {c.usage}".strip(), c.description) for c in SLASH_COMMANDS]
    own = [(f"{c.name} {c.usage}".strip(), f"{c.description}  ({c.source})".strip()) for c in custom]
    width = max(len(key) for key, _ in (*rows, *own, *KEYS)) + 2
    lines = ["Commands", *(f"  {key:<{width}}{text}" for key, text in rows)]
    if own:
        lines += ["Your commands", *(f"  {key:<{width}}{text}" for key, text in own)]
    lines += ["Keys", *(f"  {key:<{width}}{text}" for key, text in KEYS)]
    lines += ["Task panel (focus it with tab or a click)", f"  {PANEL_KEYS}"]
    return "\n".join(lines)
