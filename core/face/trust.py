"""`runtime.trust`: the project's hooks, which run only once the person accepts them (the
TUI's trust screen, an ACP client's permission request), every byte of what they run shown
first. The project's MCP servers are accepted through `runtime.mcp`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..events import Notice
from ..hooks.spec import HookSpec
from ..hooks.trust import is_trusted, trust
from ..settings import project_settings_path
from ..terminal import reveal_line

if TYPE_CHECKING:
    from ..runtime import Runtime


class Trust:
    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    @property
    def project_hooks(self) -> list[HookSpec]:
        return [spec for spec in self._rt.config.hooks if spec.source == "project"]

    @property
    def hooks_trusted(self) -> bool:
        """Run the project file's hooks? Only once the person said so (`core/hooks/trust.py`),
        or the user file / `--allow-project-hooks` trusts all projects."""
        rt = self._rt
        if rt.config.allow_project_hooks:
            return True
        hooks = self.project_hooks
        return is_trusted(rt.config.workspace, hooks, rt.hook_code.digests(hooks))

    @property
    def untrusted_hooks(self) -> list[HookSpec]:
        """Project hooks waiting for the person's yes (empty when there are none, or trusted)."""
        return [] if self.hooks_trusted else self.project_hooks

    def hook_lines(self, spec: HookSpec) -> list[str]:
        """What a hook runs from the workspace, line by line, for the person to read first."""
        return self._rt.hook_code.lines(spec)

    @property
    def settings_path(self) -> Path:
        """The project settings file the hooks came from."""
        return project_settings_path(self._rt.config.workspace)

    def accept_hooks(self) -> None:
        """The person accepted the project's hooks: remember it and run them from now on.
        Raises OSError when the acceptance cannot be saved (they still run this time)."""
        rt = self._rt
        rt.hooks.runner.specs = rt.config.hooks
        rt.protect_trusted_code()
        hooks = self.project_hooks
        trust(rt.config.workspace, hooks, rt.hook_code.digests(hooks))

    def hooks_notice(self) -> Notice | None:
        """For runs that cannot ask: say that project hooks were skipped and how to run them."""
        waiting = self.untrusted_hooks
        if not waiting:
            return None
        # Every byte of each command, on one line: a control sequence would hide what follows it.
        commands = "; ".join(
            f"{s.event}{f' [{reveal_line(s.matcher)}]' if s.matcher else ''}: {reveal_line(s.command)}" for s in waiting
        )
        return Notice(
            f"{len(waiting)} hook(s) in {project_settings_path(self._rt.config.workspace)} not run: project hooks run "
            f"once you accept them in the TUI, or with --allow-project-hooks ({commands})",
            "warning",
        )
