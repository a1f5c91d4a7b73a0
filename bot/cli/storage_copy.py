"""Copy a whole deployment between databases: ``python -m bot storage copy SRC_URL DST_URL``.

Every table of :data:`bot.storage.portable.TABLES` (history, settings, memories and their
vectors, summaries, usage, the clear audit, plugin data, deliveries, the chat directory,
knowledge bases with their documents, chunks, vectors and bindings) and the scheduler's jobs
move from SQLite to PostgreSQL, back, or between two of a kind. Both stores are opened as the
bot opens them (:func:`bot.storage.open_storage_url`), so the target's schema is created or
migrated by its own backend; then each table streams over in key order, ``batch`` rows per read
and per write transaction, ids preserved: memory stays flat however large the history.
Afterwards the target's identities move past the copied ids and its derived search indexes
(memories, messages, knowledge chunks) are completed (:meth:`PortableStore.finish`).

Idempotent: a row whose key the target already has is skipped, never added twice (a day of
usage is one row keyed by day, chat and user, so it is never counted twice either). A target
that already holds rows is refused unless ``force``: re-running an interrupted copy is what
``force`` is for; pouring one deployment into another that has its own ids is not (rows with
the same ids would be skipped, not merged). A source that does not exist is an error: opening
it would create an empty one. Only :meth:`StorageURL.shown` reaches a message.

Left out on purpose: the coordination tables replicas share (leases, rate-limit buckets, the
inbox), which hold seconds of state that only means something to the processes that wrote it;
stop the bot before copying.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bot.cli.parser import DEFAULT_BATCH
from bot.config.storage_url import StorageURL, parse_storage_url, sqlite_url
from bot.errors import ConfigError, StoreError
from bot.scheduling.portable_jobs import JobsStore
from bot.storage import Storage, open_storage_url
from bot.storage.portable import PortableStore, Table, key_of

if TYPE_CHECKING:
    import asyncpg

__all__ = [
    "CopyProgress",
    "CopyReport",
    "TableCount",
    "copy_storage",
    "parse_copy_url",
    "portable",
]


@dataclass(frozen=True, slots=True)
class TableCount:
    """One table's outcome: ``copied`` rows inserted, ``already_there`` skipped (same key)."""

    table: str
    read: int
    copied: int

    @property
    def already_there(self) -> int:
        return self.read - self.copied


@dataclass(frozen=True, slots=True)
class CopyReport:
    source: str  # shown (no password)
    target: str
    tables: tuple[TableCount, ...]

    @property
    def copied(self) -> int:
        return sum(count.copied for count in self.tables)


class CopyProgress(Protocol):
    """Told as the copy goes: a table starts (with its source's row count), rows move."""

    def start(self, table: str, total: int) -> None: ...

    def advance(self, rows: int) -> None: ...

    def finish(self) -> None: ...


def parse_copy_url(url: str, role: str) -> StorageURL:
    """``url`` parsed; a bad one is a :class:`ConfigError` naming its ``role`` (source, target)."""
    try:
        return parse_storage_url(url)
    except ConfigError as exc:
        raise ConfigError(f"{role} URL: {str(exc).removeprefix('storage.url: ')}") from None


async def copy_storage(
    source: StorageURL,
    target: StorageURL,
    *,
    force: bool = False,
    batch: int = DEFAULT_BATCH,
    progress: CopyProgress | None = None,
    source_jobs: Path | None = None,
    target_jobs: Path | None = None,
) -> CopyReport:
    """Copy every row of ``source`` into ``target`` (see the module docstring)."""
    if batch < 1:
        raise ConfigError("batch must be at least 1")
    if _same_database(source, target):
        raise StoreError(f"source and target are the same database: {source.shown()}")
    await _require_source(source)
    if target.is_postgresql:
        await _reach(target)  # a plain one-line error before the source is even opened
    counts: list[TableCount] = []
    try:
        async with (
            _opened(source, source_jobs, create=False) as src,
            _opened(target, target_jobs, create=True) as dst,
        ):
            if not force:
                await _require_empty(target, dst)
            for src_part, dst_part in zip(src, dst, strict=True):
                wanted = {table.name for table in dst_part.tables()}
                for table in src_part.tables():
                    if table.name in wanted:
                        counts.append(await _copy_table(table, src_part, dst_part, batch, progress))
                await dst_part.finish()
    finally:
        if progress is not None:
            progress.finish()  # the bar's line ends before any error is printed
    return CopyReport(source.shown(), target.shown(), tuple(counts))


async def _copy_table(
    table: Table,
    source: PortableStore,
    target: PortableStore,
    batch: int,
    progress: CopyProgress | None,
) -> TableCount:
    if progress is not None:
        progress.start(table.name, await source.count(table))
    read = copied = 0
    after = None
    while rows := await source.read(table, after, batch):
        copied += await target.write(table, rows)
        read += len(rows)
        after = key_of(table, rows[-1])
        if progress is not None:
            progress.advance(len(rows))
    return TableCount(table.name, read, copied)


@contextlib.asynccontextmanager
async def _opened(
    url: StorageURL, jobs_path: Path | None, *, create: bool
) -> AsyncIterator[Sequence[PortableStore]]:
    """The store at ``url`` opened as the bot opens it, and its jobs: two portable parts."""
    jobs = JobsStore(url, jobs_path=jobs_path, create=create)
    try:
        async with open_storage_url(url, cache_windows=False) as store:
            yield portable(store), jobs
    finally:
        jobs.close()


async def _require_empty(url: StorageURL, parts: Sequence[PortableStore]) -> None:
    held = [
        f"{table.name} {rows:,}"
        for part in parts
        for table in part.tables()
        if (rows := await part.count(table))
    ]
    if held:
        raise StoreError(
            f"target {url.shown()} already holds rows ({', '.join(held)}); pass --force to copy"
            " into it anyway (rows already there are kept, the others added)"
        )


def _same_database(source: StorageURL, target: StorageURL) -> bool:
    if source.path is not None and target.path is not None:
        return source.path.resolve() == target.path.resolve()
    return source.shown() == target.shown()


async def _require_source(url: StorageURL) -> None:
    """Opening a missing source would create it empty; say so instead."""
    if not url.is_postgresql:
        assert url.path is not None
        if not url.path.is_file():
            raise StoreError(f"source {url.shown()} does not exist (no such file)")
        if not await asyncio.to_thread(_sqlite_has_turns, url.path):
            raise StoreError(f"source {url.shown()} holds no Parlour tables")
        return
    async with _connection(url) as conn:
        found = await conn.fetchval(
            "SELECT to_regclass(quote_ident(coalesce($1, current_schema())) || '.turns')",
            url.schema,
        )
    if found is None:
        raise StoreError(f"source {url.shown()} holds no Parlour tables (check the schema)")


def _sqlite_has_turns(path: Path) -> bool:
    """Read-only: an empty or foreign file must not be migrated into an empty Parlour one."""
    try:
        with contextlib.closing(
            sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        ) as conn:
            found = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'turns'"
            ).fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot read {sqlite_url(path)}: {exc}") from None
    return found is not None


async def _reach(url: StorageURL) -> None:
    async with _connection(url):
        pass


@contextlib.asynccontextmanager
async def _connection(url: StorageURL) -> AsyncIterator[asyncpg.Connection]:
    """One plain connection to ``url``'s server; unreachable is a one-line StoreError."""
    import asyncpg

    from bot.storage.postgres.connection import Database  # its wording for "unreachable"

    assert url.dsn is not None
    database = Database(url.dsn, url.schema)
    try:
        conn = await asyncpg.connect(database.dsn, timeout=10)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise StoreError(database.explain(exc)) from None
    try:
        yield conn
    finally:
        await conn.close()


def portable(store: Storage) -> PortableStore:
    """The :class:`PortableStore` over an open store of either backend (here, not in
    :mod:`bot.storage.portable`: the backends import that module)."""
    from bot.storage.sqlite import SQLiteStore  # backends load only when used

    if isinstance(store, SQLiteStore):
        from bot.storage.sqlite.portable import SQLitePortable

        return SQLitePortable(store)
    from bot.storage.postgres import PostgresStore

    if isinstance(store, PostgresStore):
        from bot.storage.postgres.portable import PostgresPortable

        return PostgresPortable(store)
    raise TypeError(f"no portable rows for {type(store).__name__}")
