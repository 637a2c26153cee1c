"""The screenshot script's SVG→PNG preparation (the PNGs themselves are looked at, not tested)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def regenerate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("regenerate", ROOT / "screenshots" / "regenerate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pngs_are_drawn_in_a_monospace_font_with_spaces_kept() -> None:
    svg = (ROOT / "screenshots" / "demo_midrun.svg").read_text(encoding="utf-8")
    assert "Fira Code" in svg and 'xml:space="preserve"' not in svg  # what Rich writes
    drawable = regenerate().for_png(svg, "DejaVu Sans Mono")
    assert "Fira Code" not in drawable and 'font-family: "DejaVu Sans Mono"' in drawable
    # Rich starts pieces with a no-break space (" and" after `page`): kept only when told.
    assert drawable.startswith('<svg xml:space="preserve" ')
    assert drawable.count("&#160;and&#160;") == svg.count("&#160;and&#160;") > 0
