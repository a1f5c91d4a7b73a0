"""The PostgreSQL backend of :mod:`bot.storage`: one database (and schema) through an asyncpg
pool, shared by any number of replicas; only what differs from :mod:`bot.storage.sql` (its
modules: docs/architecture.md; what the server needs, ``?schema=``, ``?pool_size=``:
docs/scaling.md)."""

from bot.storage.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
