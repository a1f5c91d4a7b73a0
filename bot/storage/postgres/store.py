"""The shared backend: every storage protocol over one PostgreSQL database (and schema)."""

from __future__ import annotations

from bot.storage import owners
from bot.storage.postgres.audit import PostgresAudit
from bot.storage.postgres.connection import Database
from bot.storage.postgres.coordination import PostgresCoordination
from bot.storage.postgres.deliveries import PostgresDeliveries
from bot.storage.postgres.directory import PostgresDirectory
from bot.storage.postgres.erasure import PostgresErasure
from bot.storage.postgres.history import PostgresHistory
from bot.storage.postgres.ledger import PostgresKeyValue, PostgresUsage
from bot.storage.postgres.maintenance import PostgresMaintenance, close_interrupted
from bot.storage.postgres.memories import PostgresMemories
from bot.storage.postgres.migrations import components_of
from bot.storage.postgres.summaries import PostgresSummaries
from bot.storage.postgres.turns import PostgresTurns


class PostgresStore(
    PostgresTurns,
    PostgresHistory,
    PostgresAudit,
    PostgresDirectory,
    PostgresErasure,
    PostgresUsage,
    PostgresKeyValue,
    PostgresSummaries,
    PostgresDeliveries,
    PostgresMaintenance,
    PostgresMemories,
    PostgresCoordination,
):
    """:class:`bot.storage.Storage` in PostgreSQL, safe to share between replicas. Use as
    ``async with PostgresStore(dsn, schema=...)`` (or :func:`bot.storage.open_storage`).

    ``open`` creates the schema if missing and applies the core migrations, then those of every
    mixin that declares ``SCHEMA`` (:mod:`bot.storage.postgres.migrations`), then closes turns
    a dead process left pending. ``cache_windows`` is accepted for the common signature; this
    backend reads every window from the database (:mod:`bot.storage.postgres.turns`).

    For mixins: ``self._db`` is the :class:`~bot.storage.postgres.connection.Database`
    (``pool``, ``acquire()``, ``transaction()``, ``schema``, ``lock_key()``).
    """

    def __init__(self, dsn: str, *, schema: str | None = None, cache_windows: bool = True) -> None:
        self._db = Database(dsn, schema)
        self.cache_windows = cache_windows
        self.owner = owners.new_owner()  # this instance, on every turn it begins

    @property
    def schema(self) -> str:
        return self._db.schema

    @property
    def replicas(self) -> bool:
        """Several processes may share the database: limits and locks live in it."""
        return True

    @property
    def url(self) -> str:
        """The database, password masked."""
        return self._db.shown

    async def schema_version(self) -> str:
        async with self._db.acquire() as conn:
            rows = await conn.fetch("SELECT component, version FROM parlour_schema")
        versions = {str(row["component"]): int(row["version"]) for row in rows}
        order = [name for name, _ in components_of(type(self))]  # core first, as migrated
        return ", ".join(f"{name} v{versions[name]}" for name in order if name in versions)

    async def __aenter__(self) -> PostgresStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        owners.register(self.owner)
        try:
            await self._db.open(components_of(type(self)))
            async with self._db.acquire() as conn:
                await close_interrupted(conn)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        owners.unregister(self.owner)
        await self._db.close()
