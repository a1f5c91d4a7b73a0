"""Per-conversation locks: one conversation in arrival order, different ones concurrently.

``asyncio.Lock`` wakes waiters first-in first-out, so messages of one conversation are handled in
the order their handlers asked for the lock. An entry lives only while someone holds or waits for
it, so a bot that has seen a million conversations keeps no million locks.
"""

from __future__ import annotations

import asyncio
from types import TracebackType


class KeyedLocks:
    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def __len__(self) -> int:
        return len(self._locks)

    def hold(self, key: str) -> Held:
        """``async with locks.hold(key)``: the key's lock, waited for in arrival order."""
        return Held(self._locks, key)


class Held:
    """One holder of a key's lock (a class, not a generator: every message takes one)."""

    __slots__ = ("_key", "_lock", "_locks")

    def __init__(self, locks: dict[str, tuple[asyncio.Lock, int]], key: str) -> None:
        self._locks, self._key = locks, key
        self._lock: asyncio.Lock | None = None

    async def __aenter__(self) -> None:
        lock, users = self._locks.get(self._key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[self._key] = (lock, users + 1)
        try:
            await lock.acquire()
        except BaseException:
            self._leave()
            raise
        self._lock = lock

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._lock is not None
        self._lock.release()
        self._leave()

    def _leave(self) -> None:
        lock, users = self._locks[self._key]
        if users <= 1:
            del self._locks[self._key]
        else:
            self._locks[self._key] = (lock, users - 1)
