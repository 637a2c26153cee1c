"""The test harness itself: a scripted model left with unused steps fails its test.

Each case runs a small test file in a child pytest (`pytester`) with this suite's own
`conftest.py`, so it is the real teardown check that is exercised, not a copy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")

USES = """
from todo_agent.core.model.scripted import ScriptedModel


async def drain(model: ScriptedModel, requests: int) -> None:
    for _ in range(requests):
        async for _item in model.stream([{"role": "user", "content": "hi"}], []):
            pass
"""


def run(pytester: pytest.Pytester, body: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_inner=USES + body)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider")


def test_a_script_with_unused_steps_fails_its_test_at_teardown(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
async def test_uses_one_of_two() -> None:
    await drain(ScriptedModel.from_data(["one", "two"]), 1)
""",
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*scripted model used 1 of 2 steps*"])


def test_a_script_used_to_the_end_passes(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
async def test_uses_both() -> None:
    await drain(ScriptedModel.from_data(["one", "two"]), 2)
""",
    )
    result.assert_outcomes(passed=1)


def test_the_opt_out_is_a_visible_marker_with_a_reason(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
import pytest

@pytest.mark.script_may_end_early("the test stops the turn after the first step")
async def test_stops_early() -> None:
    await drain(ScriptedModel.from_data(["one", "two"]), 1)
""",
    )
    result.assert_outcomes(passed=1)


def test_a_failing_test_is_not_reported_twice(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
async def test_fails_first() -> None:
    await drain(ScriptedModel.from_data(["one", "two"]), 1)
    assert False, "the real failure"
""",
    )
    result.assert_outcomes(failed=1)
