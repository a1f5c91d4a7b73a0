"""Scope tokens of the full-text indexes (``memories_fts``, ``turns_fts``; schema v7, v11).

Each index row carries the chat, user or conversation it belongs to as a token of its own
``scope`` column, so a search intersects its terms with one scope inside the index. The
isolation rule itself is :class:`bot.memory.scope.Audience`; this module says it in tokens and
SQL, and the conformance suite's property test holds them to ``Audience.admits``.
"""

from __future__ import annotations

from bot.storage.audience import Audience
from bot.values import MemoryScope

__all__ = [
    "IN_AUDIENCE",
    "MEMORY_SCOPE_SQL",
    "RESCOPE_MEMORIES",
    "RESCOPE_TURNS",
    "audience_tokens",
    "index_scope",
    "scope_token",
]


def scope_token(kind: str, key: str) -> str:
    """One index token naming a scope: ``c`` conversation, ``o`` chat + user (a member's own
    facts), ``p`` platform:user (private memories); ``k`` chat (before schema v11).

    Hex keeps any key (``telegram:-100:u:7``) a single token; SQL builds the same with
    ``lower(hex(key))`` (migration 7, RESCOPE_*).
    """
    return kind + key.encode("utf-8").hex()


def _own(chat_key: str, user_id: str) -> str:
    # A newline never occurs in a chat key, so the pair cannot be forged by another pair.
    return scope_token("o", f"{chat_key}\n{user_id}")


def index_scope(chat_key: str, conversation_key: str, user_id: str, scope: MemoryScope) -> str:
    """A memory's tokens in the ``scope`` column of ``memories_fts``: ``c`` its conversation,
    ``o`` chat+user for a member's own fact, ``p`` platform:user for a private one. The SQL of
    migration 11 and ``RESCOPE_MEMORIES`` builds the same."""
    tokens = [scope_token("c", conversation_key)]
    if scope is MemoryScope.MEMBER:
        tokens.append(_own(chat_key, user_id))
    elif scope is MemoryScope.PRIVATE:
        platform = chat_key.split(":", 1)[0]
        tokens.append(scope_token("p", f"{platform}:{user_id}"))
    return " ".join(tokens)


def audience_tokens(audience: Audience) -> list[str]:
    """The full-text scope tokens ``audience`` may match (see :func:`index_scope`)."""
    tokens = [
        scope_token("c", audience.conversation_key),
        _own(audience.chat_key, audience.user_id),
    ]
    if audience.share_private:
        tokens.append(scope_token("p", audience.platform_prefix + audience.user_id))
    return tokens


# The rule in SQL, over ``memories AS m``. ?2 conversation, ?3 chat, ?4 user, ?5 "platform:" when
# private memories may join (else NULL).
IN_AUDIENCE = """(m.conv_key = ?2
    OR (m.user_id = ?4 AND m.scope = 'member' AND m.chat_key = ?3)
    OR (?5 IS NOT NULL AND m.user_id = ?4 AND m.scope = 'private'
        AND substr(m.chat_key, 1, length(?5)) = ?5))"""

# A memory's index tokens (index_scope) from its row, in SQL.
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
