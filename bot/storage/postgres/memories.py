"""Memories, their full-text and vector search, and the index of past user messages, in
PostgreSQL (:mod:`bot.storage.memories` is the contract; SQLite's twin is
:mod:`bot.storage.sqlite.memories`).

* **Full text**: a ``tsvector`` column on ``memories`` and ``turns`` holding the same
  :func:`~bot.memory.search.search_form` tokens SQLite indexes (CJK as bigrams), so Chinese and
  Japanese find what SQLite finds; a GIN index; no extension (:mod:`.memory_schema`).
* **Score**: BM25 in SQL, the formula and statistics of FTS5's ``bm25()`` including SQLite's
  16 smoothing rows, so ``score`` and ``min_score`` mean what they mean there
  (:mod:`.search_bm25` says how and why).
* **Isolation**: the :class:`~bot.memory.scope.Audience` rule is the hits' WHERE clause (three
  disjoint branches: the conversation, my facts in this chat, my private memories on this
  platform), so ranking only ever sees admitted rows; nothing is filtered afterwards. It reads
  the memory's own columns, so a chat migration or ``move_memories`` needs no re-indexing.
* **Turns** are indexed lazily and once (:func:`.search_index.catch_up`): ``search_turns``
  catches up first, so it sees every turn stored before the call.
* **Vectors**: float32 little-endian bytes (:func:`~bot.memory.search.pack_vector`) keyed by
  memory, cascading with it; written only for memories that still exist.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from bot.errors import StoreError
from bot.storage.audience import Audience
from bot.storage.memories import storable_memory
from bot.storage.postgres.connection import Database, PostgresSeam
from bot.storage.postgres.memory_schema import MEMORY_SEARCH_COMPONENT
from bot.storage.postgres.search_bm25 import MEMORY_SEARCH_SQL, TURN_SEARCH_SQL
from bot.storage.postgres.search_index import (
    FOLD_AFTER,
    MEMORIES,
    TURNS,
    catch_up,
    fold_totals,
    search_terms,
    search_text,
)
from bot.storage.search_text import pack_vector, unpack_vector
from bot.storage.sql.memories import COLUMNS, MemoryRows, audience_args, found_turn, memory_of
from bot.values import FoundTurn, Memory, NewMemory

__all__ = ["PostgresMemories"]

# One statement: the memory, its index entry, its share of the totals and its vector.
_ADD = """
WITH form AS (SELECT to_tsvector('parlour_search', $9::text) AS v),
added AS (
    INSERT INTO memories (chat_key, conv_key, user_id, user_name, scope, text, source_turn_id,
                          created_by, created_at, search, search_len)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $10, v,
           search_tokens(v) + CASE $5 WHEN 'chat' THEN 1 ELSE 2 END
    FROM form
    RETURNING id, search, search_len
),
df AS (INSERT INTO search_df AS d (tbl, lexeme, docs)
    SELECT 'memories', u.lexeme, 1 FROM added CROSS JOIN unnest(added.search) AS u
    ORDER BY u.lexeme
    ON CONFLICT (tbl, lexeme) DO UPDATE SET docs = d.docs + excluded.docs),
counted AS (INSERT INTO search_totals (tbl, docs, tokens)
    SELECT 'memories', 1, search_len FROM added),
vector AS (INSERT INTO memory_vectors (memory_id, model, dims, vector)
    SELECT id, $11, $12, $13 FROM added WHERE $13::bytea IS NOT NULL)
SELECT id, (SELECT count(*) FROM search_totals WHERE tbl = 'memories') FROM added
"""

# FOR KEY SHARE: a memory being deleted meanwhile is waited for and then skipped, so its
# vector is never written (and the foreign key never fails).
_PUT_VECTORS = """
INSERT INTO memory_vectors (memory_id, model, dims, vector)
SELECT m.id, $1, v.dims, v.vector
FROM unnest($2::bigint[], $3::integer[], $4::bytea[]) AS v (memory_id, dims, vector)
JOIN memories AS m ON m.id = v.memory_id
FOR KEY SHARE OF m
ON CONFLICT (memory_id) DO UPDATE
    SET model = excluded.model, dims = excluded.dims, vector = excluded.vector
"""

# The audience's newest memories with a vector of this model and size: the rule's three
# branches, each newest first on its own index and cut at $7, then merged.
_VECTOR_BRANCH = f"""(SELECT {COLUMNS}, v.vector FROM memories AS m
    JOIN memory_vectors AS v ON v.memory_id = m.id AND v.model = $5 AND v.dims = $6
    WHERE {{rule}} ORDER BY m.id DESC LIMIT $7)"""
_VECTORS = (
    "SELECT * FROM ("
    + " UNION ALL ".join(
        _VECTOR_BRANCH.format(rule=rule)
        for rule in (
            "m.conv_key = $1",
            "m.conv_key <> $1 AND m.chat_key = $2 AND m.user_id = $3 AND m.scope = 'member'",
            "m.conv_key <> $1 AND $4::text IS NOT NULL AND m.user_id = $3"
            " AND m.scope = 'private' AND starts_with(m.chat_key, $4::text)",
        )
    )
    + ") AS admitted ORDER BY id DESC LIMIT $7"
)


# FOR KEY SHARE, as for memories: a turn being deleted meanwhile gets no vector.
_PUT_TURN_VECTORS = """
INSERT INTO turn_vectors (turn_id, model, dims, vector)
SELECT t.id, $1, v.dims, v.vector
FROM unnest($2::bigint[], $3::integer[], $4::bytea[]) AS v (turn_id, dims, vector)
JOIN turns AS t ON t.id = v.turn_id
FOR KEY SHARE OF t
ON CONFLICT (turn_id) DO UPDATE
    SET model = excluded.model, dims = excluded.dims, vector = excluded.vector
"""


class PostgresMemories(MemoryRows):
    """:class:`MemoryRows` plus ``tsvector`` indexing, BM25 search and batch vector writes."""

    def __init__(self, db: Database) -> None:
        super().__init__(PostgresSeam(db))
        self._db = db

    SCHEMA: ClassVar[tuple[str, tuple[str, ...]]] = MEMORY_SEARCH_COMPONENT

    async def add_memory(
        self,
        memory: NewMemory,
        vector: Sequence[float] | None = None,
        model: str | None = None,
    ) -> Memory:
        m, now = storable_memory(memory), time.time()
        with_vector = vector is not None and model is not None
        async with self._db.transaction() as conn:
            row = await conn.fetchrow(
                _ADD,
                m.chat_key, m.conversation_key, m.user_id, m.user_name, m.scope.value, m.text,
                m.source_turn_id, m.created_by, search_text(m.text), now,
                model if with_vector else None,
                len(vector) if vector is not None and with_vector else None,
                pack_vector(vector) if vector is not None and with_vector else None,
            )  # fmt: skip
            if row is None:
                raise StoreError("the database returned no id for a new memory")
            if int(row[1]) >= FOLD_AFTER:
                await fold_totals(conn, MEMORIES.table, wait=False)
        return Memory(
            int(row[0]), m.chat_key, m.conversation_key, m.user_id, m.user_name, m.scope, m.text,
            now,
        )  # fmt: skip

    async def search_memories(
        self, audience: Audience, query: str, *, limit: int, min_score: float
    ) -> list[Memory]:
        terms = search_terms(query)
        if not terms or limit <= 0:
            return []
        await catch_up(self._db, MEMORIES, 1000)  # rows another writer inserted, if any
        rows = await self.db.fetch(
            MEMORY_SEARCH_SQL, terms, *audience_args(audience), min_score, limit
        )
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
        terms = search_terms(query)
        if not terms or limit <= 0:
            return []
        await self.index_turns()
        rows = await self.db.fetch(
            TURN_SEARCH_SQL, terms, conversation_key, before_turn_id, min_score, limit
        )
        return [found_turn(row, float(row[-1])) for row in rows]

    async def index_turns(self, batch: int = 1000) -> int:
        """Index the turns nobody has indexed yet; returns how many this call indexed.
        Indexers take turns (an advisory lock), so no turn is indexed twice."""
        return await catch_up(self._db, TURNS, batch)

    async def put_vectors(self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        await self._put_vectors(_PUT_VECTORS, model, vectors)  # memory ids

    async def memory_vectors(
        self, audience: Audience, model: str, dims: int, limit: int
    ) -> list[tuple[Memory, Sequence[float]]]:
        rows = await self.db.fetch(_VECTORS, *audience_args(audience), model, dims, max(limit, 0))
        return [(memory_of(row), unpack_vector(bytes(row[-1]))) for row in rows]

    async def put_turn_vectors(
        self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None:
        await self._put_vectors(_PUT_TURN_VECTORS, model, vectors)  # turn ids

    async def _put_vectors(
        self, sql: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None:
        """One statement for the batch; one row per id, the last vector given for it."""
        latest = dict(vectors)
        if not latest:
            return
        await self.db.execute(
            sql,
            model,
            list(latest),
            [len(vector) for vector in latest.values()],
            [pack_vector(vector) for vector in latest.values()],
        )
