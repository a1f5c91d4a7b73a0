"""What every part of the SQLite backend shares: the database and the window cache.

:class:`~bot.storage.sqlite.store.SQLiteStore` is assembled from one class per idea (turns,
usage, memories, ...), each a subclass of :class:`Part`, so each module reads on its own.
"""

from __future__ import annotations

from bot.storage.sqlite.connection import Database
from bot.storage.sqlite.window_cache import WindowCache


class Part:
    _db: Database
    _windows: WindowCache
    cache_windows: bool
    owner: str
