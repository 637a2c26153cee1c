from __future__ import annotations

from pathlib import Path

from todo_agent.core.instructions import build_system_context, describe_loaded, find_instruction_files
from todo_agent.core.settings import load_config, user_settings_path


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_precedence_flags_env_project_user(workspace: Path) -> None:
    write(user_settings_path(), 'model = "user-model"\nreminder_interval = 3\n[ui]\ntask_panel = "bottom"\n')
    write(workspace / ".todo-agent/settings.toml", 'model = "project-model"\n[permissions]\nallow = ["Bash(ls)"]\n')
    config = load_config(workspace, env={})
    assert config.model == "project-model" and config.reminder_interval == 3 and config.task_panel == "bottom"
    assert config.allow == ["Bash(ls)"] and not config.has_model
    config = load_config(workspace, env={"TODO_AGENT_MODEL": "env-model", "OPENAI_API_KEY": "k"})
    assert config.model == "env-model" and config.has_model and config.api_key == "k"
    config = load_config(workspace, flags={"model": "flag-model", "tasks": None}, env={"TODO_AGENT_MODEL": "e"})
    assert config.model == "flag-model"


def test_tasks_default_differs_between_tui_and_headless(workspace: Path) -> None:
    assert load_config(workspace, env={}).tasks_version == "v2"
    assert load_config(workspace, env={}, headless=True).tasks_version == "v1"
    assert load_config(workspace, env={}, headless=True, flags={"tasks": "v2"}).tasks_version == "v2"


def test_broken_settings_are_reported_with_path_and_line_and_ignored(workspace: Path) -> None:
    path = workspace / ".todo-agent/settings.toml"
    write(path, 'model = "ok"\nreminder_interval = \n')
    config = load_config(workspace, env={})
    assert config.model != "ok"
    assert len(config.warnings) == 1 and str(path) in config.warnings[0] and "line 2" in config.warnings[0]


def test_wrong_types_and_unknown_keys_are_named(workspace: Path) -> None:
    write(workspace / ".todo-agent/settings.toml", 'reminder_interval = "six"\ncolour = 1\n')
    warning = load_config(workspace, env={}).warnings[0]
    assert "'reminder_interval' must be int" in warning and "unknown key 'colour'" in warning
    write(workspace / ".todo-agent/settings.toml", '[permissions]\nallow = ["rm -rf"]\n')
    assert "not a permission rule" in load_config(workspace, env={}).warnings[0]


def test_instruction_files_from_repo_root_down(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    sub = repo / "pkg" / "sub"
    sub.mkdir(parents=True)
    (repo / ".git").mkdir()
    write(repo / "AGENTS.md", "root rules")
    write(sub / "CLAUDE.md", "sub rules")
    write(tmp_path / "AGENTS.md", "outside the repo: never read")
    assert find_instruction_files(sub) == [repo / "AGENTS.md", sub / "CLAUDE.md"]
    context = build_system_context(sub, "Use the task tools.")
    assert context.prompt.index("root rules") < context.prompt.index("sub rules")
    assert "never read" not in context.prompt and "Use the task tools." in context.prompt
    assert "Today's date is" in context.prompt
    assert describe_loaded(context, repo) == "instructions loaded: AGENTS.md, pkg/sub/CLAUDE.md"


def test_no_repository_reads_only_the_working_directory(tmp_path: Path) -> None:
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    write(tmp_path / "a" / "AGENTS.md", "parent")
    assert find_instruction_files(inner) == []
