"""Rolling summaries of the turns that left a conversation's context window."""

from __future__ import annotations

from typing import Protocol

from bot.values import StoredTurn, Summary

__all__ = ["Summaries"]


class Summaries(Protocol):
    """What compaction (:mod:`bot.memory.compaction`) keeps per conversation.

    A backend must provide: one summary per conversation; :meth:`count_summary_turn` adds one
    to ``turns_since`` atomically (creating an empty summary through turn 0) and returns it;
    :meth:`save_summary` replaces text and ``through_turn_id`` and restarts the count; a reset of
    the conversation, a clear of its chat and retention delete it; a migrated chat's summaries
    move with it.
    """

    async def load_summary(self, conversation_key: str) -> Summary | None:
        """The conversation's summary (its text may be empty: only counted so far)."""
        ...

    async def count_summary_turn(self, conversation_key: str, chat_key: str) -> int:
        """One more turn since the summary; returns the new count."""
        ...

    async def restart_summary_count(self, conversation_key: str) -> None: ...

    async def save_summary(
        self, conversation_key: str, chat_key: str, text: str, through_turn_id: int
    ) -> None: ...

    async def turns_between(
        self, conversation_key: str, after: int, before: int
    ) -> list[StoredTurn]:
        """The conversation's finished turns (not pending) with ``after < id < before``, oldest
        first, each with all its stored messages."""
        ...
