"""The SQLite history store: durability, soft resets, clears with audit, schema versioning."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from pathlib import Path

import pytest

from bot.context import Scope
from bot.errors import StoreError
from bot.history.migrations import MIGRATIONS, SCHEMA_VERSION
from bot.history.sqlite import SQLiteStore
from bot.history.store import ChatPreferences, NewTurn, TurnStatus, Usage


def turn(conv: str = "tg:1", text: str = "hi", chat: str = "tg:1", user: str = "u1") -> NewTurn:
    return NewTurn(conv, chat, user, f"name-{user}", text, None)


async def answered(store: SQLiteStore, conv: str, text: str, answer: str, chat: str = "") -> int:
    turn_id = await store.begin_turn(turn(conv, text, chat or conv))
    await store.complete_turn(
        turn_id, [{"role": "assistant", "content": answer}], Usage(10, 2), "m"
    )
    return turn_id


async def test_history_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    async with SQLiteStore(path) as store:
        await answered(store, "tg:1", "hello", "hi there")
    async with SQLiteStore(path) as store:
        window = await store.load_window("tg:1", 10)
    assert [m["content"] for t in window for m in t.messages] == ["hello", "hi there"]
    assert window[0].status is TurnStatus.ANSWERED


async def test_tool_calls_round_trip(tmp_path: Path) -> None:
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    async with SQLiteStore(tmp_path / "h.db") as store:
        turn_id = await store.begin_turn(turn())
        await store.complete_turn(
            turn_id,
            [
                {"role": "assistant", "content": None, "tool_calls": calls},
                {"role": "tool", "tool_call_id": "c1", "content": "42"},
                {"role": "assistant", "content": "it is 42"},
            ],
            Usage(),
            "m",
        )
        (stored,) = await store.load_window("tg:1", 5)
    assert stored.messages[1] == {"role": "assistant", "content": None, "tool_calls": calls}
    assert stored.messages[2] == {"role": "tool", "content": "42", "tool_call_id": "c1"}


async def test_window_is_newest_turns_oldest_first(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "h.db") as store:
        for i in range(30):
            await answered(store, "tg:1", f"q{i}", f"a{i}")
        await answered(store, "tg:2", "other chat", "x")
        window = await store.load_window("tg:1", 5)
    assert [t.messages[0]["content"] for t in window] == ["q25", "q26", "q27", "q28", "q29"]


async def test_failed_turn_keeps_user_message(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "h.db") as store:
        turn_id = await store.begin_turn(turn(text="lost?"))
        await store.fail_turn(turn_id, "LLMUnavailableError")
        (stored,) = await store.load_window("tg:1", 5)
        stats = await store.stats("tg:1")
    assert stored.status is TurnStatus.UNANSWERED
    assert stored.messages == ({"role": "user", "content": "lost?"},)
    assert stats.unanswered == 1


async def test_reset_is_a_soft_cut(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "h.db") as store:
        await answered(store, "tg:1", "before", "a")
        await answered(store, "tg:1:u:9", "other conversation", "b", chat="tg:1")
        await store.reset("tg:1", "tg:1", "u1")
        await answered(store, "tg:1", "after", "c")
        window = await store.load_window("tg:1", 10)
        other = await store.load_window("tg:1:u:9", 10)
        stats = await store.stats("tg:1")
        exported = [r async for r in store.export("tg:1")]
    assert [t.messages[0]["content"] for t in window] == ["after"]
    assert len(other) == 1
    assert (stats.turns_stored, stats.turns_in_context) == (2, 1)
    assert [r["content"] for r in exported] == ["before", "a", "after", "c"]


async def test_clear_deletes_the_chat_and_audits(tmp_path: Path) -> None:
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


async def test_concurrent_writers_never_share_a_transaction(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "h.db") as store:
        ids = await asyncio.gather(
            *(answered(store, f"tg:{i % 7}", f"q{i}", f"a{i}") for i in range(200))
        )
        windows = [await store.load_window(f"tg:{i}", 100) for i in range(7)]
    assert len(set(ids)) == 200
    for window in windows:
        for t in window:
            assert [m["role"] for m in t.messages] == ["user", "assistant"]
            assert t.messages[0]["content"][1:] == t.messages[1]["content"][1:]


async def test_preferences_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    async with SQLiteStore(path) as store:
        await store.save_preferences("tg:1", ChatPreferences(scope=Scope.THREAD))
    async with SQLiteStore(path) as store:
        prefs = await store.load_preferences()
    assert prefs == {"tg:1": ChatPreferences(scope=Scope.THREAD, system_prompt=None)}


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


async def test_window_cache_sees_another_process_writes(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    async with SQLiteStore(path) as mine, SQLiteStore(path) as other:
        await answered(mine, "tg:1", "from me", "a")
        assert len(await mine.load_window("tg:1", 10)) == 1  # now cached
        await answered(other, "tg:1", "from the other process", "b")
        window = await mine.load_window("tg:1", 10)
        assert [t.messages[0]["content"] for t in window] == ["from me", "from the other process"]
        await other.reset("tg:1", "tg:1", "u")
        assert await mine.load_window("tg:1", 10) == []


async def test_window_cache_follows_own_writes(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "h.db") as store:
        await answered(store, "tg:1", "one", "1")
        assert len(await store.load_window("tg:1", 2)) == 1
        pending = await store.begin_turn(turn("tg:1", "two"))
        (_, second) = await store.load_window("tg:1", 2)
        assert second.status is TurnStatus.PENDING
        await store.fail_turn(pending, "x")
        await answered(store, "tg:1", "three", "3")
        window = await store.load_window("tg:1", 2)
        assert [(t.messages[0]["content"], t.status) for t in window] == [
            ("two", TurnStatus.UNANSWERED),
            ("three", TurnStatus.ANSWERED),
        ]
        assert window[1].messages[1] == {"role": "assistant", "content": "3"}
        assert len(await store.load_window("tg:1", 50)) == 3  # larger window: read from disk
        await store.clear_chat("tg:1", "a", "A")
        assert await store.load_window("tg:1", 2) == []


def test_window_cache_ignores_reads_overtaken_by_writes() -> None:
    from bot.history.store import StoredTurn
    from bot.history.window_cache import WindowCache

    cache = WindowCache()
    epoch = cache.epoch
    user = {"role": "user", "content": "x"}
    cache.began("k", StoredTurn(1, "u", "U", TurnStatus.PENDING, (user,)))  # a write lands
    cache.put("k", "c", [], capacity=5, version=1, epoch=epoch)  # the older read arrives
    assert cache.get("k", 5, version=1) is None
    cache.put("k", "c", [], capacity=5, version=1, epoch=cache.epoch)
    assert cache.get("k", 5, version=1) == []
    assert cache.get("k", 5, version=2) is None


async def test_an_undelivered_answer_is_kept_but_not_counted_answered(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "h.db") as store:
        delivered = await answered(store, "tg:1", "first", "got it")
        lost = await answered(store, "tg:1", "second", "never arrived")
        pending = await store.begin_turn(turn("tg:1", "third"))
        assert await store.mark_undelivered(lost, "TelegramRetryAfter: flood") is True
        assert await store.mark_undelivered(lost, "again") is False  # once
        assert await store.mark_undelivered(pending, "x") is False  # never answered
        stats = await store.stats("tg:1")
        window = await store.load_window("tg:1", 10)
        exported = [r async for r in store.export("tg:1")]
        [usage] = await store.daily_usage("1970-01-01")
    assert (stats.turns_stored, stats.unanswered, stats.undelivered) == (3, 0, 1)
    assert [t.status for t in window] == [
        TurnStatus.ANSWERED,
        TurnStatus.UNDELIVERED,
        TurnStatus.PENDING,
    ]
    # The model still sees what it said (and which tools it ran) the next time.
    assert window[1].messages[-1]["content"] == "never arrived"
    assert [(r["turn"], r["status"]) for r in exported if r["role"] == "assistant"] == [
        (delivered, "answered"),
        (lost, "undelivered"),
    ]
    assert usage.turns == 1  # answered turns; the tokens of both stay booked
    assert usage.usage == Usage(20, 4)


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
