"""The PostgreSQL database: an asyncpg pool, transactions, the schema, friendly errors; and
the PostgreSQL side of the seam (:mod:`bot.storage.sql.seam`) with its dialect.

What the parts of the backend (and the memory search and coordination mixins) use:

* ``pool`` -- the :class:`asyncpg.Pool`; every connection has ``search_path`` set to the
  configured schema (then ``public``, where extensions usually live);
* ``acquire()`` -- one pooled connection (autocommit: each statement is its own transaction);
* ``transaction()`` -- one pooled connection inside ``BEGIN`` ... ``COMMIT`` (``ROLLBACK`` on
  any error or cancellation);
* ``schema`` -- the schema's name (``public`` unless ``?schema=``);
* ``lock_key(purpose)`` -- a ``pg_advisory_*lock`` key for ``purpose`` *in this schema*
  (:func:`~bot.storage.postgres.migrations.advisory_key`): several bots may share one
  database, each in its own schema, and must not wait for one another.

The pool holds up to ``?pool_size=N`` connections (default :data:`DEFAULT_POOL_SIZE`), opened
as needed. A connection the server closed while idle (a restart, a failover) is replaced on the
next acquire once asyncpg has seen it close.

A connection refused, an authentication failure or a missing database raises
:class:`~bot.errors.StoreError` naming the URL as :meth:`StorageURL.shown` prints it: the
password never reaches an error or a log line.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import asyncpg

from bot.config.storage_url import StorageURL
from bot.errors import StoreError
from bot.storage.bounds import storable_text
from bot.storage.postgres.migrations import Component, advisory_key, create_schema, migrate
from bot.storage.sql.seam import Row

__all__ = ["DEFAULT_POOL_SIZE", "Database", "PostgresDialect", "PostgresSeam", "count_of"]

log = logging.getLogger(__name__)

DEFAULT_POOL_SIZE = 10  # connections per process; ``?pool_size=N`` in the URL overrides it
_CONNECT_TIMEOUT = 10.0  # seconds, per connection attempt
_CLOSE_TIMEOUT = 10.0  # seconds for busy connections to finish at close

# What asyncpg raises when the server cannot be used at all, as opposed to a failed query.
_UNREACHABLE: tuple[type[BaseException], ...] = (
    OSError,  # refused, unreachable, DNS (socket.gaierror)
    TimeoutError,
    asyncpg.InvalidAuthorizationSpecificationError,  # unknown role, pg_hba refuses
    asyncpg.InvalidPasswordError,
    asyncpg.InvalidCatalogNameError,  # no such database
    asyncpg.CannotConnectNowError,  # starting up, shutting down
    asyncpg.TooManyConnectionsError,
    asyncpg.InsufficientPrivilegeError,  # may not create the schema
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.InterfaceError,
    ValueError,  # a malformed DSN (asyncpg parses it)
)


def _pool_size(dsn: str) -> tuple[str, int]:
    """Take our ``pool_size`` out of the DSN (libpq and the server would not know it)."""
    parts = urlsplit(dsn)
    query = parse_qsl(parts.query, keep_blank_values=True)
    size = DEFAULT_POOL_SIZE
    kept: list[tuple[str, str]] = []
    for key, value in query:
        if key == "pool_size":
            if not value.isdigit() or int(value) < 1:
                raise StoreError(f"storage.url: pool_size={value!r} must be a whole number >= 1")
            size = int(value)
        else:
            kept.append((key, value))
    return urlunsplit((*parts[:3], urlencode(kept, quote_via=quote), parts[4])), size


class Database:
    """One PostgreSQL database (and schema) through an asyncpg pool; every part shares one."""

    def __init__(self, dsn: str, schema: str | None = None) -> None:
        self._url = StorageURL("postgresql", dsn=dsn, schema=schema)
        self.dsn, self.pool_size = _pool_size(dsn)  # the DSN libpq reads (no pool_size)
        self._schema = schema
        self._current_schema = schema or "public"  # as the server resolves it, once open
        self._pool: asyncpg.Pool | None = None

    @property
    def shown(self) -> str:
        """The URL without its password, for logs and errors."""
        return self._url.shown()

    @property
    def schema(self) -> str:
        """The schema every table lives in (without ``?schema=``: the server's default)."""
        return self._current_schema

    def lock_key(self, purpose: str) -> int:
        """:func:`advisory_key` of ``purpose`` in this schema."""
        return advisory_key(self.schema, purpose)

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise StoreError("the history store is not open")
        return self._pool

    async def open(self, components: Iterable[Component]) -> None:
        """Connect, create the schema if missing, and migrate every component."""
        settings = {"search_path": f'"{self._schema}", public'} if self._schema else {}
        try:
            self._pool = await asyncpg.create_pool(
                self.dsn,
                min_size=1,
                max_size=self.pool_size,
                timeout=_CONNECT_TIMEOUT,
                server_settings=settings,
                reset=_keep_session,
            )
            async with self._pool.acquire() as conn:
                if self._schema:
                    await create_schema(conn, self._schema)
                self._current_schema = await migrate(conn, components)
                # DDL may have changed what cached statements return; start afresh.
                await conn.reload_schema_state()
        except _UNREACHABLE as exc:
            await self.close()
            raise StoreError(self.explain(exc)) from None
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close every connection; one still busy after ``_CLOSE_TIMEOUT`` is cut off."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            await asyncio.wait_for(pool.close(), _CLOSE_TIMEOUT)
        except TimeoutError:
            log.warning("storage: connections still busy at close, terminated url=%s", self.shown)
            pool.terminate()

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[asyncpg.Connection]:
        """One pooled connection in autocommit mode."""
        async with self.pool.acquire() as conn:
            yield conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[asyncpg.Connection]:
        """One pooled connection inside a transaction (read committed)."""
        async with self.pool.acquire() as conn, conn.transaction():
            yield conn

    def explain(self, exc: BaseException) -> str:
        """Why the database cannot be used, in words safe for a log (no password)."""
        if isinstance(exc, socket.gaierror):
            reason = "unknown host"
        elif isinstance(exc, ConnectionRefusedError):
            reason = "connection refused (is the server running, on that host and port?)"
        elif isinstance(exc, TimeoutError):
            reason = "timed out"
        elif isinstance(exc, asyncpg.InvalidCatalogNameError):
            reason = f"no such database ({exc})"
        elif isinstance(
            exc, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError
        ):
            reason = f"authentication failed ({exc})"
        else:
            reason = f"{type(exc).__name__}: {exc}"
        return f"cannot open PostgreSQL storage {self.shown}: {self._redact(reason)}"

    def _redact(self, text: str) -> str:
        password = self._url.password()
        if password:
            text = text.replace(password, "***").replace(quote(password, safe=""), "***")
        return text


async def _keep_session(conn: asyncpg.Connection) -> None:
    """What the pool runs on a connection it takes back, after asyncpg's own clean-up (which
    rolls back a transaction left open): nothing. asyncpg's default sends ``SELECT
    pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL``, one more round trip per
    statement run on the pool (half of a burst's trips to PostgreSQL, each holding the
    connection). Nothing here leaves session state for it to undo: locks are transaction-level
    (``pg_advisory_xact_lock``), no ``SET`` (``search_path`` is a connection setting), no
    ``LISTEN``, no cursor outside a transaction; a temporary table (the portable import's
    staging, ``ON COMMIT DELETE ROWS``) outlives the default reset too."""


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

    write = fetch  # a write's RETURNING rows come back as a read's do

    async def executemany(self, sql: str, args: Sequence[Sequence[object]]) -> None:
        await self._db.pool.executemany(sql, args)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Tx]:
        async with self._db.transaction() as conn:
            yield _Tx(conn, self._db)
