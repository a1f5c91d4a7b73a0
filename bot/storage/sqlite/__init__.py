"""The SQLite backend of :mod:`bot.storage`: one file in WAL mode through aiosqlite.

=================  ============================================================================
module             what lives there
=================  ============================================================================
``store``          :class:`SQLiteStore`, assembled from the shared parts and those below
``connection``     the writer and reader, the writer lock, transactions; the seam and dialect
``migrations``     the versioned schema (``PRAGMA user_version``, ``schema_steps``), ``files``
``turns``          beginning a turn, the context window and its cache (``window_cache``)
``memories``       FTS5 indexing and search, vector statements; ``scopes``: isolation in SQL
``coordination``   inbox claims and amends, token buckets, flights, breaker failures
``portable``       raw rows in and out (``python -m bot storage copy``)
=================  ============================================================================
"""

from bot.storage.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
