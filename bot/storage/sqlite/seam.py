"""The SQLite side of the seam (:mod:`bot.storage.sql.seam`) and its dialect.

Reads go to the reader connection (committed data only), writes to the writer under its lock
(:mod:`.connection`). Shared SQL's ``$1`` placeholders are SQLite's ``?1``: numbered, so one
parameter may appear twice, as in PostgreSQL.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from functools import lru_cache

import aiosqlite

from bot.storage.sql.seam import Row
from bot.storage.sqlite.connection import Database

__all__ = ["NOW", "SQLiteDialect", "SQLiteSeam", "sqlite_sql"]

NOW = "((julianday('now') - 2440587.5) * 86400.0)"  # seconds since the epoch, to the ms
_PLACEHOLDER = re.compile(r"\$(\d+)")


@lru_cache(maxsize=1024)
def sqlite_sql(sql: str) -> str:
    """Shared SQL (``$1``) as SQLite reads it (``?1``)."""
    return _PLACEHOLDER.sub(r"?\1", sql)


class SQLiteDialect:
    today = "date('now')"
    now = NOW
    bytewise = ""  # SQLite's BINARY collation already compares the UTF-8 bytes
    for_update = ""  # BEGIN IMMEDIATE holds the whole file's write lock

    def text(self, value: str) -> str:
        return value  # SQLite text holds NUL

    def starts_with(self, text: str, prefix: str) -> str:
        return f"substr({text}, 1, length({prefix})) = {prefix}"

    def contains(self, text: str, part: str) -> str:
        return f"instr({text}, {part}) > 0"

    def lower(self, text: str) -> str:
        return f"unicode_lower({text})"  # lower() knows ASCII only (connection.py)

    def json_length(self, column: str) -> str:
        return f"json_array_length({column})"

    def int_of(self, text: str) -> str:
        return f"CAST({text} AS INTEGER)"

    def in_array(self, column: str, param: str, kind: str) -> str:
        return f"{column} IN (SELECT value FROM json_each({param}))"

    def array(self, values: Iterable[int | str]) -> object:
        return json.dumps(list(values))

    def conversation_page(
        self, columns: str, *, limit: int, after: str, before: str, newest_first: bool = False
    ) -> str:
        # SQLite keeps the row id in every index entry: turns_by_conversation is (conv_key, id).
        order = " DESC" if newest_first else ""
        return (
            f"SELECT {columns} FROM turns WHERE conv_key = $1 AND id > {after}"
            f" AND id < {before} ORDER BY id{order} LIMIT {int(limit)}"
        )


class _Tx:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def fetch(self, sql: str, *args: object) -> list[Row]:
        return list(await self._conn.execute_fetchall(sqlite_sql(sql), args))

    async def execute(self, sql: str, *args: object) -> int:
        cursor = await self._conn.execute(sqlite_sql(sql), args)
        return max(cursor.rowcount, 0)

    async def executemany(self, sql: str, args: Sequence[Sequence[object]]) -> None:
        await self._conn.executemany(sqlite_sql(sql), args)

    async def lock(self, purpose: str) -> None:
        pass  # BEGIN IMMEDIATE: this transaction already holds the file's write lock


class SQLiteSeam:
    """:class:`bot.storage.sql.seam.Database` over one SQLite file."""

    dialect = SQLiteDialect()

    def __init__(self, db: Database) -> None:
        self._db = db

    async def fetch(self, sql: str, *args: object) -> list[Row]:
        return list(await self._db.reader.execute_fetchall(sqlite_sql(sql), args))

    async def execute(self, sql: str, *args: object) -> int:
        async with self._db.writing() as conn:
            return await _Tx(conn).execute(sql, *args)

    async def write(self, sql: str, *args: object) -> list[Row]:
        async with self._db.writing() as conn:
            return list(await conn.execute_fetchall(sqlite_sql(sql), args))

    async def executemany(self, sql: str, args: Sequence[Sequence[object]]) -> None:
        async with self._db.writing() as conn:
            await conn.executemany(sqlite_sql(sql), args)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Tx]:
        async with self._db.transaction() as conn:
            yield _Tx(conn)
