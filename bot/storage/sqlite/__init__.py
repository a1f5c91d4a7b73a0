"""The SQLite backend of :mod:`bot.storage`: one file in WAL mode through aiosqlite;
only what differs from :mod:`bot.storage.sql` (its modules: docs/architecture.md)."""

from bot.storage.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
