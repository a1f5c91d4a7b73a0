"""An adapter's view of the delivery records (:mod:`bot.storage.deliveries`): begin a reply's
record, say what its preview shows, and find the records of processes that are gone."""

from __future__ import annotations

from typing import Protocol

from bot.storage import owners
from bot.storage.deliveries import Deliveries
from bot.storage.turns import Turns
from bot.values import Delivery

__all__ = ["DeliveryLog"]


class _DeliveryStore(Deliveries, Turns, Protocol):
    pass


class DeliveryLog:
    """An adapter's view of the delivery records of a storage."""

    def __init__(self, store: _DeliveryStore) -> None:
        self.store = store

    async def begin(
        self,
        platform: str,
        chat_key: str,
        chat_id: str,
        thread_id: str | None = None,
        reply_to: str | None = None,
    ) -> int:
        return await self.store.begin_delivery(platform, chat_key, chat_id, thread_id, reply_to)

    async def showing(self, delivery_id: int, message_id: str, shown: str) -> None:
        """The preview is now ``message_id`` and shows ``shown``."""
        await self.store.update_delivery(delivery_id, message_id=message_id, shown=shown)

    async def answered(self, delivery_id: int, turn_id: int) -> None:
        """The answer is stored: a crash from here on leaves an answered turn undelivered."""
        await self.store.update_delivery(delivery_id, turn_id=turn_id)

    async def undelivered(self, turn_id: int, reason: str) -> bool:
        """The turn's answer never reached the chat (see ``Turns.mark_undelivered``)."""
        return await self.store.mark_undelivered(turn_id, reason)

    async def done(self, delivery_id: int) -> None:
        await self.store.end_delivery(delivery_id)

    async def orphans(self, platform: str, limit: int = 200) -> list[Delivery]:
        """Records of ``platform`` whose process is gone, oldest first (at most ``limit``)."""
        dead = [d for d in await self.store.deliveries(platform) if owners.is_dead(d.owner)]
        return dead[:limit]
