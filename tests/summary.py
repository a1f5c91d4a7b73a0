"""How a test run ends: PostgreSQL's skips told in one line, yet counted in the closing line,
and each run's counts kept so ``make test`` closes on one line for all of its passes.

Without a PostgreSQL server about 150 tests skip for the same reason; listed per file they would
bury the skips worth reading, so they are one line. They still count: the closing line of a run
(``N passed, M skipped``) and of ``make test`` (:func:`closing_line`) say how many tests there
are, whatever ran. ``make test`` sets ``PARLOUR_TEST_TALLY`` to a file each run appends its
counts to (one JSON object a line), then prints ``python -m tests.summary FILE``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Generator, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.postgres_support import HOW_TO_RUN

TALLY_ENV = "PARLOUR_TEST_TALLY"
_KINDS = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
_POSTGRES_SKIPS = "parlour_postgres_skips"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """PostgreSQL's skips as one line, out of the short summary that follows."""
    skipped = terminalreporter.stats.get("skipped", [])
    postgres = [r for r in skipped if HOW_TO_RUN in str(r.longrepr)]
    if postgres:
        terminalreporter.stats["skipped"] = [r for r in skipped if r not in postgres]
        setattr(terminalreporter, _POSTGRES_SKIPS, postgres)
        terminalreporter.write_line(f"{len(postgres)} {HOW_TO_RUN}")


@pytest.hookimpl(wrapper=True, tryfirst=True, specname="pytest_terminal_summary")
def pytest_terminal_summary_closing(terminalreporter: Any) -> Generator[None]:
    """Around every other summary: the PostgreSQL skips go back before the closing line."""
    try:
        return (yield)
    finally:
        postgres = getattr(terminalreporter, _POSTGRES_SKIPS, [])
        terminalreporter.stats.setdefault("skipped", []).extend(postgres)
        if not hasattr(terminalreporter.config, "workerinput"):  # xdist: the controller's
            _tally(terminalreporter.stats, len(postgres))


def _tally(stats: Mapping[str, list[Any]], postgres_skips: int) -> None:
    target = os.environ.get(TALLY_ENV)
    if not target:
        return
    counts = {kind: len([r for r in stats.get(kind, []) if _counts(r)]) for kind in _KINDS}
    counts["postgres_skipped"] = postgres_skips
    with Path(target).open("a", encoding="utf-8") as out:
        out.write(json.dumps(counts) + "\n")


def _counts(report: Any) -> bool:
    """Whether pytest's own closing line counts ``report`` (as its terminal reporter decides)."""
    return bool(getattr(report, "count_towards_summary", True))


def closing_line(runs: Iterable[Mapping[str, int]]) -> str:
    """One line for every run of ``make test``: each outcome summed, every test counted."""
    runs = list(runs)
    total = {kind: sum(run.get(kind, 0) for run in runs) for kind in (*_KINDS, "postgres_skipped")}
    tests = sum(total[kind] for kind in _KINDS)
    parts = [f"{total[kind]:,} {kind}" for kind in _KINDS if total[kind] or kind == "passed"]
    line = f"make test: {tests:,} tests in {len(runs)} run{'s' if len(runs) != 1 else ''}: "
    line += ", ".join(parts)
    if total["postgres_skipped"]:
        line += f" ({total['postgres_skipped']:,} of the skipped need PostgreSQL: see above)"
    return line


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    sys.stdout.write(closing_line(json.loads(line) for line in lines if line.strip()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
