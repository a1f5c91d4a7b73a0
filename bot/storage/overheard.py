"""Overheard context: group messages the bot saw without being addressed."""

from __future__ import annotations

from typing import Protocol

from bot.values import NewTurn, Overheard

__all__ = ["OverheardStore"]


class OverheardStore(Protocol):
    """A bounded queue of chatter per conversation, waiting to give the next answer context.

    A backend must provide: ids that grow in arrival order; at most ``keep`` messages per
    conversation after each :meth:`record_overheard` (the oldest go, in the same transaction);
    messages chosen by a turn (``NewTurn.overheard``) move into the history with it
    (:class:`~bot.storage.turns.Turns`) and the older ones it passed over are marked passed;
    a reset of the conversation, a clear of its chat and
    retention drop them (:mod:`bot.storage.resets`, :mod:`bot.storage.maintenance`).
    :meth:`replace_overheard` changes a waiting message's text in place (its id, author and
    time stay: it keeps its place in the queue); a message that already joined a turn is not
    changed (the history is not rewritten).
    """

    async def record_overheard(self, message: NewTurn, keep: int, retain: int = 0) -> None:
        """Store an unaddressed message; only the newest ``keep`` of its conversation wait to
        give context. With ``retain`` above ``keep``, older ones stay, *passed* (never in a
        prompt, never replaced, read by :mod:`bot.storage.transcript`), up to ``retain``."""
        ...

    async def load_overheard(self, conversation_key: str, since: float) -> list[Overheard]:
        """Waiting (not passed) overheard messages newer than ``since`` (a ``time.time()``),
        oldest first."""
        ...

    async def replace_overheard(
        self, conversation_key: str, platform_message_id: str, text: str
    ) -> bool:
        """The waiting message with this platform id gets ``text`` (it was edited); False when
        none waits (never kept, or already part of a turn)."""
        ...
