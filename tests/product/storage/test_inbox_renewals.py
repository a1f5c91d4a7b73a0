"""The inbox worker's lease renewals (bot.scheduling.inbox): a lease another replica took is
reported; an update being marked done while leases are renewed is not mistaken for one."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.scheduling.inbox import InboxWorker
from bot.storage.sqlite import SQLiteStore
from bot.values import InboxItem

LEASE = 0.3  # seconds: renewed every 0.1 s
LOST = "leases were lost"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "inbox.db") as opened:
        yield opened


async def test_an_update_marked_done_during_a_renewal_is_not_a_lost_lease(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    done_slowly = store.inbox_done

    async def slow_done(item_id: int, owner: str, error: str | None = None) -> bool:
        held = await done_slowly(item_id, owner, error)  # done in the database ...
        await asyncio.sleep(3 * LEASE)  # ... while the worker still counts it running
        return held

    monkeypatch.setattr(store, "inbox_done", slow_done)
    await store.inbox_put("test", 1, "lane-1", "{}")
    worker = InboxWorker(store, "test", _quick, lease_seconds=LEASE, poll_seconds=0.05)
    with caplog.at_level(logging.WARNING, logger="bot.scheduling.inbox"):
        await worker.start()
        await asyncio.sleep(4 * LEASE)  # several renewals while it is being marked done
        await worker.stop()
    assert worker.finished == 1
    assert LOST not in caplog.text


async def test_a_lease_another_replica_took_is_reported(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def stalls(item: InboxItem) -> None:
        started.set()
        await release.wait()

    await store.inbox_put("test", 1, "lane-1", "{}")
    worker = InboxWorker(store, "test", stalls, lease_seconds=LEASE, poll_seconds=0.05)
    with caplog.at_level(logging.WARNING, logger="bot.scheduling.inbox"):
        await worker.start()
        await asyncio.wait_for(started.wait(), 10)
        await store.seam.execute("UPDATE inbox SET owner = 'other replica'")  # taken over
        await asyncio.sleep(2 * LEASE)
        release.set()
        await worker.stop()
    assert "1 of 1 leases were lost" in caplog.text


async def _quick(item: InboxItem) -> None:
    return None
