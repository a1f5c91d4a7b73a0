"""Scope tokens of the full-text indexes (``memories_fts``, ``turns_fts``; schema v7).

Each index row carries the chat, user or conversation it belongs to as a token of its own
``scope`` column, so a search intersects its terms with one scope inside the index.
"""

from __future__ import annotations

__all__ = ["MEMORY_SCOPE_SQL", "RESCOPE_MEMORIES", "RESCOPE_TURNS", "scope_token"]


def scope_token(kind: str, key: str) -> str:
    """One index token naming a scope: ``c`` conversation, ``o`` chat + user (a member's own
    facts), ``p`` platform:user (private memories); ``k`` chat (before schema v11).

    Hex keeps any key (``telegram:-100:u:7``) a single token; SQL builds the same with
    ``lower(hex(key))`` (migration 7, RESCOPE_*).
    """
    return kind + key.encode("utf-8").hex()


# A memory's index tokens (bot.memory.scope.index_scope) from its row, in SQL.
MEMORY_SCOPE_SQL = """'c' || lower(hex(m.conv_key)) || CASE m.scope
    WHEN 'member' THEN ' o' || lower(hex(m.chat_key || char(10) || m.user_id))
    WHEN 'private' THEN ' p' || lower(hex(substr(m.chat_key, 1, instr(m.chat_key, ':'))
        || m.user_id))
    ELSE '' END"""

# After a chat's keys changed in SQL (a migrated group), its index rows follow. ?1: new chat key.
RESCOPE_MEMORIES = (
    f"""UPDATE memories_fts SET scope = (SELECT {MEMORY_SCOPE_SQL} FROM memories AS m
        WHERE m.id = memories_fts.rowid)
    WHERE rowid IN (SELECT id FROM memories WHERE chat_key = ?1)""",
)
RESCOPE_TURNS = (
    """UPDATE turns_fts SET scope = (SELECT 'c' || lower(hex(t.conv_key)) FROM turns AS t
        WHERE t.id = turns_fts.rowid)
    WHERE rowid IN (SELECT id FROM turns WHERE chat_key = ?1)""",
)
