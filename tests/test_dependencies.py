"""What is installed is what was tested: every runtime dependency has an upper bound, and
the versions this suite runs on are inside the bounds (`.ci/run --newest` runs it past them)."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _runtime() -> list[Requirement]:
    with PYPROJECT.open("rb") as f:
        return [Requirement(text) for text in tomllib.load(f)["project"]["dependencies"]]


def test_every_runtime_dependency_stops_below_a_major_version() -> None:
    unbounded = [str(r) for r in _runtime() if not any(s.operator in ("<", "<=", "~=", "==") for s in r.specifier)]
    assert not unbounded, f"no upper bound: {unbounded}"
    for requirement in _runtime():
        upper = next(s.version for s in requirement.specifier if s.operator == "<")
        parts = upper.split(".")
        # Before 1.0 a minor release is the breaking one: `<0.13` is that bound.
        below_major = parts[2:] if parts[0] == "0" else parts[1:]
        assert below_major in ([], ["0"]), f"{requirement}: the bound is a major version, not {upper}"


def test_the_installed_versions_are_within_the_bounds() -> None:
    outside = [
        f"{r.name} {version(r.name)} (wants {r.specifier})"
        for r in _runtime()
        if not r.specifier.contains(version(r.name), prereleases=True)
    ]
    assert not outside, outside
