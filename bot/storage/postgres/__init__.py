"""The PostgreSQL backend of :mod:`bot.storage`: one database (and schema) through an asyncpg
pool, shared by any number of replicas.

=================  ============================================================================
module             what lives there
=================  ============================================================================
``store``          :class:`PostgresStore`, assembled from the parts below; open and close
``connection``     the pool, ``acquire()`` / ``transaction()``, the schema, friendly errors
``migrations``     the versioned schema per component (``parlour_schema``), the runner
``part``           what every part shares (the database)
=================  ============================================================================
"""

from bot.storage.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
