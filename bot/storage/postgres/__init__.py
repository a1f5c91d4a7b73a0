"""The PostgreSQL backend of :mod:`bot.storage`: one database (and schema) through an asyncpg
pool, shared by any number of replicas.

=================  ============================================================================
module             what lives there
=================  ============================================================================
``store``          :class:`PostgresStore`, assembled from the parts below; open and close
``connection``     the pool, ``acquire()`` / ``transaction()``, the schema, friendly errors
``migrations``     the versioned schema per component (``parlour_schema``), the runner
``locks``          advisory lock keys, one per purpose and schema
``part``           what every part shares (the database)
``turns``          turns (in arrival order), the context window, overheard chatter
``history``        resets, clears and their audit, stats, export, chat settings
``ledger``         the usage ledger and plugin key-value data
``summaries``      compaction's rolling summaries
``deliveries``     delivery records
``maintenance``    retention, interrupted turns, chat migration
=================  ============================================================================

Operator notes (what the server needs, ``?schema=``, ``?pool_size=``): docs/scaling.md.
"""

from bot.storage.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
