"""Maintenance: retention, closing the turns a crash left pending, chat migration."""

from __future__ import annotations

from typing import Protocol

__all__ = ["STALE_PENDING_SECONDS", "Maintenance"]

# A turn still pending this long after it began belongs to a process that died mid-answer.
STALE_PENDING_SECONDS = 900.0


class Maintenance(Protocol):
    """Jobs the App runs (at open, every 15 minutes, hourly) and Telegram's chat migration.

    A backend must provide:

    - :meth:`close_interrupted_turns` marks pending turns ``unanswered`` with error
      ``interrupted``: at once when their owner process is certainly gone
      (:func:`bot.storage.owners.is_dead`), else only when older than
      :data:`STALE_PENDING_SECONDS` (a live neighbour process may share the database). Opening
      the storage runs it too.
    - :meth:`delete_older_than` deletes finished turns (never pending ones), overheard
      messages and delivery records created, and summaries updated, more than ``seconds`` ago
      -- with their search-index rows. It keeps the usage ledger, memories, settings, plugin
      data, the clear audit and the audit trail.
    - :meth:`migrate_chat` moves, in one transaction, every turn, reset, overheard message,
      summary, memory (with its index scope), clear-audit and audit-trail row, the chat
      settings, the knowledge bases bound with a command and the directory entry of
      ``old_chat_key`` to ``new_chat_key`` (conversation
      keys keep their suffix after the chat key; a row the new chat already has wins), and
      adds the old chat's usage-ledger rows to the new chat's. Returns how many turns moved.
    """

    async def close_interrupted_turns(self) -> int: ...

    async def delete_older_than(self, seconds: float) -> int: ...

    async def migrate_chat(self, old_chat_key: str, new_chat_key: str) -> int: ...
