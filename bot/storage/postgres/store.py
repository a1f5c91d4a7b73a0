"""The shared backend: every storage protocol over one PostgreSQL database (and schema)."""

from __future__ import annotations

from bot.storage import owners
from bot.storage.postgres.connection import Database, PostgresSeam
from bot.storage.postgres.coordination import PostgresCoordination
from bot.storage.postgres.deliveries import PostgresDeliveries
from bot.storage.postgres.directory import PostgresDirectory
from bot.storage.postgres.knowledge import PostgresKnowledge
from bot.storage.postgres.memories import PostgresMemories
from bot.storage.postgres.migrations import Component, components_of
from bot.storage.postgres.turns import PostgresTurns
from bot.storage.postgres.usage import PostgresUsage
from bot.storage.sql.seam import NoWindows, Tx
from bot.storage.sql.store import SQLStore
from bot.values import PromptRows


async def _nothing_to_rescope(tx: Tx, new_chat_key: str) -> None:
    """The search columns live in the rows that moved: nothing names the old chat."""


class PostgresStore(SQLStore):
    """:class:`bot.storage.Storage` in PostgreSQL, safe to share between replicas. Use as
    ``async with PostgresStore(dsn, schema=...)`` (or :func:`bot.storage.open_storage`).

    ``open`` creates the schema if missing and applies the core migrations, then those of the
    parts that declare ``SCHEMA`` (:mod:`bot.storage.postgres.migrations`), then closes turns
    a dead process left pending. ``cache_windows`` is accepted for the common signature; this
    backend reads every window from the database (:mod:`bot.storage.postgres.turns`).
    """

    turns: PostgresTurns

    def __init__(self, dsn: str, *, schema: str | None = None, cache_windows: bool = True) -> None:
        self.database, self.cache_windows = Database(dsn, schema), cache_windows
        self._compose(
            PostgresSeam(self.database), NoWindows(), owners.new_owner(), _nothing_to_rescope
        )
        self.delivery_records = PostgresDeliveries(self.database, self.owner)  # batched
        self.directory = PostgresDirectory(self.database)  # notes batched
        self.usage = PostgresUsage(self.database)  # budget figures batched
        self.turns = PostgresTurns(self.database, self.owner)
        self.memories = PostgresMemories(self.database)
        self.knowledge = PostgresKnowledge(self.database)
        self.coordination = PostgresCoordination(self.database)

    async def load_prompt_rows(
        self, conversation_key: str, max_turns: int, overheard_since: float | None
    ) -> PromptRows:
        """One statement, not three (:meth:`PostgresTurns.load_prompt_rows`)."""
        return await self.turns.load_prompt_rows(conversation_key, max_turns, overheard_since)

    @property
    def schema(self) -> str:
        return self.database.schema

    @property
    def replicas(self) -> bool:
        """Several processes may share the database: limits and locks live in it."""
        return True

    @property
    def url(self) -> str:
        """The database, password masked."""
        return self.database.shown

    async def schema_version(self) -> str:
        rows = await self.seam.fetch("SELECT component, version FROM parlour_schema")
        versions = {str(name): int(version) for name, version in rows}
        order = [name for name, _ in self._components()]  # core first, as migrated
        return ", ".join(f"{name} v{versions[name]}" for name in order if name in versions)

    async def _connect(self) -> None:
        await self.database.open(self._components())

    def _components(self) -> list[Component]:
        """The core, the parts' own (coordination, memory search), then any a subclass adds."""
        return components_of(
            PostgresCoordination, PostgresMemories, PostgresKnowledge, *reversed(type(self).__mro__)
        )

    async def _disconnect(self) -> None:
        await self.database.close()
