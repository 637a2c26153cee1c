"""Agent types: the built-in `general` and `explore`, and agent files.

An agent file is Markdown with front matter (Claude Code's format, so its files carry over):
`name`, `description`, `tools` (a list or comma-separated; absent: every tool), `model`
(absent, `inherit` or one of Claude Code's aliases `sonnet`, `opus`, `haiku`: the session's
model; any other name is asked of the same server); the body is the system prompt. They are read from,
first found wins: the project's `.todo-agent/agents/*.md` and `.claude/agents/*.md`, then the
user's `<config dir>/todo-agent/agents/*.md` and `~/.claude/agents/*.md`.

A project's files came with the repository, so they narrow and never widen: a project
agent cannot replace a built-in type, `tools` can only pick from the tools there are (each
call is still asked about exactly as the main agent's), `model` cannot be a `script:`, and
keys that would change permissions or run commands (`permissionMode`, `hooks`) are ignored
with a warning, wherever the file is. Every sub-agent gets the task tools, whatever `tools`
says: they only touch the plan, and it needs them to mark its task done.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..repo_files import RepoFileError, read_repo_text
from .frontmatter import FrontMatterError, Value, split

_PKG = "todo_agent.core.agents"
READ_ONLY_TOOLS = ("Read", "Glob", "Grep")
TASK_TOOLS = ("TaskCreate", "TaskUpdate", "TaskList", "TaskGet")
SESSION_MODEL = ("inherit", "sonnet", "opus", "haiku")
"""`model` values that mean the session's model: Claude Code's aliases name its models, which
an OpenAI-compatible server does not serve (sent as names, they fail with 404)."""
IGNORED_KEYS = ("permissionMode", "hooks")
"""Front-matter keys that would widen what a sub-agent may do: never applied."""
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
MAX_PROMPT_CHARS = 20_000
MAX_FILE_BYTES = 256_000
"""An agent file past this is ignored with a warning (as a command file is)."""


@dataclass(frozen=True)
class AgentType:
    name: str
    description: str
    prompt: str
    """The system prompt's own part (the body of its file)."""
    tools: tuple[str, ...] | None = None
    """The tools it may use besides the task tools; None: all the main agent has (but Agent)."""
    model: str | None = None
    """None: the session's model."""
    source: str = "built-in"
    """`built-in`, or the file it came from."""


def _builtin(name: str, description: str, tools: tuple[str, ...] | None) -> AgentType:
    prompt = resources.files(_PKG).joinpath(f"{name}.md").read_text(encoding="utf-8").strip()
    return AgentType(name, description, prompt, tools)


def built_in() -> dict[str, AgentType]:
    return {
        "general": _builtin(
            "general", "Does one piece of work end to end: reads, edits, runs commands and checks.", None
        ),
        "explore": _builtin(
            "explore", "Read-only: finds and reads code to answer a question; changes nothing.", READ_ONLY_TOOLS
        ),
    }


def agent_dirs(workspace: Path, user_config: Path, home: Path) -> list[tuple[Path, bool]]:
    """Where agent files are looked for, first found wins: (directory, from the project)."""
    return [
        (workspace / ".todo-agent" / "agents", True),
        (workspace / ".claude" / "agents", True),
        (user_config / "agents", False),
        (home / ".claude" / "agents", False),
    ]


def load_types(workspace: Path, user_config: Path, home: Path) -> tuple[dict[str, AgentType], list[str]]:
    """Every agent type (built-ins first) and a warning per file or key not used."""
    types = built_in()
    from_files: set[str] = set()
    warnings: list[str] = []
    for directory, project in agent_dirs(workspace, user_config, home):
        try:
            # Not only regular files: a FIFO or a link to a device is refused with a notice.
            files = sorted(p for p in directory.glob("*.md") if not p.is_dir())
        except OSError:
            continue
        for path in files:
            found, problems = read_agent_file(path, project=project)
            warnings += problems
            if found is None or found.name in from_files:
                continue  # an earlier directory's file of that name wins
            if found.name in types and project:
                warnings.append(f"{path}: a project agent cannot replace the built-in '{found.name}'; ignored")
                continue
            types[found.name] = found
            from_files.add(found.name)
    return types, warnings


def read_agent_file(path: Path, *, project: bool) -> tuple[AgentType | None, list[str]]:
    try:
        text = read_repo_text(path, MAX_FILE_BYTES)
    except RepoFileError as exc:
        return None, [f"{path}: this agent file cannot be used: {exc}; ignored"]
    if text is None:  # removed since the directory was listed
        return None, []
    try:
        keys, body = split(text)
    except FrontMatterError as exc:
        return None, [f"{path}: {exc}; ignored"]
    warnings = [
        f"{path}: '{key}' ignored: a sub-agent is gated like the main agent" for key in IGNORED_KEYS if key in keys
    ]
    name = _text(keys.get("name")) or path.stem
    name = name.strip().lower()
    if not _NAME.fullmatch(name):
        return None, [*warnings, f"{path}: the name {name[:40]!r} is not lowercase letters, digits and '-'; ignored"]
    if not body:
        return None, [*warnings, f"{path}: the file has no system prompt (its body is empty); ignored"]
    model = _text(keys.get("model")).strip() or None
    if model is not None and model.lower() in SESSION_MODEL:
        model = None
    if model is not None and model.startswith("script:"):
        warnings.append(f"{path}: a script: model ignored (use --model)")
        model = None
    where = "project" if project else "user"
    return (
        AgentType(
            name,
            " ".join(_text(keys.get("description")).split()) or "(no description)",
            body[:MAX_PROMPT_CHARS],
            _tools(keys.get("tools")),
            model,
            f"{where}: {path}",
        ),
        warnings,
    )


def _text(value: Value | None) -> str:
    if isinstance(value, list):
        return ", ".join(value)
    return value or ""


def _tools(value: Value | None) -> tuple[str, ...] | None:
    """The `tools` key: None (every tool) when absent or `*`."""
    names = [n.strip() for n in (value if isinstance(value, list) else re.split(r"[\s,]+", value or ""))]
    names = [n for n in names if n]
    if value is None or names == ["*"]:
        return None
    return tuple(dict.fromkeys(names))


def describe(types: dict[str, AgentType]) -> str:
    """The list the `Agent` tool's description carries: `- name: what it is for`."""
    return "\n".join(f"  - `{t.name}`: {t.description[:300]}" for t in types.values())
