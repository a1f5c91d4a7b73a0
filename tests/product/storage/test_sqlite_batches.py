"""SQLite's batched trips (bot.storage.sqlite.batches): concurrent one-statement writes share a trip
to the writer's thread and a commit, reads a trip to the reader's, and each caller still learns
only its own outcome."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from bot.storage.sqlite import SQLiteStore
from bot.storage.sqlite.inline import InlineStatements
from bot.values import NewTurn

INSERT = "INSERT INTO plugin_kv (plugin, key, value, updated_at) VALUES ($1, $2, $3, 0)"


@pytest.fixture(autouse=True)
def every_statement_to_the_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the trips: no statement runs on the loop's thread here (that has
    its own tests, test_sqlite_inline.py)."""
    monkeypatch.setattr(InlineStatements, "may", lambda *_: False)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "g.db") as opened:
        yield opened


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every trip to an aiosqlite thread: a statement sent alone, or a batch."""
    seen: list[str] = []
    real = aiosqlite.Connection._execute

    async def counting(conn: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(getattr(fn, "__name__", "statement"))
        return await real(conn, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counting)
    return seen


async def stored(store: SQLiteStore) -> list[tuple[str, str]]:
    rows = await store.seam.fetch("SELECT key, value FROM plugin_kv ORDER BY key")
    return [(key, value) for key, value in rows]


async def test_concurrent_turns_share_trips_and_each_gets_its_own_id(
    store: SQLiteStore, trips: list[str]
) -> None:
    turns = [NewTurn(f"tg:{n}", f"tg:{n}", "u", "U", f"hello {n}") for n in range(50)]
    before = len(trips)
    ids = await asyncio.gather(*(store.begin_turn(turn) for turn in turns))
    assert len(set(ids)) == 50
    assert ids == sorted(ids)  # written in the order they were asked for
    assert len(trips) - before == 2  # the first alone, the 49 that came meanwhile in one batch
    for n, turn_id in enumerate(ids):
        (stored_turn,) = await store.load_window(f"tg:{n}", 5)
        assert stored_turn.turn_id == turn_id
        assert str(stored_turn.messages[0]["content"]).endswith(f"hello {n}")


async def test_a_failing_statement_fails_alone(store: SQLiteStore, trips: list[str]) -> None:
    await store.seam.execute(INSERT, "p", "taken", '"first"')
    before = len(trips)
    outcomes = await asyncio.gather(
        store.seam.execute(INSERT, "p", "a", '"1"'),
        store.seam.execute(INSERT, "p", "taken", '"again"'),  # primary key: refused
        store.seam.execute(INSERT, "p", "bad", "not json"),  # CHECK: refused
        store.seam.write(INSERT + " RETURNING key", "p", "b", '"2"'),
        store.seam.execute(INSERT, "p", "huge", 2**70),  # cannot be bound: never sent
        store.seam.execute("INSERT INTO no_such_table VALUES (1)"),  # a bad statement
        store.seam.execute(INSERT, "p", "c", '"3"'),
        return_exceptions=True,
    )
    assert outcomes[0] == 1 and outcomes[3] == [("b",)] and outcomes[6] == 1
    assert isinstance(outcomes[1], sqlite3.IntegrityError)
    assert isinstance(outcomes[2], sqlite3.IntegrityError)
    assert isinstance(outcomes[4], OverflowError)
    assert isinstance(outcomes[5], sqlite3.OperationalError)
    assert len(trips) - before == 2  # the first alone, the six behind it in one commit
    assert await stored(store) == [("a", '"1"'), ("b", '"2"'), ("c", '"3"'), ("taken", '"first"')]


async def test_a_full_disk_fails_the_uncommitted_statements_only(store: SQLiteStore) -> None:
    """SQLITE_FULL rolls the batch's transaction back: the statements before it in the batch
    are told so (none was acknowledged); those after it go in a new transaction."""
    await store.seam.execute(INSERT, "p", "before", '"0"')
    pages = (await store.seam.fetch("PRAGMA page_count"))[0][0]
    await store.seam.execute(f"PRAGMA max_page_count = {pages + 2}")  # a nearly full disk
    first = asyncio.create_task(store.seam.execute(INSERT, "p", "lead", '"1"'))
    await asyncio.sleep(0)  # the leader's batch is on its way; the next three gather
    outcomes = await asyncio.gather(
        store.seam.execute(INSERT, "p", "small", '"2"'),
        store.seam.execute(INSERT, "p", "big", json.dumps("x" * 100_000)),
        store.seam.execute(INSERT, "p", "after", '"3"'),
        return_exceptions=True,
    )
    assert await first == 1
    assert [type(o) for o in outcomes[:2]] == [sqlite3.OperationalError] * 2
    assert "full" in str(outcomes[1])
    assert outcomes[2] == 1
    assert [key for key, _ in await stored(store)] == ["after", "before", "lead"]


async def test_a_batch_waits_for_an_open_transaction(store: SQLiteStore) -> None:
    """A multi-statement transaction holds the writer: a batch goes before or after it whole,
    never into it (a rolled back transaction takes none of the batch's writes along)."""
    entered = asyncio.Event()

    async def rolled_back() -> None:
        with pytest.raises(RuntimeError):
            async with store.seam.transaction() as tx:
                await tx.execute(INSERT, "p", "in-tx", '"x"')
                entered.set()
                await asyncio.sleep(0.05)  # the batch below queues meanwhile
                raise RuntimeError("undo")

    task = asyncio.create_task(rolled_back())
    await entered.wait()
    written = await asyncio.gather(
        *(store.seam.execute(INSERT, "p", f"k{n}", "1") for n in range(5))
    )
    await task
    assert written == [1] * 5
    assert [key for key, _ in await stored(store)] == ["k0", "k1", "k2", "k3", "k4"]


async def test_a_cancelled_leader_leaves_no_caller_waiting(store: SQLiteStore) -> None:
    leader = asyncio.create_task(store.seam.execute(INSERT, "p", "lead", '"1"'))
    await asyncio.sleep(0)  # the leader's batch is on its way to the thread
    followers = [
        asyncio.create_task(store.seam.execute(INSERT, "p", f"f{n}", "1")) for n in range(3)
    ]
    await asyncio.sleep(0)
    leader.cancel()
    assert await asyncio.wait_for(asyncio.gather(*followers), 10) == [1, 1, 1]
    keys = [key for key, _ in await stored(store)]
    assert {"f0", "f1", "f2"} <= set(keys)  # the leader's own write may or may not have landed


async def test_concurrent_reads_share_trips_and_each_gets_its_own_rows(
    store: SQLiteStore, trips: list[str]
) -> None:
    for n in range(20):
        await store.seam.execute(INSERT, "p", f"k{n:02}", str(n))
    select = "SELECT value FROM plugin_kv WHERE key = $1"
    before = len(trips)
    found = await asyncio.gather(
        *(store.seam.fetch(select, f"k{n:02}") for n in range(20)),
        store.seam.fetch("SELECT no_such_column FROM plugin_kv"),
        return_exceptions=True,
    )
    assert found[:20] == [[(str(n),)] for n in range(20)]
    assert isinstance(found[20], sqlite3.OperationalError)  # its own error, the others answered
    assert len(trips) - before == 2  # the first alone, the 20 behind it in one trip


async def test_statements_queued_as_the_store_closes_are_told_so(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "c.db")
    await store.open()
    first = asyncio.create_task(store.seam.execute(INSERT, "p", "a", "1"))
    await asyncio.sleep(0)  # the first leads; the next ones queue behind it
    queued = [asyncio.create_task(store.seam.execute(INSERT, "p", f"q{n}", "1")) for n in range(3)]
    await asyncio.sleep(0)
    await store.close()
    outcomes = await asyncio.wait_for(asyncio.gather(first, *queued, return_exceptions=True), 10)
    assert outcomes[0] == 1
    assert all(o == 1 or isinstance(o, Exception) for o in outcomes[1:])  # none left waiting
