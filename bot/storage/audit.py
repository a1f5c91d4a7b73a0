"""The audit trail: who changed what in a chat, and when (``python -m bot history audit``)."""

from __future__ import annotations

from typing import Protocol

from bot.text import counted
from bot.values import AuditAction, AuditEntry

__all__ = ["CHANGES", "AuditTrail", "check_change", "clear_detail", "forget_detail"]

# The actions record_change takes; clears and resets are written by clear_chat and reset.
CHANGES = frozenset(
    {
        AuditAction.PERSONA,
        AuditAction.SCOPE,
        AuditAction.FORGET,
        AuditAction.AMBIENT,
        AuditAction.SCHEDULE,
    }
)


def check_change(action: AuditAction) -> None:
    """Refuse an action ``record_change`` does not take (every backend, one message)."""
    if action not in CHANGES:
        raise ValueError(f"not an audited change: {action!r} (one of {sorted(CHANGES)})")


def clear_detail(turns: int, messages: int) -> str:
    """A clear's ``detail``, the same words on every backend (``deleted 1 turn, 2 messages``)."""
    return f"deleted {counted(turns, 'turn')}, {counted(messages, 'message')}"


def forget_detail(memory_id: int) -> str:
    """A memory deletion's ``detail``: which memory, never what it said."""
    return f"deleted memory #{memory_id}"


class AuditTrail(Protocol):
    """Changes an operator may be asked about later: clears, resets, persona, scope and
    ambient mode, scheduled posts set and cancelled, and an operator's deletion of a memory.

    A backend must provide:

    - :meth:`record_change` stores one persona, scope, ambient or schedule change or memory
      deletion (``action`` one of :data:`CHANGES`, anything else is a ``ValueError`` and
      stores nothing) with who made it.
    - Every :meth:`~bot.storage.resets.Resets.reset` is an entry too (action ``reset``, its
      conversation key), each one, not only the latest; every clear (the clear audit's rows,
      detail :func:`clear_detail`).
    - :meth:`audit` lists a chat's entries (every chat's for None), oldest first; entries of
      the same moment keep the order they were written in within their kind.
    - The trail outlives ``/clear`` and retention, moves with a migrated chat (conversation
      keys keep their suffix) and travels with ``storage copy``.
    """

    async def record_change(
        self, chat_key: str, actor_id: str, actor_name: str, action: AuditAction, detail: str
    ) -> None:
        """Store one change (:data:`CHANGES`) of ``chat_key``."""
        ...

    async def audit(self, chat_key: str | None = None) -> list[AuditEntry]:
        """The chat's (or every chat's) clears, resets and changes, oldest first."""
        ...
