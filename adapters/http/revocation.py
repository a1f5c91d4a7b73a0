"""Ended dashboard sessions, kept in the shared store so every replica refuses them.

The session cookie is stateless (any replica checks its HMAC alone), so a logout has to leave
something behind or the copied cookie would keep working until it expires. Each session carries
a random id; logging out writes ``<id> -> its expiry`` into the plugin-data store under a
namespace of its own. The store is the database every replica shares (SQLite file or PostgreSQL
schema), so a logout on one replica is refused on all of them on the very next request: there is
no cache of "not revoked" answers to go stale. Ids known to be revoked are remembered in process
(they stay revoked), and records whose cookie has expired anyway are swept at each logout.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from cachetools import TTLCache

from bot.storage import KeyValueStore

__all__ = ["NAMESPACE", "Revocations"]

NAMESPACE = "parlour.http.sessions"  # parlour.* is the bot's own (the doctor uses parlour.doctor)
_KEY = "revoked:"


class Revocations:
    """Which session ids were ended, read from (and written to) the shared store."""

    def __init__(self, store: Callable[[], KeyValueStore], *, hours: float) -> None:
        self._store = store  # called late: the App opens its store after the adapter is made
        # known-revoked ids: safe to keep (a revocation is never undone), bounded by size and life
        self._known: TTLCache[str, int] = TTLCache(maxsize=10_000, ttl=hours * 3600)

    async def revoked(self, sid: str) -> bool:
        """Whether ``sid`` was logged out here or on any other replica."""
        if sid in self._known:
            return True
        until = await self._store().kv_get(NAMESPACE, _KEY + sid)
        if until is None:
            return False
        self._known[sid] = int(until)
        return True

    async def revoke(self, sid: str, expires: int) -> None:
        """End ``sid`` everywhere until ``expires`` (after which its cookie is refused anyway)."""
        store = self._store()
        await store.kv_set(NAMESPACE, _KEY + sid, expires)
        self._known[sid] = expires
        now = time.time()
        for key, until in await store.kv_items(NAMESPACE, _KEY):
            if isinstance(until, int | float) and until < now:
                await store.kv_delete(NAMESPACE, key)
