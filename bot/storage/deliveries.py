"""Replies on their way to a chat platform, recorded so a crash cannot leave them silent.

A reply's record is written when the adapter starts on it (where it goes and which user message
it answers), updated whenever its streamed preview changes (which message, what it shows), and
deleted once the reply is delivered or the user was told it failed. A record that survives is a
reply its process could not finish: after a kill -9 or power loss, or when the platform refused
even the "[interrupted]" mark. The next start of that platform's adapter takes the records of
processes that are gone (:mod:`bot.storage.owners`) and edits each preview (or answers the
question) to say so, once.

Platform-neutral: ids are stored as text; each adapter knows what its own mean.
"""

from __future__ import annotations

from typing import Protocol

from bot.storage import owners
from bot.storage.turns import Turns
from bot.values import Delivery

__all__ = ["MAX_SHOWN_CHARS", "Deliveries", "DeliveryLog"]

MAX_SHOWN_CHARS = 8000  # a preview message is far shorter; a bound on what one record holds


class Deliveries(Protocol):
    """Delivery records. A backend must provide: each record is tagged with ``owner`` (this
    storage instance, :mod:`bot.storage.owners`); ``shown`` is kept to
    :data:`MAX_SHOWN_CHARS`; a clear of the chat and retention delete its records."""

    @property
    def owner(self) -> str: ...

    async def begin_delivery(
        self,
        platform: str,
        chat_key: str,
        chat_id: str,
        thread_id: str | None,
        reply_to: str | None,
    ) -> int: ...

    async def update_delivery(
        self,
        delivery_id: int,
        *,
        message_id: str | None = None,
        shown: str | None = None,
        turn_id: int | None = None,
    ) -> None:
        """Set the fields given (None: unchanged)."""
        ...

    async def end_delivery(self, delivery_id: int) -> None: ...

    async def deliveries(self, platform: str) -> list[Delivery]:
        """Every record of ``platform``, oldest first, whatever its owner."""
        ...


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
