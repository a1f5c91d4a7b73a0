"""Small per-conversation reads kept in memory, and the one ``data_version`` probe they share.

Besides its window (:mod:`bot.storage.sqlite.window_cache`) every turn reads its conversation's
window mark and its overheard chatter, two more trips to aiosqlite's thread for rows that change
only at a cut, a reset or a group message. :class:`RowCache` keeps them the way the window cache
keeps windows: every entry tagged with ``PRAGMA data_version`` (which moves only when another
connection, another process, commits), dropped by our own writes, and a row read from disk only
kept if none of those writes happened while it was read (``epoch``). PostgreSQL keeps none:
its replicas write at any time and it has no counter to check them by.

:class:`VersionProbe` lets the reads a turn starts together (``asyncio.gather`` in
:mod:`bot.conversation.service`) share one probe: a read joins a probe only in the loop iteration
that started it, before any I/O was handled, so no commit it could know of is missed.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from bot.storage.sqlite.connection import Database

__all__ = ["Held", "RowCache", "VersionProbe"]

V = TypeVar("V")

MAX_CONVERSATIONS = 2048  # entries kept per cache
MAX_BYTES = 8 * 2**20  # approximate memory of one cache's entries (``size_of``)
ENTRY_OVERHEAD = 200  # bytes an entry costs besides its text


@dataclass(frozen=True, slots=True)
class Held(Generic[V]):
    version: int  # data_version when read
    value: V
    size: int


class RowCache(Generic[V]):
    """One value per conversation key, least recently used dropped first (by count and size)."""

    def __init__(
        self,
        size_of: Callable[[V], int],
        max_conversations: int = MAX_CONVERSATIONS,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self._size_of = size_of
        self.max_conversations, self.max_bytes = max_conversations, max_bytes
        self._entries: OrderedDict[str, Held[V]] = OrderedDict()
        self._size = 0
        self.epoch = 0  # bumped by every write we make to these rows

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        return self._size

    def get(self, key: str, version: int) -> Held[V] | None:
        held = self._entries.get(key)
        if held is None or held.version != version:
            return None
        self._entries.move_to_end(key)
        return held

    def put(self, key: str, value: V, *, version: int, epoch: int) -> None:
        if epoch != self.epoch:
            return  # one of our writes happened while it was read
        self._drop(key)
        held = Held(version, value, ENTRY_OVERHEAD + self._size_of(value))
        self._entries[key] = held
        self._size += held.size
        while len(self._entries) > self.max_conversations or self._size > self.max_bytes:
            self._drop(next(iter(self._entries)))

    def forget(self, key: str) -> None:
        self.epoch += 1
        self._drop(key)

    def clear(self) -> None:
        self.epoch += 1
        self._entries.clear()
        self._size = 0

    def _drop(self, key: str) -> None:
        held = self._entries.pop(key, None)
        if held is not None:
            self._size -= held.size


class VersionProbe:
    """``PRAGMA data_version`` once for the reads started in the same loop iteration: the
    first one probes, the others wait for its answer (each on its own future, so one of them
    cancelled leaves the rest alone; the first one cancelled, each probes for itself). A probe
    answered within its iteration (run on the loop's thread: ``inline.py``) answers the reads
    that come later in that iteration too."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._joined: list[asyncio.Future[int | None]] | None = None
        self._known: int | None = None  # answered in this iteration

    async def version(self) -> int:
        if self._known is not None:
            return self._known
        joined = self._joined
        if joined is not None:
            mine: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
            joined.append(mine)
            shared = await mine
            return shared if shared is not None else await self._db.external_version()
        self._joined = joined = []
        asyncio.get_running_loop().call_soon(self._close)  # after this iteration's steps
        try:
            version = await self._db.external_version()
        except asyncio.CancelledError:
            self._closed(joined)
            _answer(joined, None)  # not theirs to share
            raise
        except BaseException as exc:
            self._closed(joined)
            for waiting in joined:
                if not waiting.done():
                    waiting.set_exception(exc)
            raise
        if self._joined is joined:  # still this iteration: later reads in it share the answer
            self._known = version
        _answer(joined, version)
        return version

    def _closed(self, joined: list[asyncio.Future[int | None]]) -> None:
        if self._joined is joined:
            self._joined = None

    def _close(self) -> None:
        self._joined, self._known = None, None


def _answer(joined: list[asyncio.Future[int | None]], version: int | None) -> None:
    for waiting in joined:
        if not waiting.done():  # done: its reader was cancelled
            waiting.set_result(version)
