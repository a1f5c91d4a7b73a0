"""Resets and clears, with the clear audit."""

from __future__ import annotations

from typing import Any, Protocol

from bot.values import ClearResult

__all__ = ["Resets"]


class Resets(Protocol):
    """Forgetting on request: a conversation's soft reset, a chat's hard clear.

    A backend must provide:

    - **Reset is a soft cut.** :meth:`reset` keeps every turn but the context (windows, recall
      of past messages, compaction) starts after the newest turn stored at that moment, in any
      conversation. It deletes the conversation's overheard messages and its summary in the same
      transaction. A later reset moves the cut forward.
    - **Clear deletes, in one transaction**, every turn, reset, overheard message, delivery
      record, memory (with its search-index rows and vector) and summary of the chat, and writes
      one audit row with who cleared and how many turns and messages (a turn's messages: the
      user's plus each stored answer message) went. The usage ledger is kept: the money was spent.
    - **A clear racing a turn** leaves a consistent state: a turn begun before the clear is
      deleted with it and its later ``complete_turn`` / ``fail_turn`` change nothing (no error);
      a turn begun after it survives. No half-written row of either remains.
    - **The audit outlives the clear** (and moves with a migrated chat); retention keeps it.
    """

    async def reset(
        self, conversation_key: str, chat_key: str, by_user: str, by_name: str = ""
    ) -> None:
        """Soft cut: rows are kept, the context starts after them. ``by_user`` (the id) and
        ``by_name`` are written to the audit trail (:mod:`bot.storage.audit`) in the same
        transaction."""
        ...

    async def reset_point(self, conversation_key: str) -> int:
        """The turn id the context starts after (0 when never reset)."""
        ...

    async def clear_chat(self, chat_key: str, actor_id: str, actor_name: str) -> ClearResult:
        """Delete every conversation of a chat and write an audit row."""
        ...

    async def clear_audit(self, chat_key: str) -> list[dict[str, Any]]:
        """The chat's clears, oldest first: ``actor_id``, ``actor_name``, ``at``,
        ``deleted_turns``, ``deleted_messages``."""
        ...
