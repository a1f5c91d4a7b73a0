"""A conversation's transcript: what its people said, in order, with who said it.

A catch-up (:mod:`bot.conversation.catchup`) reads it to summarise what someone missed, so it
holds every message the bot may read in that conversation and nothing else: the overheard
chatter already moved into the history (``context`` rows), the messages addressed to the bot
(with the bot's answer, where the chat saw one) and the chatter still waiting in ``overheard``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Said", "Transcripts"]


@dataclass(frozen=True, slots=True)
class Said:
    """One message of a conversation, as a transcript lists it."""

    user_id: str
    user_name: str
    text: str
    created_at: float  # seconds since the epoch: when it was said
    addressed: bool  # written to the bot (a turn); False: chatter the bot overheard
    answer: str = ""  # the bot's answer to it, as the chat saw it ("" none, or not delivered)


class Transcripts(Protocol):
    """Reading a conversation as its people said it.

    A backend must provide, in :meth:`said`: the conversation's messages only (never another
    conversation's or chat's); ``context`` rows, turns of every other status (the user's text;
    the final assistant text of an ``answered`` turn as ``answer``) and waiting overheard rows,
    merged in the order they were said (``created_at``, then the order they were stored);
    nothing at or before the conversation's last reset (the turn id :meth:`~bot.storage.resets.
    Resets.reset_point` names; a reset drops the waiting chatter itself), nothing a clear or
    retention deleted; the newest ``limit`` of those said at or after ``since``, oldest first,
    at a cost that follows ``limit``, not the history's length.
    """

    async def said(self, conversation_key: str, since: float, limit: int) -> list[Said]:
        """The newest ``limit`` messages said at or after ``since`` (a ``time.time()``), after
        the last reset, oldest first."""
        ...
