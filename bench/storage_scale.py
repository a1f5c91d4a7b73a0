"""Sections 1 and 3 on every backend: per-turn cost and window load against stored size.

SQLite files are seeded by :mod:`bench.seed` (in a child process), PostgreSQL schemas by
:mod:`bench.pg` (on the server), with the same rows. Window loads of all sizes of one backend are
timed together in interleaved batches (:mod:`bench.window`); the per-turn figures are taken at
the sizes in ``turn_sizes`` (:mod:`bench.turns`). Every database is removed afterwards.

``python -m bench.storage_scale [--pg-url URL] [--sizes 3,4,5,6,7] [--turns 6]
[--postgres-only]`` prints these two sections alone (``make bench`` prints them with the rest).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import fmt_count
from bench.pg import PG_URL_ENV, BenchSchema, bench_schema, seed_postgres, window_buffers
from bench.seed import MEASURED_KEY, seed_in_child
from bench.turns import TurnFigures, measure_turns
from bench.window import MAX_TURNS, WindowFigures, measure_windows


@dataclass(slots=True)
class ScaleFigures:
    turns: list[TurnFigures] = field(default_factory=list)
    windows: list[list[WindowFigures]] = field(default_factory=list)  # one list per backend
    seeding: list[str] = field(default_factory=list)  # "SQLite 10^6 in 12.3 s", ...
    pg_buffers: dict[int, int] = field(default_factory=dict)  # size -> buffers per window load


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _progress(message: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"bench: {message}\n")
        sys.stderr.flush()


def measure_sqlite(root: Path, sizes: Sequence[int], turn_sizes: set[int]) -> ScaleFigures:
    figures = ScaleFigures()
    databases: dict[int, Path] = {}
    for size in sizes:
        databases[size] = root / f"history-{size}.db"
        _progress(f"SQLite: seeding {fmt_count(size)} messages")
        seconds = seed_in_child(databases[size], size)
        figures.seeding.append(f"SQLite {fmt_count(size)} in {seconds:.0f} s")
    _progress("SQLite: load_window at every size")
    figures.windows.append(asyncio.run(measure_windows(databases, cached=False)))
    figures.windows.append(asyncio.run(measure_windows(databases, cached=True)))
    for size, path in databases.items():
        if size in turn_sizes:
            _progress(f"SQLite: per-turn cost at {fmt_count(size)}")
            figures.turns.append(asyncio.run(measure_turns(path, size)))
        _remove_db(path)
    return figures


async def measure_postgres(pg_url: str, sizes: Sequence[int], turn_sizes: set[int]) -> ScaleFigures:
    """One fresh schema per size, all open at once for the window loads, dropped after."""
    figures = ScaleFigures()
    async with AsyncExitStack() as stack:
        schemas: dict[int, BenchSchema] = {}
        for size in sizes:
            schema = await stack.enter_async_context(bench_schema(pg_url, f"m{size}"))
            _progress(f"PostgreSQL: seeding {fmt_count(size)} messages")
            seconds = await seed_postgres(schema, size)
            figures.seeding.append(f"PostgreSQL {fmt_count(size)} in {seconds:.0f} s")
            schemas[size] = schema
        urls = {size: schema.url for size, schema in schemas.items()}
        _progress("PostgreSQL: load_window at every size")
        figures.windows.append(await measure_windows(urls, cached=False))
        for size, schema in schemas.items():
            figures.pg_buffers[size] = await window_buffers(schema, MEASURED_KEY, MAX_TURNS)
        for size, url in urls.items():
            if size in turn_sizes:
                _progress(f"PostgreSQL: per-turn cost at {fmt_count(size)}")
                figures.turns.append(await measure_turns(url, size))
    return figures


def measure_scale(
    root: Path,
    pg_url: str | None,
    sizes: Sequence[int],
    turn_sizes: set[int],
    *,
    sqlite: bool = True,
) -> ScaleFigures:
    figures = measure_sqlite(root, sizes, turn_sizes) if sqlite else ScaleFigures()
    if pg_url:
        pg = asyncio.run(measure_postgres(pg_url, sizes, turn_sizes))
        figures.turns += pg.turns
        figures.windows += pg.windows
        figures.seeding += pg.seeding
        figures.pg_buffers = pg.pg_buffers
    return figures


def main(argv: Sequence[str]) -> int:
    import os
    import tempfile

    from bench.rows import buffer_rows, turn_rows, window_rows
    from bench.table import machine_line, render

    parser = argparse.ArgumentParser(prog="python -m bench.storage_scale", description=__doc__)
    parser.add_argument("--pg-url", default=os.environ.get(PG_URL_ENV) or None)
    parser.add_argument("--sizes", default="3,4,5,6,7", help="powers of ten of stored messages")
    parser.add_argument("--turns", default="6", help="powers of ten for the per-turn figures")
    parser.add_argument("--postgres-only", action="store_true", help="no SQLite figures")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    sizes = [10 ** int(k) for k in args.sizes.split(",")]
    turn_sizes = {10 ** int(k) for k in args.turns.split(",") if k}
    with tempfile.TemporaryDirectory(prefix="parlour-scale-") as tmp:
        figures = measure_scale(
            Path(tmp), args.pg_url, sizes, turn_sizes, sqlite=not args.postgres_only
        )
    rows = turn_rows(figures.turns)
    for windows in figures.windows:
        rows += window_rows(windows)
    rows += buffer_rows(figures.pg_buffers)
    print(machine_line())
    print()
    print(render(rows))
    print()
    print("Seeding: " + "; ".join(figures.seeding) + ".")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
