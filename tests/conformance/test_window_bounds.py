"""The in-memory window cache is bounded (issue 14 §6): with its caps lowered to a few windows,
many conversations written and read in turn still each load exactly the window on disk."""

from __future__ import annotations

import pytest

from bot.storage.sqlite import window_cache
from bot.values import TurnStatus
from tests.conformance.conftest import Backend, answered, turn

CONVERSATIONS = 7
ROUNDS = 6


@pytest.fixture
def small_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two windows, a few KiB and two pending turns at most (read when a store opens)."""
    monkeypatch.setattr(window_cache, "MAX_CONVERSATIONS", 2)
    monkeypatch.setattr(window_cache, "MAX_BYTES", 6_000)
    monkeypatch.setattr(window_cache, "MAX_PENDING", 2)


@pytest.mark.usefixtures("small_cache")
async def test_evicted_windows_are_read_back_exactly(backend: Backend) -> None:
    keys = [f"tg:{n}" for n in range(CONVERSATIONS)]
    async with backend.open() as cached, backend.open(cache_windows=False) as plain:
        for round_ in range(ROUNDS):
            for n, key in enumerate(keys):
                await cached.load_window(key, 4)  # as the service does before each turn
                long = "x" * (500 * n)  # some windows alone fill most of the budget
                await answered(cached, key, f"q{round_} {long}", f"a{round_}")
            # keys[0] was evicted long ago: its window is read back while a turn is pending
            pending = await cached.begin_turn(turn(keys[0], f"unanswered {round_}"))
            await cached.load_window(keys[0], 4)
            await cached.fail_turn(pending, "model down")
        for key in keys:
            for _ in range(2):  # from disk (evicted), then possibly from the cache
                assert await cached.load_window(key, 4) == await plain.load_window(key, 4)
        first = await cached.load_window(keys[0], 4)
    assert [t.status for t in first][-1] is TurnStatus.UNANSWERED
    assert len(first) == 4
