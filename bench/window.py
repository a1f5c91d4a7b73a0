"""Section 3: ``store.load_window(key, 50)`` against ever bigger databases; it should stay flat.

The measured conversation holds half of all stored turns, interleaved with other conversations,
so both a long history and a big table are in play.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import median
from bench.seed import MEASURED_KEY
from bot.history.sqlite import SQLiteStore

MAX_TURNS = 50  # the default history.max_turns


@dataclass(frozen=True, slots=True)
class WindowFigures:
    stored_messages: int
    mean: float  # seconds per load_window call: the median of the batches' means
    turns: int  # turns the window returned
    messages: int  # messages in those turns


async def measure_window(
    db_path: Path, stored_messages: int, *, calls: int = 200, batches: int = 7, warmup: int = 50
) -> WindowFigures:
    """Open the real store on ``db_path`` and time ``batches`` x ``calls`` window loads."""
    means: list[float] = []
    async with SQLiteStore(db_path) as store:
        window = await store.load_window(MEASURED_KEY, MAX_TURNS)
        for _ in range(warmup):
            await store.load_window(MEASURED_KEY, MAX_TURNS)
        for _ in range(batches):
            started = time.perf_counter()
            for _ in range(calls):
                await store.load_window(MEASURED_KEY, MAX_TURNS)
            means.append((time.perf_counter() - started) / calls)
    messages = sum(len(turn.messages) for turn in window)
    return WindowFigures(stored_messages, median(means), len(window), messages)
