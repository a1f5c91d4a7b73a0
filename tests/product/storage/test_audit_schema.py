"""The audit trail's schema step (SQLite v16, PostgreSQL core 4): a database from before it
keeps every row, and the resets it stored become the trail's first entries."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bot.config.storage_url import parse_storage_url
from bot.storage.postgres.migrations import CORE_STEPS, create_schema, migrate
from bot.storage.sqlite import SQLiteStore
from bot.storage.sqlite.connection import statements
from bot.storage.sqlite.migrations import MIGRATIONS
from bot.values import AuditAction
from tests import postgres_support

_OLD_ROWS = (
    "INSERT INTO turns (conv_key, chat_key, user_id, user_name, user_text, status, created_at)"
    " VALUES ('tg:1:u:5', 'tg:1', '5', 'Eve', 'hi', 'answered', 100)",
    "INSERT INTO resets (conv_key, chat_key, after_turn_id, by_user, at)"
    " VALUES ('tg:1:u:5', 'tg:1', 1, '5', 200)",
    "INSERT INTO resets (conv_key, chat_key, after_turn_id, by_user, at)"
    " VALUES ('tg:1', 'tg:1', 1, '7', 150)",
    "INSERT INTO clear_audit (chat_key, actor_id, actor_name, at, deleted_turns,"
    " deleted_messages) VALUES ('tg:1', '7', 'Ann', 300, 4, 8)",
)


def _expected() -> list[tuple[float, str, str, str]]:
    return [
        (150.0, "reset", "7", "tg:1"),
        (200.0, "reset", "5", "tg:1:u:5"),
        (300.0, "clear", "7", ""),
    ]


async def test_sqlite_16_keeps_the_rows_and_lists_the_old_resets(tmp_path: Path) -> None:
    path = tmp_path / "v15.db"
    with sqlite3.connect(path) as raw:
        for script in MIGRATIONS[:15]:
            for statement in statements(script):
                raw.execute(statement)
        raw.execute("PRAGMA user_version = 15")
        for statement in _OLD_ROWS:
            raw.execute(statement)
    async with SQLiteStore(path) as store:
        entries = await store.audit("tg:1")
        assert await store.conversations() == [("tg:1:u:5", 1)]
        assert await store.reset_point("tg:1:u:5") == 1
        await store.record_change("tg:1", "7", "Ann", AuditAction.SCOPE, "chat -> user")
        assert len(await store.audit("tg:1")) == 4
    assert [(e.at, e.action.value, e.actor_id, e.conversation_key) for e in entries] == _expected()


@pytest.mark.skipif(postgres_support.pg_base_url() is None, reason=postgres_support.HOW_TO_RUN)
async def test_postgres_core_4_keeps_the_rows_and_lists_the_old_resets() -> None:
    import asyncpg

    from bot.storage.postgres import PostgresStore

    parsed = parse_storage_url(postgres_support.fresh_pg_url())
    assert parsed.dsn is not None and parsed.schema is not None
    conn = await asyncpg.connect(parsed.dsn)
    try:
        await create_schema(conn, parsed.schema)
        await conn.execute(f'SET search_path TO "{parsed.schema}"')
        await migrate(conn, [("core", CORE_STEPS[:3])])
        for statement in _OLD_ROWS:
            await conn.execute(statement)
    finally:
        await conn.close()
    async with PostgresStore(parsed.dsn, schema=parsed.schema) as store:
        entries = await store.audit("tg:1")
        assert await store.conversations() == [("tg:1:u:5", 1)]
        await store.record_change("tg:1", "7", "Ann", AuditAction.SCOPE, "chat -> user")
        assert len(await store.audit("tg:1")) == 4
    assert [(e.at, e.action.value, e.actor_id, e.conversation_key) for e in entries] == _expected()
