"""Memory records and the vector reads both backends run alike (:mod:`bot.storage.memories`).

:class:`MemoryRows` is everything but what really differs: adding a memory (SQLite indexes it in
FTS5, PostgreSQL in a ``tsvector`` with BM25 totals), full-text search and scoring, the vector
batch writes (PostgreSQL writes a batch as one ``unnest``) and the audience's vectors (each
backend's index-friendly form). Those stay in ``bot.storage.<backend>.memories``, a subclass.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.storage.audience import Audience
from bot.storage.bounds import fits_int64
from bot.storage.search_text import unpack_vector
from bot.storage.sql.seam import Database, Row
from bot.values import FoundTurn, Memory, MemoryScope

__all__ = ["COLUMNS", "TURN_COLUMNS", "MemoryRows", "audience_args", "found_turn", "memory_of"]

COLUMNS = "m.id, m.chat_key, m.conv_key, m.user_id, m.user_name, m.scope, m.text, m.created_at"
TURN_COLUMNS = "t.id, t.user_id, t.user_name, t.user_text, t.created_at"

_UNEMBEDDED = """
SELECT m.id, m.text FROM memories AS m LEFT JOIN memory_vectors AS v ON v.memory_id = m.id
WHERE m.id > $1 AND (v.memory_id IS NULL OR v.model <> $2) ORDER BY m.id LIMIT $3
"""

_AFTER_RESET = "t.id > coalesce((SELECT after_turn_id FROM resets WHERE conv_key = $1), 0)"

# The conversation's newest turns first, on turns_by_conversation; each vector by primary key
# (CROSS JOIN: SQLite keeps the turns as the outer loop).
_TURN_VECTORS = f"""
SELECT {TURN_COLUMNS}, v.vector FROM turns AS t CROSS JOIN turn_vectors AS v
WHERE v.turn_id = t.id AND t.conv_key = $1 AND t.id < $2 AND {_AFTER_RESET}
  AND v.model = $3 AND v.dims = $4
ORDER BY t.id DESC LIMIT $5
"""

_UNEMBEDDED_TURNS = f"""
SELECT t.id, t.user_text FROM turns AS t LEFT JOIN turn_vectors AS v ON v.turn_id = t.id
WHERE t.conv_key = $1 AND t.id > $4 AND {_AFTER_RESET} AND (v.turn_id IS NULL OR v.model <> $2)
ORDER BY t.id DESC LIMIT $3
"""


# For each found turn (``$3``), the conversation's turn right before it and right after it, below
# ``$2`` and after the last reset; each by the (conv_key, id) index.
_BESIDE = f"""
SELECT f.id, {TURN_COLUMNS} FROM turns AS f CROSS JOIN turns AS t
WHERE {{found}} AND f.conv_key = $1 AND t.id IN (
    (SELECT max(p.id) FROM turns AS p WHERE p.conv_key = $1 AND p.id < f.id),
    (SELECT min(n.id) FROM turns AS n WHERE n.conv_key = $1 AND n.id > f.id))
  AND t.id < $2 AND {_AFTER_RESET}
ORDER BY f.id, t.id DESC
"""


def audience_args(audience: Audience) -> tuple[str, str, str, str | None]:
    """The audience rule's parameters: conversation, chat, user, and the "platform:" prefix
    when private memories may join (else NULL)."""
    prefix = audience.platform_prefix if audience.share_private else None
    return audience.conversation_key, audience.chat_key, audience.user_id, prefix


def found_turn(row: Row, score: float = 0.0) -> FoundTurn:
    return FoundTurn(int(row[0]), str(row[1]), str(row[2]), str(row[3]), float(row[4]), score)


def memory_of(row: Row, score: float = 0.0) -> Memory:
    memory_id, chat_key, conv_key, user_id, user_name, scope, text, created_at = row[:8]
    return Memory(
        int(memory_id),
        str(chat_key),
        str(conv_key),
        str(user_id),
        str(user_name),
        MemoryScope(scope),
        str(text),
        float(created_at),
        score,
    )


class MemoryRows:
    """The records and vector reads of ``MemoryRecords`` and ``MemoryVectors``.
    ``rescope``: statements (``$1``: the new chat key) that keep a backend's index naming the
    chat its memories moved to."""

    def __init__(self, db: Database, rescope: Sequence[str] = ()) -> None:
        self.db, self._rescope = db, tuple(rescope)

    async def delete_memory(self, memory_id: int, *, chat_key: str, user_id: str | None) -> bool:
        if not fits_int64(memory_id):  # no row has it (and the driver would raise)
            return False
        return (  # its vector and index go with it (a cascade, a trigger or its own row)
            await self.db.execute(
                "DELETE FROM memories WHERE id = $1 AND chat_key = $2"
                " AND (CAST($3 AS TEXT) IS NULL OR user_id = $3)",
                memory_id,
                chat_key,
                user_id,
            )
            > 0
        )

    async def list_memories(
        self, chat_key: str, user_id: str | None = None, limit: int = 50
    ) -> list[Memory]:
        rows = await self.db.fetch(
            f"SELECT {COLUMNS} FROM memories AS m WHERE m.chat_key = $1"
            " AND (CAST($2 AS TEXT) IS NULL OR m.user_id = $2) ORDER BY m.id DESC LIMIT $3",
            chat_key,
            user_id,
            max(limit, 0),
        )
        return [memory_of(row) for row in rows]

    async def clear_memories(self, chat_key: str) -> int:
        return await self.db.execute("DELETE FROM memories WHERE chat_key = $1", chat_key)

    async def move_memories(self, old_chat_key: str, new_chat_key: str) -> int:
        async with self.db.transaction() as tx:
            moved = await tx.execute(
                "UPDATE memories SET chat_key = $1, conv_key = $1 || substr(conv_key, $3)"
                " WHERE chat_key = $2",
                new_chat_key,
                old_chat_key,
                len(old_chat_key) + 1,
            )
            for statement in self._rescope:
                await tx.execute(statement, new_chat_key)
        return moved

    async def unembedded(self, model: str, after_id: int, limit: int) -> list[tuple[int, str]]:
        rows = await self.db.fetch(_UNEMBEDDED, after_id, model, max(limit, 0))
        return [(int(memory_id), str(text)) for memory_id, text in rows]

    async def unembedded_turns(
        self, conversation_key: str, model: str, *, after_turn_id: int, limit: int
    ) -> list[tuple[int, str]]:
        rows = await self.db.fetch(
            _UNEMBEDDED_TURNS, conversation_key, model, max(limit, 0), after_turn_id
        )
        return [(int(turn_id), str(text)) for turn_id, text in rows]

    async def turns_beside(
        self, conversation_key: str, turn_ids: Sequence[int], *, before_turn_id: int
    ) -> dict[int, list[FoundTurn]]:
        wanted = sorted({i for i in turn_ids if fits_int64(i)})
        if not wanted:
            return {}
        found = self.db.dialect.in_array("f.id", "$3", "bigint")
        rows = await self.db.fetch(
            _BESIDE.format(found=found),
            conversation_key,
            before_turn_id,
            self.db.dialect.array(wanted),
        )
        beside: dict[int, list[FoundTurn]] = {}
        for row in rows:
            beside.setdefault(int(row[0]), []).append(found_turn(row[1:]))
        return beside

    async def turn_vectors(
        self, conversation_key: str, model: str, dims: int, *, before_turn_id: int, limit: int
    ) -> list[tuple[FoundTurn, Sequence[float]]]:
        rows = await self.db.fetch(
            _TURN_VECTORS, conversation_key, before_turn_id, model, dims, max(limit, 0)
        )
        return [(found_turn(row), unpack_vector(bytes(row[-1]))) for row in rows]
