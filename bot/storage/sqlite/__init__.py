"""The SQLite backend of :mod:`bot.storage`: one file in WAL mode through aiosqlite.

=================  ============================================================================
module             what lives there
=================  ============================================================================
``store``          :class:`SQLiteStore`, assembled from the parts below; open and close
``connection``     the file's writer and reader connections, the writer lock, transactions
``migrations``     the versioned schema (``PRAGMA user_version``), triggers included
``part``           what every part shares (the database, the window cache)
``turns``          turns, the context window, overheard chatter
``window_cache``   recent windows kept in memory in step with our writes
``history``        resets, clears and their audit, stats, export, chat settings
``ledger``         the usage ledger and plugin key-value data
``memories``       memories, full-text and vector search, the past-message index
``scopes``         the full-text scope tokens and the isolation rule in SQL
``summaries``      compaction's rolling summaries
``deliveries``     delivery records
``maintenance``    retention, interrupted turns, chat migration
=================  ============================================================================
"""

from bot.storage.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
