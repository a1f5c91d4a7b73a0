"""Memories, their full-text and vector search, and the index of past user messages, in SQLite.

The FTS5 tables hold the :func:`~bot.memory.search.search_form` of each text; FTS5's tokenizer
then only lower-cases, strips diacritics and Porter-stems English. Isolation is part of every
query's WHERE clause and of the index itself (the ``scope`` column, :mod:`.scopes`), never a
filter applied afterwards. The FTS index is the outer loop and rows are fetched by primary key,
so a search costs the query terms' postings, never a scan. A memory's index row is written in
the same transaction as the memory; deletes need no Python, so triggers do them. Turns are
indexed lazily (:meth:`SQLiteMemories.index_turns`): the turn writes know nothing of search
forms.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.errors import StoreError
from bot.storage.audience import Audience
from bot.storage.memories import storable_memory
from bot.storage.search_text import match_query, pack_vector, search_form, unpack_vector
from bot.storage.sql.memories import (
    COLUMNS,
    TURN_COLUMNS,
    MemoryRows,
    audience_args,
    found_turn,
    memory_of,
)
from bot.storage.sql.seam import Database, fetchval
from bot.storage.sqlite.scopes import (
    IN_AUDIENCE,
    RESCOPE_MEMORIES,
    audience_tokens,
    index_scope,
    scope_token,
)
from bot.values import FoundTurn, Memory, NewMemory

# CROSS JOIN keeps the FTS match as the outer loop; each hit is then one primary-key lookup.
# bm25 weights: the body counts, the scope column (see scopes.py) does not.
SEARCH_SQL = f"""
SELECT {COLUMNS}, -bm25(memories_fts, 1.0, 0.0) FROM memories_fts CROSS JOIN memories AS m
    ON m.id = memories_fts.rowid
WHERE memories_fts MATCH ?1 AND bm25(memories_fts, 1.0, 0.0) <= -?6
  AND {IN_AUDIENCE}
ORDER BY bm25(memories_fts, 1.0, 0.0), m.id DESC LIMIT ?7
"""

# ?1 is unused (NULL), so the audience clause keeps its parameter numbers. Newest first, capped.
# The IN list only lets SQLite use the indexes (an OR defeats them: it would scan every memory);
# it admits a superset of the audience, and IN_AUDIENCE still decides. ?5 ends in ":", so
# "platform;" bounds the platform's chat keys.
_VECTORS = f"""
SELECT {COLUMNS}, v.vector FROM memories AS m CROSS JOIN memory_vectors AS v
    ON v.memory_id = m.id
WHERE m.id IN (
        SELECT id FROM memories WHERE conv_key = ?2
        UNION ALL
        SELECT id FROM memories WHERE chat_key = ?3 AND user_id = ?4
        UNION ALL
        SELECT id FROM memories WHERE ?5 IS NOT NULL AND chat_key >= ?5
            AND chat_key < substr(?5, 1, length(?5) - 1) || ';' AND user_id = ?4
    )
  AND {IN_AUDIENCE} AND v.model = ?6 AND v.dims = ?7
ORDER BY m.id DESC LIMIT ?8
"""

# INSERT ... SELECT: a memory deleted while its vector was being computed gets none.
_PUT_VECTOR = """
INSERT OR REPLACE INTO memory_vectors (memory_id, model, dims, vector)
    SELECT id, ?2, ?3, ?4 FROM memories WHERE id = ?1
"""

SEARCH_TURNS_SQL = f"""
SELECT {TURN_COLUMNS}, -bm25(turns_fts, 1.0, 0.0) FROM turns_fts CROSS JOIN turns AS t
    ON t.id = turns_fts.rowid
WHERE turns_fts MATCH ?1 AND turns_fts.rowid < ?2 AND t.conv_key = ?3
  AND bm25(turns_fts, 1.0, 0.0) <= -?4
  AND t.id > coalesce((SELECT after_turn_id FROM resets WHERE conv_key = ?3), 0)
ORDER BY bm25(turns_fts, 1.0, 0.0), t.id DESC LIMIT ?5
"""

_PUT_TURN_VECTOR = """
INSERT OR REPLACE INTO turn_vectors (turn_id, model, dims, vector)
    SELECT id, ?2, ?3, ?4 FROM turns WHERE id = ?1
"""


def within(scopes: list[str], terms: str) -> str:
    """An FTS5 query: any of ``terms`` in the body, only in rows of one of ``scopes``."""
    wanted = " OR ".join(f'"{token}"' for token in scopes)
    return f"scope : ({wanted}) AND body : ({terms})"


class SQLiteMemories(MemoryRows):
    """:class:`MemoryRows` plus FTS5 indexing and search, and SQLite's vector statements."""

    def __init__(self, db: Database) -> None:
        super().__init__(db, RESCOPE_MEMORIES)

    async def add_memory(
        self,
        memory: NewMemory,
        vector: Sequence[float] | None = None,
        model: str | None = None,
    ) -> Memory:
        m, now = storable_memory(memory), time.time()
        async with self.db.transaction() as tx:
            rows = await tx.fetch(
                "INSERT INTO memories (chat_key, conv_key, user_id, user_name, scope, text,"
                " source_turn_id, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8,"
                " $9) RETURNING id",
                m.chat_key, m.conversation_key, m.user_id, m.user_name, m.scope.value, m.text,
                m.source_turn_id, m.created_by, now,
            )  # fmt: skip
            if not rows:
                raise StoreError("the database returned no id for a new memory")
            memory_id = int(rows[0][0])
            tokens = index_scope(m.chat_key, m.conversation_key, m.user_id, m.scope)
            await tx.execute(
                "INSERT INTO memories_fts (rowid, body, scope) VALUES ($1, $2, $3)",
                memory_id,
                search_form(m.text),
                tokens,
            )
            if vector is not None and model is not None:
                await tx.execute(_PUT_VECTOR, memory_id, model, len(vector), pack_vector(vector))
        return Memory(
            memory_id, m.chat_key, m.conversation_key, m.user_id, m.user_name, m.scope, m.text, now
        )

    async def search_memories(
        self, audience: Audience, query: str, *, limit: int, min_score: float
    ) -> list[Memory]:
        fts_query = match_query(query)
        if fts_query is None or limit <= 0:
            return []
        terms = within(audience_tokens(audience), fts_query)
        rows = await self.db.fetch(SEARCH_SQL, terms, *audience_args(audience), min_score, limit)
        return [memory_of(row, float(row[-1])) for row in rows]

    async def search_turns(
        self,
        conversation_key: str,
        query: str,
        *,
        before_turn_id: int,
        limit: int,
        min_score: float,
    ) -> list[FoundTurn]:
        fts_query = match_query(query)
        if fts_query is None or limit <= 0:
            return []
        await self.index_turns()
        terms = within([scope_token("c", conversation_key)], fts_query)
        rows = await self.db.fetch(
            SEARCH_TURNS_SQL, terms, before_turn_id, conversation_key, min_score, limit
        )
        return [found_turn(row, float(row[-1])) for row in rows]

    async def index_turns(self, batch: int = 1000) -> int:
        """Index the user messages written since the last call; returns how many.

        Turn ids only grow, so the highest indexed id is the watermark; reading it inside the
        write transaction keeps two processes from indexing a turn twice.
        """
        behind = await fetchval(
            self.db,
            "SELECT (SELECT coalesce(max(id), 0) FROM turns)"
            " > (SELECT coalesce(max(rowid), 0) FROM turns_fts)",
        )
        indexed = 0
        while behind:
            async with self.db.transaction() as tx:
                rows = await tx.fetch(
                    "SELECT id, user_text, conv_key FROM turns WHERE id >"
                    " (SELECT coalesce(max(rowid), 0) FROM turns_fts) ORDER BY id LIMIT $1",
                    batch,
                )
                await tx.executemany(
                    "INSERT INTO turns_fts (rowid, body, scope) VALUES ($1, $2, $3)",
                    [(i, search_form(text), scope_token("c", key)) for i, text, key in rows],
                )
            indexed += len(rows)
            behind = len(rows) >= batch
        return indexed

    async def put_vectors(self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        await self._put(_PUT_VECTOR, model, vectors)  # memory ids

    async def put_turn_vectors(
        self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None:
        await self._put(_PUT_TURN_VECTOR, model, vectors)  # turn ids

    async def _put(
        self, sql: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None:
        async with self.db.transaction() as tx:
            await tx.executemany(
                sql, [(i, model, len(vector), pack_vector(vector)) for i, vector in vectors]
            )

    async def memory_vectors(
        self, audience: Audience, model: str, dims: int, limit: int
    ) -> list[tuple[Memory, Sequence[float]]]:
        rows = await self.db.fetch(_VECTORS, None, *audience_args(audience), model, dims, limit)
        return [(memory_of(row), unpack_vector(bytes(row[-1]))) for row in rows]
