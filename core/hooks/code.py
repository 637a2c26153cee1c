"""The workspace code the hooks' commands run: part of their trust, and kept from the model.

A project hook accepted as `sh hooks/check.sh` runs whatever `hooks/check.sh` says when it
runs; the model can rewrite that file. So each hook's `Footprint` (what it runs of the
workspace, `core/permissions/workspace_code.py`) is taken when the session starts, goes
into the project hooks' trust fingerprint (`trust.py`), is protected from the model's edits
while the hooks run (`protected`), and is checked again before each run of a project hook
(`vet`): one whose code changed since is not run this session, and the person is told.
The person's own hooks (their user file) always run, but the workspace scripts they name
are protected the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from ..events import Event, Notice
from ..permissions.workspace_code import Footprint, footprint_of_line
from .spec import HookSpec

Vet = Callable[[list[HookSpec]], Awaitable[tuple[list[HookSpec], list[Event]]]]


class HookCode:
    def __init__(self, specs: Sequence[HookSpec], workspace: Path) -> None:
        """Blocking: hashes what each hook runs (at start-up, off the event loop)."""
        self.workspace = workspace
        self.footprints: dict[HookSpec, Footprint] = {s: footprint_of_line(s.command, workspace) for s in specs}

    def digests(self, specs: Sequence[HookSpec]) -> list[str]:
        return [self.footprints[s].digest if s in self.footprints else "" for s in specs]

    def lines(self, spec: HookSpec) -> list[str]:
        """What the trust question says about the code `spec` runs."""
        found = self.footprints.get(spec)
        return found.lines() if found is not None else []

    def protected(self, specs: Sequence[HookSpec]) -> dict[Path, str]:
        """The workspace files and folders `specs` run, → why the model may not edit them freely."""
        places: dict[Path, str] = {}
        for spec in specs:
            whose = "an accepted project hook" if spec.source == "project" else "one of your hooks"
            for path in self.footprints[spec].paths if spec in self.footprints else ():
                places.setdefault(path, f"{_shown(path, self.workspace)} is run by {whose} ({spec.event})")
        return places

    def changed(self, specs: Sequence[HookSpec]) -> list[HookSpec]:
        """Blocking: the hooks of `specs` whose workspace code is not what it was at start."""
        return [
            spec
            for spec in specs
            if spec in self.footprints
            and self.footprints[spec].paths
            and footprint_of_line(spec.command, self.workspace).digest != self.footprints[spec].digest
        ]

    def vetter(self, every_project: Callable[[], bool], drop_project: Callable[[], None]) -> Vet:
        """`HookRunner.vet`: before project hooks run, their code is checked again (in a
        thread); if any changed, the project's hooks stop for this session (`drop_project`)
        and a warning says which. Skipped when the person trusts every project's hooks."""

        async def vet(specs: list[HookSpec]) -> tuple[list[HookSpec], list[Event]]:
            project = [s for s in specs if s.source == "project"]
            if not project or every_project():
                return specs, []
            changed = await asyncio.to_thread(self.changed, project)
            if not changed:
                return specs, []
            drop_project()
            names = "; ".join(
                f"{s.command} ({', '.join(_shown(p, self.workspace) for p in self.footprints[s].paths)})"
                for s in changed
            )
            notice = Notice(
                f"project hooks stopped for this session: the code they run changed since you accepted them "
                f"({names}); the next start asks again",
                "warning",
            )
            return [s for s in specs if s.source != "project"], [notice]

        return vet


def _shown(path: Path, workspace: Path) -> str:
    try:
        relative = path.relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return str(path)
    return relative + ("/" if path.is_dir() else "")
