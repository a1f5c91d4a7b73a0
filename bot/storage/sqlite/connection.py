"""The SQLite database file: its two connections, the writer lock, transactions, the schema;
and the SQLite side of the seam (:mod:`bot.storage.sql.seam`) with its dialect.

Two connections: one writer, used by one coroutine at a time (an asyncio lock; coroutines sharing
one aiosqlite connection would otherwise share, and commit, each other's transaction), and one
reader that only ever sees committed data. Most writes are one statement; those of concurrent
turns go to the writer's thread together and commit together, and reads share trips to the
reader's the same way (:mod:`bot.storage.sqlite.batches`). The lock keeps a batch out of a
multi-statement transaction another coroutine has open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from functools import lru_cache
from pathlib import Path

import aiosqlite

from bot.errors import StoreError
from bot.storage.sql.seam import Row
from bot.storage.sqlite.batches import GroupCommit, ReadBatches
from bot.storage.sqlite.files import unwritable, unwritable_text
from bot.storage.sqlite.inline import InlineStatements
from bot.storage.sqlite.inline import connect as tracked_connect
from bot.storage.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION

__all__ = ["NOW", "Database", "SQLiteDialect", "SQLiteSeam", "sqlite_sql", "statements"]

log = logging.getLogger(__name__)

_OPEN_WAIT = 10.0  # seconds to wait for another process's lock at open, as busy_timeout does
_PRAGMAS = (
    "PRAGMA busy_timeout=10000",  # first: the others may wait for another process's lock
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
)


class Database:
    """One SQLite file in WAL mode through aiosqlite; every backend part shares one."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()
        # concurrent turns' statements share trips to the threads (batches.py)
        inline = InlineStatements()
        self.writes, self.reads = GroupCommit(inline, self._write_lock), ReadBatches(inline)
        self.versions = ReadBatches(inline)  # on the writer, outside its lock, as a lone read was

    async def open(self) -> aiosqlite.Connection:
        """Connect and migrate; returns the writer, not yet shared, for work at open."""
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if problems := unwritable(self.path):  # before SQLite maps -shm (see files.py)
            raise StoreError(
                f"cannot open history database {self.path}: {unwritable_text(problems)}"
            )
        try:
            self._writer = await self._connect()
            await self._migrate(self._writer)
            self._reader = await self._connect()
        except sqlite3.DatabaseError as exc:
            await self.close()
            raise StoreError(f"cannot open history database {self.path}: {exc}") from exc
        except BaseException:
            await self.close()
            raise
        return self._writer

    async def close(self) -> None:
        for conn in (self._reader, self._writer):
            if conn is not None:
                await conn.close()
        self._reader = self._writer = None

    @property
    def reader(self) -> aiosqlite.Connection:
        """The read connection: committed data only."""
        if self._reader is None:
            raise StoreError("the history store is not open")
        return self._reader

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[aiosqlite.Connection]:
        """Exclusive use of the writer connection (autocommit statements)."""
        async with self._write_lock:
            yield self.writer

    @property
    def write_lock(self) -> asyncio.Lock:
        """Held while the writer is used (:meth:`writing`, spelt out where it is hot)."""
        return self._write_lock

    @property
    def writer(self) -> aiosqlite.Connection:
        """The write connection: use it holding :attr:`write_lock`."""
        if self._writer is None:
            raise StoreError("the history store is not open")
        return self._writer

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """The writer inside ``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any error)."""
        async with self.writing() as conn:
            try:
                await conn.execute("BEGIN IMMEDIATE")
                yield conn
            except BaseException:
                # Even when cancelled, the BEGIN may already sit in aiosqlite's queue; a ROLLBACK
                # queued behind it always closes the transaction before the next writer's work.
                with contextlib.suppress(sqlite3.OperationalError):
                    await asyncio.shield(conn.execute("ROLLBACK"))
                raise
            await asyncio.shield(conn.execute("COMMIT"))

    async def external_version(self) -> int:
        """Changes whenever another connection (another process) commits to the database."""
        if self._writer is None:
            raise StoreError("the history store is not open")
        rows = await self.versions.run(self._writer, "PRAGMA data_version", (), rows=True)
        return int(rows[0][0])

    async def _connect(self) -> aiosqlite.Connection:
        conn = await tracked_connect(self.path, isolation_level=None)
        try:
            for pragma in _PRAGMAS:
                await _patiently(conn, pragma)
            # SQLite's lower() knows ASCII only; chat titles are anything (bot.storage.directory)
            await conn.create_function("unicode_lower", 1, _unicode_lower, deterministic=True)
        except BaseException:
            await conn.close()  # its thread would otherwise keep the process alive at exit
            raise
        return conn

    async def _migrate(self, conn: aiosqlite.Connection) -> None:
        applied: list[int] = []  # one log line for the lot: a new file runs every migration
        for number in range(SCHEMA_VERSION):
            await conn.execute("BEGIN IMMEDIATE")  # read the version under the write lock:
            rows = await conn.execute_fetchall("PRAGMA user_version")  # two processes may race
            version = int(next(iter(rows))[0])
            if version > number:
                await conn.execute("ROLLBACK")
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path} has schema version {version}, newer than this Parlour "
                        f"understands ({SCHEMA_VERSION}); upgrade Parlour"
                    )
                continue
            try:
                for statement in statements(MIGRATIONS[number]):
                    await conn.execute(statement)
                await conn.execute(f"PRAGMA user_version = {number + 1}")
                await conn.execute("COMMIT")
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            applied.append(number + 1)
        if applied:
            log.info(
                "history schema migrated from v%d to v%d path=%s",
                applied[0] - 1,
                applied[-1],
                self.path,
            )


def _unicode_lower(text: object) -> object:
    return text.lower() if isinstance(text, str) else text


async def _patiently(conn: aiosqlite.Connection, pragma: str) -> None:
    """Run ``pragma``, waiting out another process's lock. Switching a new file to WAL needs
    the file to itself and SQLite answers "database is locked" at once, without its busy
    handler, while a second process opens the same new file (two replicas starting together)."""
    deadline = time.monotonic() + _OPEN_WAIT
    delay = 0.01
    while True:
        try:
            await conn.execute(pragma)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.5)


def statements(script: str) -> list[str]:
    """Split a migration at the ``;`` that end statements, not those inside one.

    A trigger body (``BEGIN ...; END;``), a string literal or a comment may hold a ``;``:
    pieces are joined until SQLite itself calls the text a complete statement. (Not
    ``executescript``: it commits, and a step must run inside the runner's transaction.)
    """
    found: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\r\n;"):
                found.append(pending.strip()[:-1].strip())
            pending = ""
    if pending.strip(" \t\r\n;"):  # a last statement without its ';'
        found.append(pending.strip()[:-1].strip())
    return found


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
        db = self._db
        return list(await db.reads.run(db.reader, sqlite_sql(sql), args, rows=True))

    # One statement each, run every turn: concurrent turns' writes share a commit
    async def execute(self, sql: str, *args: object) -> int:
        db = self._db
        return int(await db.writes.run(db.writer, sqlite_sql(sql), args, rows=False))

    async def write(self, sql: str, *args: object) -> list[Row]:
        db = self._db
        return list(await db.writes.run(db.writer, sqlite_sql(sql), args, rows=True))

    async def executemany(self, sql: str, args: Sequence[Sequence[object]]) -> None:
        async with self._db.writing() as conn:
            await conn.executemany(sqlite_sql(sql), args)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Tx]:
        async with self._db.transaction() as conn:
            yield _Tx(conn)
