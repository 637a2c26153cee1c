"""The command palette (`ctrl+p`): every slash command and every toggle, by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .commands import SLASH_COMMANDS
from .screens.main import MainScreen


@dataclass(frozen=True)
class PaletteEntry:
    title: str
    help: str
    """A second line under the title; empty for none."""
    run: Callable[[], object]


def palette_entries(screen: MainScreen) -> list[PaletteEntry]:
    """What the palette offers on the main screen."""
    entries = [
        # The description is in the title already: the help line only adds the usage.
        PaletteEntry(
            f"{c.name}  {c.description}",
            f"{c.name} {c.usage}" if c.usage else "",
            partial(screen.run_slash, c.name),
        )
        for c in SLASH_COMMANDS
    ]
    entries += [
        # The person's own: one that takes arguments waits in the prompt for them.
        PaletteEntry(
            f"{c.name}  {c.description}",
            f"{c.name} {c.usage}  ({c.source})".replace("  ", " ", 1) if c.usage else c.source,
            partial(screen.use_command, c),
        )
        for c in screen.custom_slash_commands()
    ]
    entries += [
        PaletteEntry("Toggle the task panel", "ctrl+t", screen.action_toggle_tasks),
        PaletteEntry("Task panel on the right", "[ui] task_panel = right", partial(screen.place_panel, "right")),
        PaletteEntry("Task panel at the bottom", "[ui] task_panel = bottom", partial(screen.place_panel, "bottom")),
        PaletteEntry("Focus the task panel", "then a / space / d / J / K edit the plan", screen.focus_tasks),
        PaletteEntry("Cycle the permission mode", "shift+tab", screen.action_cycle_mode),
        PaletteEntry("Interrupt the running turn", "escape", screen.interrupt),
        PaletteEntry("Show or hide the last tool output", "ctrl+o", screen.action_toggle_output),
    ]
    return entries


class TodoAgentCommands(Provider):
    """Slash commands and toggles of the main screen."""

    def _entries(self) -> list[PaletteEntry]:
        screen = self.screen
        return palette_entries(screen) if isinstance(screen, MainScreen) else []

    async def discover(self) -> Hits:
        for entry in self._entries():
            yield DiscoveryHit(entry.title, entry.run, help=entry.help or None)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for entry in self._entries():
            score = matcher.match(entry.title)
            if score > 0:
                yield Hit(score, matcher.highlight(entry.title), entry.run, help=entry.help or None)
