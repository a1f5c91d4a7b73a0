"""What every part of the PostgreSQL backend shares: the database.

:class:`~bot.storage.postgres.store.PostgresStore` is assembled from one class per idea (turns,
usage, summaries, ...), each a subclass of :class:`Part`, so each module reads on its own. A
part that needs tables of its own declares ``SCHEMA = (component, steps)``
(:mod:`bot.storage.postgres.migrations`).
"""

from __future__ import annotations

from bot.storage.postgres.connection import Database


class Part:
    _db: Database
    cache_windows: bool
    owner: str
