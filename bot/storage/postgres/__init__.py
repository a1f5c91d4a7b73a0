"""The PostgreSQL backend of :mod:`bot.storage`: one database (and schema) through an asyncpg
pool, shared by any number of replicas.

=================  ============================================================================
module             what lives there
=================  ============================================================================
``store``          :class:`PostgresStore`, assembled from the shared parts and those below
``connection``     the pool, transactions, friendly errors; the seam and its dialect
``migrations``     the versioned schema per component (``parlour_schema``), advisory lock keys
``turns``          beginning a turn in arrival order, the paged window walk
``memories``       ``tsvector`` indexing, BM25 search (``search_*``, ``memory_schema``), vectors
``coordination``   inbox claims and amends, token buckets, flights, breaker failures
``portable``       raw rows in and out (``python -m bot storage copy``)
=================  ============================================================================

Operator notes (what the server needs, ``?schema=``, ``?pool_size=``): docs/scaling.md.
"""

from bot.storage.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
