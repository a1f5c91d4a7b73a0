"""The closing line of a test run counts every test: PostgreSQL's skips are one line above it,
never left out of it; ``make test``'s own last line sums all of its runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.postgres_support import HOW_TO_RUN
from tests.summary import TALLY_ENV, closing_line

pytest_plugins = ["pytester"]

SUITE = f"""
import pytest

def test_one():
    pass

def test_two():
    pass

@pytest.mark.skipif(True, reason={HOW_TO_RUN!r})
def test_needs_postgres():
    pass

@pytest.mark.skip(reason="not on this platform")
def test_other_skip():
    pass
"""


def test_postgres_skips_are_one_line_and_still_counted(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tally = tmp_path / "tally.jsonl"
    monkeypatch.setenv(TALLY_ENV, str(tally))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(SUITE)
    result = pytester.runpytest_inprocess("-p", "tests.summary", "-ra")
    result.assert_outcomes(passed=2, skipped=2)
    out = result.stdout.str()
    assert f"1 {HOW_TO_RUN}" in out
    assert out.count(HOW_TO_RUN) == 1  # not again in the short summary
    assert "not on this platform" in out  # other skips are still listed
    closing = out.strip().splitlines()[-1]
    assert "2 passed, 2 skipped" in closing
    [run] = [json.loads(line) for line in tally.read_text().splitlines()]
    assert run["passed"] == 2 and run["skipped"] == 2 and run["postgres_skipped"] == 1


def test_make_test_closes_on_every_run_summed() -> None:
    line = closing_line(
        [
            {"passed": 1794, "skipped": 160, "postgres_skipped": 154},
            {"passed": 1007, "skipped": 6, "failed": 1},
        ]
    )
    assert line == (
        "make test: 2,968 tests in 2 runs: 2,801 passed, 1 failed, 166 skipped"
        " (154 of the skipped need PostgreSQL: see above)"
    )


@given(
    st.lists(
        st.dictionaries(st.sampled_from(["passed", "failed", "skipped"]), st.integers(0, 10**5))
    )
)
def test_the_closing_line_counts_every_test(runs: list[dict[str, int]]) -> None:
    total = sum(sum(run.values()) for run in runs)
    assert closing_line(runs).startswith(f"make test: {total:,} tests in {len(runs)} run")
