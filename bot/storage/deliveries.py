"""Replies on their way to a chat platform, recorded so a crash cannot leave them silent.

A reply's record is written when the adapter starts on it (where it goes and which user message
it answers), updated whenever its streamed preview changes (which message, what it shows), and
deleted once the reply is delivered or the user was told it failed. A record that survives is a
reply its process could not finish: after a kill -9 or power loss, or when the platform refused
even the "[interrupted]" mark. The next start of that platform's adapter takes the records of
processes that are gone (:mod:`bot.platform.delivery_log`) and edits each preview (or answers the
question) to say so, once.

Platform-neutral: ids are stored as text; each adapter knows what its own mean.
"""

from __future__ import annotations

from typing import Protocol

from bot.values import Delivery

__all__ = ["MAX_SHOWN_CHARS", "Deliveries"]

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
