"""Scope tokens of the full-text indexes (``memories_fts``, ``turns_fts``; schema v7).

Each index row carries the chat, user or conversation it belongs to as a token of its own
``scope`` column, so a search intersects its terms with one scope inside the index.
"""

from __future__ import annotations

__all__ = ["RESCOPE_MEMORIES", "RESCOPE_TURNS", "scope_token"]


def scope_token(kind: str, key: str) -> str:
    """One index token naming a scope: ``k`` chat, ``p`` platform:user, ``c`` conversation.

    Hex keeps any key (``telegram:-100:u:7``) a single token; SQL builds the same with
    ``lower(hex(key))`` (migration 7, RESCOPE_*).
    """
    return kind + key.encode("utf-8").hex()


# After a chat's keys changed in SQL (a migrated group), its index rows follow. ?1: new chat key.
RESCOPE_MEMORIES = (
    """UPDATE memories_fts SET scope = 'k' || lower(hex(?1))
    WHERE rowid IN (SELECT id FROM memories WHERE chat_key = ?1 AND scope != 'private')""",
)
RESCOPE_TURNS = (
    """UPDATE turns_fts SET scope = (SELECT 'c' || lower(hex(t.conv_key)) FROM turns AS t
        WHERE t.id = turns_fts.rowid)
    WHERE rowid IN (SELECT id FROM turns WHERE chat_key = ?1)""",
)
