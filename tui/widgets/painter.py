"""How conversation blocks get drawn with the pane's theme, without being widgets."""

from __future__ import annotations

from rich.console import RenderableType
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.content import Content
from textual.strip import Strip
from textual.style import Style
from textual.visual import RichVisual, Visual
from textual.widget import Widget

_TALL_BAR = "▊"
"""Textual's `tall` left border: drawn reversed, it leaves a thin bar at the cell's right."""


class Painter:
    """Draws visuals into strips with a widget's theme (its CSS variables and component styles)."""

    def __init__(self, widget: Widget) -> None:
        self.widget = widget

    def style(self, *components: str) -> Style:
        return self.widget.get_visual_style(*components)

    def content(self, content: Content, width: int, style: Style) -> list[Strip]:
        return Visual.to_strips(self.widget, content, max(1, width), None, style, apply_selection=False)

    def rich(self, renderable: RenderableType, width: int, style: Style) -> list[Strip]:
        visual = RichVisual(self.widget, renderable)
        return Visual.to_strips(self.widget, visual, max(1, width), None, style, apply_selection=False)

    def bar(self, component: str) -> Strip:
        """A one-cell `tall` left border in `component`'s colour, as Textual draws it."""
        colour, outside = self.style(component).foreground, self.style().background
        style = RichStyle(
            color=colour.rich_color if colour else None,
            bgcolor=outside.rich_color if outside else None,
            reverse=True,
        )
        return Strip([Segment(_TALL_BAR, style)], 1)

    def blank(self, width: int) -> Strip:
        return Strip.blank(width, self.style().rich_style)


def spacing(width: int, style: Style) -> Strip:
    """Blank cells in `style`'s background only, as Textual fills padding."""
    return Strip.blank(width, RichStyle(bgcolor=style.background.rich_color if style.background else None))


def fit(strip: Strip, width: int, style: Style) -> Strip:
    return strip.adjust_cell_length(width, style.rich_style)
