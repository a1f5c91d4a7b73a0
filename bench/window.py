"""Section 3: ``store.load_window(key, 50)`` against ever bigger databases; it should stay flat.

The measured conversation holds half of all stored turns, interleaved with other conversations,
so both a long history and a big table are in play. All databases are open at once and timed in
interleaved batches, so a slow moment of the machine does not land on one size only. A database
is a SQLite file (a ``Path``) or a ``storage.url`` (PostgreSQL: a seeded schema, ``bench.pg``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

from bench.common import median
from bench.seed import MEASURED_KEY
from bot.config.storage_url import sqlite_url
from bot.storage import Storage, open_storage_url

MAX_TURNS = 50  # the default history.max_turns


@dataclass(frozen=True, slots=True)
class WindowFigures:
    stored_messages: int
    cached: bool  # True: the service's in-memory window; False: read from the database each time
    mean: float  # seconds per load_window call: the median of the batches' means
    turns: int  # turns the window returned
    messages: int  # messages in those turns
    backend: str = "SQLite"


def backend_name(database: Path | str) -> str:
    return "SQLite" if isinstance(database, Path) else "PostgreSQL"


def storage_url(database: Path | str) -> str:
    return sqlite_url(database) if isinstance(database, Path) else database


async def _batch(store: Storage, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        await store.load_window(MEASURED_KEY, MAX_TURNS)
    return (time.perf_counter() - started) / calls


async def measure_windows(
    databases: Mapping[int, Path | str],
    *,
    cached: bool = False,
    calls: int = 200,
    batches: int = 7,
    warmup: int = 50,
) -> list[WindowFigures]:
    """``databases`` maps stored-message count to a seeded file; one result per entry."""
    async with AsyncExitStack() as stack:
        stores: dict[int, Storage] = {}
        for size, database in databases.items():
            store = open_storage_url(storage_url(database), cache_windows=cached)
            stores[size] = await stack.enter_async_context(store)
        backend = backend_name(next(iter(databases.values())))
        means: dict[int, list[float]] = {size: [] for size in stores}
        for store in stores.values():
            await _batch(store, warmup)
        for _ in range(batches):
            for size, store in stores.items():
                means[size].append(await _batch(store, calls))
        figures: list[WindowFigures] = []
        for size, store in stores.items():
            window = await store.load_window(MEASURED_KEY, MAX_TURNS)
            messages = sum(len(turn.messages) for turn in window)
            figures.append(
                WindowFigures(size, cached, median(means[size]), len(window), messages, backend)
            )
    return figures
