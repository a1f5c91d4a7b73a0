"""The SQLite backend itself: schema versions and migrations, WAL, query plans, triggers, the
window cache. Behaviour every backend shares is in ``tests/conformance/``."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.context import ChatContext, ChatType
from bot.errors import StoreError
from bot.memory.search import search_form
from bot.memory.store import Audience, MemoryStore
from bot.storage.sqlite import SQLiteStore
from bot.storage.sqlite.connection import statements
from bot.storage.sqlite.memories import SEARCH_SQL, SEARCH_TURNS_SQL
from bot.storage.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION
from bot.values import NewTurn, TurnStatus, Usage


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "m.db") as opened:
        yield opened


def turn(conv: str = "tg:1", text: str = "hi", chat: str = "tg:1", user: str = "u1") -> NewTurn:
    return NewTurn(conv, chat, user, f"name-{user}", text, None)


async def answered(store: SQLiteStore, conv: str, text: str, answer: str, chat: str = "") -> int:
    turn_id = await store.begin_turn(turn(conv, text, chat or conv))
    await store.complete_turn(
        turn_id, [{"role": "assistant", "content": answer}], Usage(10, 2), "m"
    )
    return turn_id


async def test_clear_leaves_no_row_behind(tmp_path: Path) -> None:
    """The behaviour is in the conformance suite; here, what the file holds afterwards."""
    path = tmp_path / "h.db"
    async with SQLiteStore(path) as store:
        await answered(store, "tg:1", "a", "b")
        await answered(store, "tg:1:u:5", "c", "d", chat="tg:1")
        await answered(store, "tg:1:t:3", "e", "f", chat="tg:1")
        await answered(store, "tg:12", "neighbour", "kept")
        await store.reset("tg:1", "tg:1", "u1")
        result = await store.clear_chat("tg:1", "admin7", "Alice Admin")
        audit = await store.clear_audit("tg:1")
        assert await store.load_window("tg:12", 5)
        assert not await store.load_window("tg:1:u:5", 5)
    assert (result.turns, result.messages) == (3, 6)
    assert audit[0]["actor_id"] == "admin7"
    assert audit[0]["actor_name"] == "Alice Admin"
    assert audit[0]["deleted_turns"] == 3
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT count(*) FROM turns WHERE chat_key='tg:1'").fetchone() == (0,)
        assert raw.execute("SELECT count(*) FROM resets").fetchone() == (0,)


async def test_wal_and_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    async with SQLiteStore(path):
        pass
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert raw.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        async with SQLiteStore(path):
            pass


async def test_window_query_uses_the_index(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    async with SQLiteStore(path):
        pass
    with sqlite3.connect(path) as raw:
        plan = raw.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM turns WHERE conv_key = ? AND id > 0"
            " ORDER BY id DESC LIMIT 5",
            ("x",),
        ).fetchall()
    detail = " ".join(str(row[-1]) for row in plan)
    assert "turns_by_conversation" in detail
    assert "TEMP B-TREE" not in detail


async def test_not_a_database_is_a_store_error_and_leaks_no_thread(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    path.write_bytes(b"this is not sqlite" * 100)
    before = set(threading.enumerate())
    with pytest.raises(StoreError, match="cannot open"):
        async with SQLiteStore(path):
            pass
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=5)  # an unclosed connection's thread would block interpreter exit
        assert not thread.is_alive(), thread.name


def test_window_cache_ignores_reads_overtaken_by_writes() -> None:
    from bot.storage.sqlite.window_cache import WindowCache
    from bot.values import StoredTurn

    cache = WindowCache()
    epoch = cache.epoch
    user = {"role": "user", "content": "x"}
    cache.began("k", StoredTurn(1, "u", "U", TurnStatus.PENDING, (user,)))  # a write lands
    cache.put("k", "c", [], capacity=5, version=1, epoch=epoch)  # the older read arrives
    assert cache.get("k", 5, version=1) is None
    cache.put("k", "c", [], capacity=5, version=1, epoch=cache.epoch)
    assert cache.get("k", 5, version=1) == []
    assert cache.get("k", 5, version=2) is None


async def test_schema_10_keeps_every_turn_with_its_indexes_and_triggers(tmp_path: Path) -> None:
    path = tmp_path / "v9.db"
    with sqlite3.connect(path) as raw:
        for script in MIGRATIONS[:9]:
            raw.executescript(script)
        raw.execute("PRAGMA user_version = 9")
        raw.executemany(
            "INSERT INTO turns (conv_key, chat_key, user_id, user_text, answer, status,"
            " created_at) VALUES ('tg:1', 'tg:1', 'u', ?, ?, ?, 0)",
            [
                ("kept", json.dumps([{"role": "assistant", "content": "yes"}]), "answered"),
                ("left pending", None, "pending"),
                ("removed", None, "unanswered"),
            ],
        )
        raw.execute("DELETE FROM turns WHERE user_text = 'removed'")  # the sequence stays at 3
        raw.execute("INSERT INTO turns_fts (rowid, body, scope) VALUES (1, 'kept', 'c')")
    async with SQLiteStore(path) as store:
        window = await store.load_window("tg:1", 10)
        newest = await answered(store, "tg:1", "new", "answer")
    assert [(t.turn_id, t.status) for t in window] == [
        (1, TurnStatus.ANSWERED),
        (2, TurnStatus.UNANSWERED),  # pending for days, owner unknown: closed as interrupted
    ]
    assert newest == 4  # ids are never reused
    with sqlite3.connect(path) as raw:
        names = {r[0] for r in raw.execute("SELECT name FROM sqlite_master")}
        assert {"turns_fts_delete", "turns_usage", "turns_usage_undelivered"} <= names
        assert {"turns_by_conversation", "turns_by_chat", "turns_by_chat_time"} <= names
        assert raw.execute("SELECT turns FROM usage_daily").fetchall() == [(1,)]
        raw.execute("DELETE FROM turns WHERE id = 1")
        assert raw.execute("SELECT count(*) FROM turns_fts WHERE rowid = 1").fetchone() == (0,)


async def test_turns_from_before_the_memory_schema_are_indexed(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    with sqlite3.connect(path) as raw:
        for script in MIGRATIONS[:3]:
            raw.executescript(script)
        raw.execute("PRAGMA user_version = 3")
        raw.execute(
            "INSERT INTO turns (conv_key, chat_key, user_id, user_text, status, created_at)"
            " VALUES ('tg:1', 'tg:1', 'u', '我对花生过敏', 'answered', 0)"
        )
    async with SQLiteStore(path) as store:
        memories = MemoryStore(store)
        assert await memories.sync_turns(batch=1) == 1
        assert await memories.sync_turns() == 0
        found = await memories.search_turns("tg:1", "花生", before_turn_id=2)
        assert [(t.turn_id, t.user_name, t.text) for t in found] == [(1, "", "我对花生过敏")]


async def test_searches_use_the_fts_index_and_primary_keys(store: SQLiteStore) -> None:
    plans = {
        SEARCH_SQL: ('"x"', "k:u:1", "k", "1", "telegram:", 1.0, 5),
        SEARCH_TURNS_SQL: ('"x"', 5, "k", 1.0, 5),
    }
    for sql, args in plans.items():
        rows = await store.database.reader.execute_fetchall("EXPLAIN QUERY PLAN " + sql, args)
        details = [str(row[3]) for row in rows]
        scans = [d for d in details if d.startswith("SCAN")]
        assert len(scans) == 1 and "VIRTUAL TABLE INDEX 0:M" in scans[0], details
        assert any("USING INTEGER PRIMARY KEY" in d for d in details), details


def test_migration_statements_keep_trigger_bodies_whole() -> None:
    for script in MIGRATIONS[:3]:  # the steps that shipped split exactly as before
        assert statements(script) == [s.strip() for s in script.split(";") if s.strip()]
    triggers = [s for s in statements(MIGRATIONS[3]) if s.startswith("CREATE TRIGGER")]
    assert len(triggers) == 2 and all(t.endswith("END") for t in triggers)
    assert statements("SELECT 'a;b'; SELECT 2") == ["SELECT 'a;b'", "SELECT 2"]


async def test_old_memories_get_their_conversation_in_the_migration(tmp_path: Path) -> None:
    """Schema v11: rows from before it belong to their turn's conversation, else the chat's
    shared one (a group) or the private chat's; their index rows follow."""
    path = tmp_path / "v9.db"
    with sqlite3.connect(path) as raw:
        for script in MIGRATIONS[:9]:
            for statement in statements(script):
                raw.execute(statement)
        raw.execute("PRAGMA user_version = 9")
        raw.execute(
            "INSERT INTO turns (id, conv_key, chat_key, user_id, user_text, status, created_at)"
            " VALUES (5, 'tg:-1:u:2', 'tg:-1', '2', 'x', 'answered', 0)"
        )
        rows = [
            (1, "tg:-1", "1", "member", "apple one", None),
            (2, "tg:-1", "2", "member", "apple two", 5),
            (3, "tg:9", "9", "private", "apple three", None),
            (4, "tg:-1", "3", "chat", "apple four", None),
        ]
        for memory_id, chat, user, scope, text, turn_id in rows:
            raw.execute(
                "INSERT INTO memories (id, chat_key, user_id, scope, text, source_turn_id,"
                " created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, 'user', 0)",
                (memory_id, chat, user, scope, text, turn_id),
            )
            raw.execute(
                "INSERT INTO memories_fts (rowid, body, scope) VALUES (?, ?, 'stale')",
                (memory_id, search_form(text)),
            )
    async with SQLiteStore(path) as store:
        memories = MemoryStore(store)
        keys = {m.memory_id: m.conversation_key for m in await memories.list("tg:-1")}
        assert keys == {1: "tg:-1", 2: "tg:-1:u:2", 4: "tg:-1"}
        assert [m.conversation_key for m in await memories.list("tg:9")] == ["tg:9:u:9"]

        def ask(chat: str, user: str, key: str) -> Audience:
            return Audience(chat, key, user)

        found = await memories.search(ask("tg:-1", "7", "tg:-1"), "apple", min_score=0)
        assert sorted(m.memory_id for m in found) == [1, 4]  # the shared conversation's
        found = await memories.search(ask("tg:-1", "7", "tg:-1:u:7"), "apple", min_score=0)
        assert found == []  # under /scope user, nobody else's
        found = await memories.search(ask("tg:-1", "2", "tg:-1:u:2"), "apple", min_score=0)
        assert [m.memory_id for m in found] == [2]
        found = await memories.search(ask("tg:9", "9", "tg:9:u:9"), "apple", min_score=0)
        assert [m.memory_id for m in found] == [3]


async def test_triggers_delete_index_rows_and_vectors(tmp_path: Path) -> None:
    """Deletes by any writer (here a plain sqlite3 connection) leave nothing indexed."""
    path = tmp_path / "h.db"
    async with SQLiteStore(path) as store:
        ctx = ChatContext("tg", "-5", ChatType.GROUP, "1", "A")
        memory = await MemoryStore(store).add(ctx, "the wifi password is on the fridge")
        await store.put_vectors("m", [(memory.memory_id, [1.0])])
        await answered(store, "tg:-5", "my cat is called Miso", "ok")
        assert await store.index_turns() == 1
    with sqlite3.connect(path) as raw:
        raw.execute("DELETE FROM memories")
        raw.execute("DELETE FROM turns")
        assert raw.execute("SELECT count(*) FROM memories_fts WHERE rowid > 0").fetchone() == (0,)
        assert raw.execute("SELECT count(*) FROM turns_fts WHERE rowid > 0").fetchone() == (0,)
        assert raw.execute("SELECT count(*) FROM memory_vectors").fetchone() == (0,)
        assert raw.execute("SELECT count(*) FROM usage_daily").fetchone() == (1,)  # kept


async def test_stores_opening_one_new_file_at_once_all_open(tmp_path: Path) -> None:
    """Replicas (or the console beside the bot) starting together on a file nobody made yet:
    the switch to WAL and the migrations wait for each other instead of failing."""
    for attempt in range(20):  # the race is rare: without the wait, about 1 open in 60 failed
        stores = [SQLiteStore(tmp_path / f"new-{attempt}.db") for _ in range(8)]
        try:
            await asyncio.gather(*(store.open() for store in stores))
            assert {await store.reset_point("c") for store in stores} == {0}
        finally:
            await asyncio.gather(*(store.close() for store in stores))


async def test_a_turns_reads_share_one_probe_and_follow_other_writers(tmp_path: Path) -> None:
    """The window, the mark and the chatter, read together as a turn reads them, cost one
    ``PRAGMA data_version`` while nothing changed; another process's write is seen at once."""
    from bot.values import WindowMark

    async def read(store: SQLiteStore) -> tuple[int, WindowMark | None, list[str]]:
        window, mark, heard = await asyncio.gather(
            store.load_window("tg:1", 10),
            store.load_window_mark("tg:1"),
            store.load_overheard("tg:1", 0),
        )
        return len(window), mark, [o.text for o in heard]

    async with SQLiteStore(tmp_path / "m.db") as mine, SQLiteStore(tmp_path / "m.db") as other:
        await answered(mine, "tg:1", "q", "a")
        await mine.save_window_mark("tg:1", "tg:1", WindowMark(1, "s"))
        assert await read(mine) == (1, WindowMark(1, "s"), [])
        ran: list[str] = []
        for conn in (mine.database.reader, mine.database.writer):
            await conn.set_trace_callback(ran.append)
        assert await read(mine) == (1, WindowMark(1, "s"), [])
        # (run on the loop's thread, it is sent with no busy wait: bot.storage.sqlite.inline)
        assert [each for each in ran if "busy_timeout" not in each] == ["PRAGMA data_version"]
        await other.record_overheard(turn("tg:1", "said"), keep=5)
        await other.save_window_mark("tg:1", "tg:1", WindowMark(2, "t"))
        assert await read(mine) == (1, WindowMark(2, "t"), ["said"])


def test_row_cache_ignores_reads_overtaken_by_writes_and_stays_bounded() -> None:
    from bot.storage.sqlite.row_cache import RowCache

    cache: RowCache[str] = RowCache(len, max_conversations=2, max_bytes=10**6)
    epoch = cache.epoch
    cache.forget("k")  # a write lands
    cache.put("k", "old", version=1, epoch=epoch)  # the older read arrives
    assert cache.get("k", version=1) is None
    cache.put("k", "new", version=1, epoch=cache.epoch)
    held = cache.get("k", version=1)
    assert held is not None and held.value == "new"
    assert cache.get("k", version=2) is None  # another process wrote
    for key in ("a", "b"):
        cache.put(key, key, version=1, epoch=cache.epoch)
    assert len(cache) == 2 and cache.get("k", version=1) is None  # least recently used went
    cache.put("big", "x" * 10**6, version=1, epoch=cache.epoch)
    assert len(cache) == 0 and cache.size == 0  # too big alone: not kept


async def test_reads_sharing_a_probe_survive_one_of_them_cancelled() -> None:
    from typing import cast

    from bot.storage.sqlite.connection import Database
    from bot.storage.sqlite.row_cache import VersionProbe

    class Slow:
        probes = 0

        async def external_version(self) -> int:
            self.probes += 1
            await asyncio.sleep(0.01)
            return 7

    db = Slow()
    probe = VersionProbe(cast(Database, db))
    first, second, third = (asyncio.ensure_future(probe.version()) for _ in range(3))
    await asyncio.sleep(0)
    first.cancel()  # the one that probes: the others probe for themselves
    assert await asyncio.gather(second, third) == [7, 7]
    assert first.cancelled() and db.probes == 3
    fourth, fifth = (asyncio.ensure_future(probe.version()) for _ in range(2))
    await asyncio.sleep(0)
    fifth.cancel()  # one that waits: the first is not disturbed
    assert await fourth == 7 and fifth.cancelled() and db.probes == 4
