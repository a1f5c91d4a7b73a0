"""Plugin key-value data (bot.storage.kv)."""

from __future__ import annotations

import asyncio

from bot.storage import Storage
from tests.conformance.conftest import Backend


async def test_values_round_trip_per_plugin(backend: Backend) -> None:
    async with backend.open() as store:
        assert await store.kv_get("p", "missing") is None
        await store.kv_set("p", "a", {"n": [1, 2], "s": "花生", "f": 1.5, "b": True, "z": None})
        await store.kv_set("p", "a", {"n": [3]})  # replaces
        await store.kv_set("q", "a", "other plugin")
    async with backend.open() as store:
        assert await store.kv_get("p", "a") == {"n": [3]}
        assert await store.kv_get("q", "a") == "other plugin"


async def test_items_delete_and_prefixes(storage: Storage) -> None:
    for key in ("job:2", "job:1", "jobs", "other"):
        await storage.kv_set("p", key, key.upper())
    await storage.kv_set("q", "job:3", 3)
    assert await storage.kv_items("p", "job:") == [("job:1", "JOB:1"), ("job:2", "JOB:2")]
    assert [k for k, _ in await storage.kv_items("p")] == ["job:1", "job:2", "jobs", "other"]
    assert await storage.kv_delete("p", "job:1") is True
    assert await storage.kv_delete("p", "job:1") is False
    assert await storage.kv_items("p", "job:") == [("job:2", "JOB:2")]


async def test_increment_is_atomic(backend: Backend) -> None:
    async with backend.open() as one, backend.open() as two:
        results = await asyncio.gather(
            *(store.kv_increment("p", "ids") for store in (one, two) for _ in range(50))
        )
        assert sorted(results) == list(range(1, 101))
        assert await one.kv_get("p", "ids") == 100
        assert await one.kv_increment("p", "other") == 1


async def test_forgetting_history_keeps_plugin_data(storage: Storage) -> None:
    await storage.kv_set("p", "tg:-1", "kept")
    await storage.clear_chat("tg:-1", "a", "A")
    await storage.delete_older_than(-1)
    await storage.migrate_chat("tg:-1", "tg:-100")
    assert await storage.kv_get("p", "tg:-1") == "kept"
