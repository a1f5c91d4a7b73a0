"""Messages an adapter holds back while a burst gathers (``chat.burst_window``).

Telegram's webhook mode runs a chat's updates one at a time from the inbox, so the next
messages of a burst wait there, unhandled, while the first is answered. The adapter offers
them to the burst (``ChatService.chat(more=...)``): the ones the turn takes it finishes, the
others it runs as usual. Here, below the conversation, so adapters name them without it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

__all__ = ["Later", "MoreMessages"]


@dataclass(frozen=True, slots=True)
class Later:
    """A message of the same sender an adapter found waiting behind the leader, not yet
    handled (Telegram webhook mode: the next updates of the chat's lane in the inbox).
    ``taken(True)``: it is in the leader's turn, on its way to the store (the adapter
    finishes it); ``taken(False)``: it was left, the adapter runs it as usual. Told once."""

    text: str
    message_id: str | None
    taken: Callable[[bool], object]


MoreMessages = Callable[[], Awaitable[Sequence[Later]]]
"""The later messages that arrived since the last call (called while a burst gathers)."""
