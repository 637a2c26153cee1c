"""Architecture rules that must not erode: core/ never touches Textual; start-up stays light.

The static rules (core imports no UI, `openai` only in `model/openai_chat`, the layers inside
core) are import-linter contracts in `pyproject.toml`; `.ci/run` runs `lint-imports` as a
step of its own, and the first test here runs it too so `pytest` alone catches a breach.
What a static graph cannot see is which modules a real import loads: that is the second.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core"


def test_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 broken." in result.stdout, result.stdout


def test_importing_all_of_core_loads_neither_textual_nor_openai() -> None:
    modules = sorted(
        "todo_agent.core." + ".".join(p.relative_to(CORE).with_suffix("").parts)
        for p in CORE.rglob("*.py")
        if p.name != "__init__.py" and p.stem not in ("openai_chat", "openai_responses")
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = [m for m in ('textual', 'rich', 'openai') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_the_command_line_and_headless_runner_load_neither_textual_nor_openai() -> None:
    # `todo-agent -p` must not pay for Textual, and `--version` for neither.
    code = (
        "import sys, todo_agent.frontends.cli, todo_agent.frontends.headless\n"
        "print(','.join(m for m in ('textual', 'rich', 'openai') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
