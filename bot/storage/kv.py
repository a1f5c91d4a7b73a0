"""Plugin key-value data: small JSON values per plugin (reminders, a plugin's settings)."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["KeyValueStore"]


class KeyValueStore(Protocol):
    """A namespace per plugin; values are anything ``json.dumps`` takes, returned as
    ``json.loads`` gives them back.

    A backend must provide: a missing key reads None; ``kv_set`` replaces; ``kv_increment``
    treats a missing key as 0, adds one and returns the new value atomically (concurrent calls,
    in any process, never return the same number); ``kv_delete`` says whether a key was there;
    ``kv_items`` lists a plugin's keys that start with ``prefix``, ordered by key. Clears,
    resets, retention and migrations leave plugin data alone.
    """

    async def kv_get(self, plugin: str, key: str) -> Any: ...
    async def kv_set(self, plugin: str, key: str, value: Any) -> None: ...
    async def kv_delete(self, plugin: str, key: str) -> bool: ...
    async def kv_increment(self, plugin: str, key: str) -> int: ...
    async def kv_items(self, plugin: str, prefix: str = "") -> list[tuple[str, Any]]: ...
