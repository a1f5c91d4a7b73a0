"""The PostgreSQL side of the seam (:mod:`bot.storage.sql.seam`) and its dialect."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager

import asyncpg

from bot.storage.bounds import storable_text
from bot.storage.postgres.connection import Database
from bot.storage.sql.seam import Row

__all__ = ["PostgresDialect", "PostgresSeam", "count_of"]


def count_of(status: str) -> int:
    """The row count of a command tag such as ``DELETE 3`` or ``INSERT 0 2``."""
    try:
        return int(status.rsplit(" ", 1)[-1])
    except ValueError:
        return 0


class PostgresDialect:
    today = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD')"  # the server's clock, as SQLite
    now = "extract(epoch FROM clock_timestamp())::float8"
    bytewise = ' COLLATE "C"'  # as SQLite orders text, whatever the database's locale
    for_update = " FOR UPDATE"

    def text(self, value: str) -> str:
        return storable_text(value)  # PostgreSQL text cannot hold NUL: U+FFFD instead

    def starts_with(self, text: str, prefix: str) -> str:
        return f"starts_with({text}, {prefix})"

    def contains(self, text: str, part: str) -> str:
        return f"strpos({text}, {part}) > 0"

    def lower(self, text: str) -> str:
        return f"lower({text})"

    def json_length(self, column: str) -> str:
        return f"json_array_length({column}::json)"

    def int_of(self, text: str) -> str:
        return f"(CASE WHEN {text} ~ '^-?[0-9]{{1,18}}$' THEN {text}::bigint ELSE 0 END)"

    def in_array(self, column: str, param: str, kind: str) -> str:
        return f"{column} = any({param}::{kind}[])"

    def array(self, values: Iterable[int | str]) -> object:
        return list(values)

    def conversation_page(
        self, columns: str, *, limit: int, after: str, before: str, newest_first: bool = False
    ) -> str:
        # Bounds as row comparisons on (conv_key, id), order (conv_key, id), a constant LIMIT:
        # only that index serves it, and the LIMIT stops the walk. The plain ``conv_key = $1
        # AND id >= $2 ORDER BY id`` lets the planner walk the primary key instead, filtering
        # on conv_key: a conversation that went quiet while other chats went on cost 1 s
        # instead of 0.1 ms at 10^6 rows (docs/scaling.md).
        order = " DESC" if newest_first else ""
        return (
            f"SELECT {columns} FROM turns WHERE (conv_key, id) > ($1, {after})"
            f" AND (conv_key, id) < ($1, {before})"
            f" ORDER BY conv_key{order}, id{order} LIMIT {int(limit)}"
        )


class _Tx:
    def __init__(self, conn: asyncpg.Connection, db: Database) -> None:
        self._conn, self._db = conn, db

    async def fetch(self, sql: str, *args: object) -> list[Row]:
        return list(await self._conn.fetch(sql, *args))

    async def execute(self, sql: str, *args: object) -> int:
        return count_of(await self._conn.execute(sql, *args))

    async def executemany(self, sql: str, args: Sequence[Sequence[object]]) -> None:
        await self._conn.executemany(sql, args)

    async def lock(self, purpose: str) -> None:
        await self._conn.execute("SELECT pg_advisory_xact_lock($1)", self._db.lock_key(purpose))


class PostgresSeam:
    """:class:`bot.storage.sql.seam.Database` over the pool."""

    dialect = PostgresDialect()

    def __init__(self, db: Database) -> None:
        self._db = db

    async def fetch(self, sql: str, *args: object) -> list[Row]:
        return list(await self._db.pool.fetch(sql, *args))

    async def execute(self, sql: str, *args: object) -> int:
        return count_of(await self._db.pool.execute(sql, *args))

    async def write(self, sql: str, *args: object) -> list[Row]:
        return list(await self._db.pool.fetch(sql, *args))

    async def executemany(self, sql: str, args: Sequence[Sequence[object]]) -> None:
        await self._db.pool.executemany(sql, args)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Tx]:
        async with self._db.transaction() as conn:
            yield _Tx(conn, self._db)
