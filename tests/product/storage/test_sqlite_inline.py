"""SQLite statements run on the event loop's own thread (bot.storage.sqlite.inline): only cheap,
known ones, only while the connection's thread is idle and no transaction is open, never waiting
for another process's lock, and never checkpointing the WAL on the loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.storage.sqlite import SQLiteStore
from bot.storage.sqlite.inline import TrackedConnection

INSERT = "INSERT INTO plugin_kv (plugin, key, value, updated_at) VALUES ($1, $2, $3, 0)"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "i.db") as opened:
        for conn in (opened.database.reader, opened.database.writer):
            await conn.create_function("whose_thread", 0, threading.get_ident)
            await conn.create_function("nap", 1, lambda ms: time.sleep(ms / 1000) or ms)
        yield opened


def trips(conn: object) -> int:
    assert isinstance(conn, TrackedConnection)
    return conn.given


async def keys(store: SQLiteStore) -> list[str]:
    return [str(k) for (k,) in await store.seam.fetch("SELECT key FROM plugin_kv ORDER BY key")]


class Ticker:
    """Counts loop iterations 1 ms apart: a loop held by a statement stops counting."""

    def __init__(self) -> None:
        self.ticks = 0
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.001)
            self.ticks += 1

    def stop(self) -> None:
        self._task.cancel()


async def test_a_known_cheap_statement_runs_here_and_its_write_is_committed(
    store: SQLiteStore, tmp_path: Path
) -> None:
    db = store.database
    first = await store.seam.fetch("SELECT whose_thread()")  # never seen: the thread
    before = trips(db.reader)
    second = await store.seam.fetch("SELECT whose_thread()")
    assert first[0][0] != threading.get_ident() == second[0][0]
    assert trips(db.reader) == before  # no trip

    await store.seam.execute(INSERT, "p", "a", '"1"')
    writes = trips(db.writer)
    assert await store.seam.execute(INSERT, "p", "b", '"2"') == 1
    assert trips(db.writer) == writes
    other = sqlite3.connect(tmp_path / "i.db")  # another process sees it: committed
    try:
        assert other.execute("SELECT count(*) FROM plugin_kv").fetchone() == (2,)
    finally:
        other.close()


async def test_a_statement_another_process_locks_out_waits_on_the_thread_not_the_loop(
    store: SQLiteStore, tmp_path: Path
) -> None:
    await store.seam.execute(INSERT, "p", "warm", '"0"')  # known cheap from now on
    other = sqlite3.connect(tmp_path / "i.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    ticker = Ticker()
    try:
        write = asyncio.ensure_future(store.seam.execute(INSERT, "p", "late", '"1"'))
        await asyncio.sleep(0.3)
        assert not write.done()
        assert ticker.ticks > 50  # the loop ran all along
        other.execute("COMMIT")
        assert await asyncio.wait_for(write, 5) == 1
    finally:
        ticker.stop()
        other.close()
    assert await keys(store) == ["late", "warm"]


COUNT = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000)"
    " SELECT whose_thread(), count(*) FROM c"
)


async def test_a_costly_statement_stays_on_the_thread(store: SQLiteStore) -> None:
    db = store.database
    before, ticker = trips(db.reader), Ticker()
    try:
        for _ in range(3):
            ((whose, _),) = await store.seam.fetch(COUNT)
            assert whose != threading.get_ident()
    finally:
        ticker.stop()
    assert trips(db.reader) == before + 3
    assert ticker.ticks >= 3  # the loop ran while SQLite counted


async def test_a_statement_that_was_slow_here_goes_back_to_the_thread_for_longer_each_time(
    store: SQLiteStore,
) -> None:
    """Waiting (for the disk, here a nap) costs the thread no CPU, so it looks cheap there; its
    first slow run here sends it back for 32 runs, the next for 64."""
    where: list[bool] = []
    for _ in range(1 + 1 + 32 + 1 + 64 + 1):
        ((whose, _),) = await store.seam.fetch("SELECT whose_thread(), nap(2)")
        where.append(whose == threading.get_ident())
    assert where == [False, True, *[False] * 32, True, *[False] * 64, True]


async def test_nothing_runs_here_while_the_thread_holds_the_connection(store: SQLiteStore) -> None:
    await store.seam.fetch("SELECT whose_thread()")
    await store.seam.fetch("SELECT whose_thread()")  # known cheap now
    slow = asyncio.ensure_future(store.seam.fetch("SELECT nap(50)"))
    await asyncio.sleep(0.01)  # the nap is running on the reader's thread
    ((whose,),) = await store.seam.fetch("SELECT whose_thread()")
    assert whose != threading.get_ident()  # it queued behind the nap
    await slow


async def test_a_lone_write_never_joins_an_open_transaction(store: SQLiteStore) -> None:
    await store.seam.execute(INSERT, "p", "warm", '"0"')  # known cheap
    inside, release = asyncio.Event(), asyncio.Event()

    async def undone() -> None:
        async with store.seam.transaction() as tx:
            await tx.execute(INSERT, "p", "in-tx", '"x"')
            inside.set()
            await release.wait()
            raise RuntimeError("undo")

    transaction = asyncio.ensure_future(undone())
    await inside.wait()
    write = asyncio.ensure_future(store.seam.execute(INSERT, "p", "beside", '"y"'))
    await asyncio.sleep(0.02)
    assert not write.done()  # it waits for the writer, never runs inside the transaction
    release.set()
    with pytest.raises(RuntimeError):
        await transaction
    assert await write == 1
    assert await keys(store) == ["beside", "warm"]


async def test_writes_run_here_leave_the_checkpoints_to_the_thread(
    store: SQLiteStore,
) -> None:
    """No commit on the loop's thread checkpoints the WAL (it would write and sync the database
    file there); after 200 of them, a passive checkpoint goes to the writer's thread."""
    db = store.database
    await store.seam.execute(INSERT, "p", "warm", '"0"')
    seen: list[tuple[str, bool]] = []
    loop_thread = threading.get_ident()

    def trace(statement: str) -> None:
        seen.append((statement, threading.get_ident() == loop_thread))

    await db.writer.set_trace_callback(trace)
    for n in range(450):
        await store.seam.execute(INSERT, "p", f"k{n:03}", '"1"')
    for _ in range(100):
        if any(s.startswith("PRAGMA wal_checkpoint") for s, _ in seen):
            break
        await asyncio.sleep(0.01)
    checkpoints = [here for s, here in seen if s.startswith("PRAGMA wal_checkpoint")]
    assert checkpoints and not any(checkpoints)  # on the writer's thread only
    here = [n for n, (s, on_loop) in enumerate(seen) if s.startswith("INSERT") and on_loop]
    assert len(here) >= 200
    for n in here:  # each ran with the automatic checkpoint off, and set back after it
        assert seen[n - 1][0] == "PRAGMA wal_autocheckpoint=0"
        assert seen[n + 2][0] == "PRAGMA wal_autocheckpoint=1000"
    assert len(await keys(store)) == 451


async def test_a_statement_run_here_leaves_nothing_open_for_the_next_batch(
    store: SQLiteStore,
) -> None:
    """A batch on the writer's thread commits after statements ran here (their PRAGMAs answer
    with a row): nothing they left unfinished may keep it from committing."""
    await store.seam.execute(INSERT, "p", "warm", '"0"')
    await store.seam.execute(INSERT, "p", "here", '"1"')  # run here
    await store.seam.execute("PRAGMA user_version")  # a row nobody reads, run on the thread
    await store.seam.execute("PRAGMA user_version")  # ... and here
    lead = asyncio.ensure_future(store.seam.execute(INSERT + " -- new text", "p", "lead", "1"))
    await asyncio.sleep(0)  # on its way to the thread: the next ones gather behind it
    batch = [store.seam.execute(INSERT, "p", f"b{n}", "1") for n in range(3)]
    assert await asyncio.gather(lead, *batch) == [1, 1, 1, 1]
    assert await keys(store) == ["b0", "b1", "b2", "here", "lead", "warm"]


async def test_a_batch_right_after_a_checkpoint_commits(store: SQLiteStore) -> None:
    """The checkpoint's statement answers with a row: read on the writer's thread, it leaves
    nothing open there for a batch queued behind it to trip over at its COMMIT."""
    db = store.database
    await store.seam.execute(INSERT, "p", "warm", '"0"')
    held = asyncio.ensure_future(store.seam.execute("UPDATE plugin_kv SET updated_at = nap(30)"))
    await asyncio.sleep(0)  # the writer's thread naps; what follows queues behind it
    db.writes._inline._checkpoints.committed(db.writer, 200)  # as after 200 writes here
    batch = [store.seam.execute(INSERT, "p", f"b{n}", "1") for n in range(3)]
    assert await asyncio.gather(held, *batch) == [1, 1, 1, 1]
    assert await keys(store) == ["b0", "b1", "b2", "warm"]
