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
from typing import Any, ClassVar

from bot.errors import StoreError
from bot.storage.audience import Audience
from bot.storage.bounds import fits_int64
from bot.storage.memories import FoundTurn, NewMemory, storable_memory
from bot.storage.postgres.connection import Database
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
from bot.storage.values import Memory, MemoryScope

__all__ = ["PostgresMemories"]

_COLUMNS = "m.id, m.chat_key, m.conv_key, m.user_id, m.user_name, m.scope, m.text, m.created_at"

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

_UNEMBEDDED = """
SELECT m.id, m.text FROM memories AS m LEFT JOIN memory_vectors AS v ON v.memory_id = m.id
WHERE m.id > $1 AND (v.memory_id IS NULL OR v.model <> $2) ORDER BY m.id LIMIT $3
"""

# The audience's newest memories with a vector of this model and size: the rule's three
# branches, each newest first on its own index and cut at $7, then merged.
_VECTOR_BRANCH = f"""(SELECT {_COLUMNS}, v.vector FROM memories AS m
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


_TURN_COLUMNS = "t.id, t.user_id, t.user_name, t.user_text, t.created_at"
_AFTER_RESET = "t.id > coalesce((SELECT after_turn_id FROM resets WHERE conv_key = $1), 0)"

# The conversation's newest turns first, on turns_by_conversation; each vector by primary key.
_TURN_VECTORS = f"""
SELECT {_TURN_COLUMNS}, v.vector FROM turns AS t JOIN turn_vectors AS v ON v.turn_id = t.id
WHERE t.conv_key = $1 AND t.id < $2 AND {_AFTER_RESET} AND v.model = $3 AND v.dims = $4
ORDER BY t.id DESC LIMIT $5
"""

_UNEMBEDDED_TURNS = f"""
SELECT t.id, t.user_text FROM turns AS t LEFT JOIN turn_vectors AS v ON v.turn_id = t.id
WHERE t.conv_key = $1 AND t.id > $4 AND {_AFTER_RESET} AND (v.turn_id IS NULL OR v.model <> $2)
ORDER BY t.id DESC LIMIT $3
"""

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


def _found_turn(row: Any, score: float = 0.0) -> FoundTurn:
    return FoundTurn(int(row[0]), str(row[1]), str(row[2]), str(row[3]), float(row[4]), score)


def _memory(row: Any, score: float = 0.0) -> Memory:
    return Memory(
        int(row[0]),
        str(row[1]),
        str(row[2]),
        str(row[3]),
        str(row[4]),
        MemoryScope(row[5]),
        str(row[6]),
        float(row[7]),
        score,
    )


def _audience_args(audience: Audience) -> tuple[str, str, str, str | None]:
    prefix = audience.platform_prefix if audience.share_private else None
    return audience.conversation_key, audience.chat_key, audience.user_id, prefix


class PostgresMemories:
    """:class:`~bot.storage.memories.MemoryRecords`, ``MemorySearch`` and ``MemoryVectors``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    SCHEMA: ClassVar[tuple[str, tuple[str, ...]]] = MEMORY_SEARCH_COMPONENT

    # -- records ---------------------------------------------------------------------------

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

    async def delete_memory(self, memory_id: int, *, chat_key: str, user_id: str | None) -> bool:
        if not fits_int64(memory_id):  # no row has it (and the driver would raise)
            return False
        async with self._db.acquire() as conn:  # its vector cascades, its index is its row
            status = await conn.execute(
                "DELETE FROM memories WHERE id = $1 AND chat_key = $2"
                " AND ($3::text IS NULL OR user_id = $3::text)",
                memory_id,
                chat_key,
                user_id,
            )
        return _count(status) > 0

    async def list_memories(
        self, chat_key: str, user_id: str | None = None, limit: int = 50
    ) -> list[Memory]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                f"SELECT {_COLUMNS} FROM memories AS m WHERE m.chat_key = $1"
                " AND ($2::text IS NULL OR m.user_id = $2::text) ORDER BY m.id DESC LIMIT $3",
                chat_key,
                user_id,
                max(limit, 0),
            )
        return [_memory(row) for row in rows]

    async def clear_memories(self, chat_key: str) -> int:
        async with self._db.acquire() as conn:
            status = await conn.execute("DELETE FROM memories WHERE chat_key = $1", chat_key)
        return _count(status)

    async def move_memories(self, old_chat_key: str, new_chat_key: str) -> int:
        async with self._db.acquire() as conn:  # the index reads these columns: nothing else
            status = await conn.execute(
                "UPDATE memories SET chat_key = $1, conv_key = $1 || substr(conv_key, $3)"
                " WHERE chat_key = $2",
                new_chat_key,
                old_chat_key,
                len(old_chat_key) + 1,
            )
        return _count(status)

    # -- full-text search ------------------------------------------------------------------

    async def search_memories(
        self, audience: Audience, query: str, *, limit: int, min_score: float
    ) -> list[Memory]:
        terms = search_terms(query)
        if not terms or limit <= 0:
            return []
        await catch_up(self._db, MEMORIES, 1000)  # rows another writer inserted, if any
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                MEMORY_SEARCH_SQL, terms, *_audience_args(audience), min_score, limit
            )
        return [_memory(row, float(row[-1])) for row in rows]

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
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                TURN_SEARCH_SQL, terms, conversation_key, before_turn_id, min_score, limit
            )
        return [_found_turn(row, float(row[-1])) for row in rows]

    async def index_turns(self, batch: int = 1000) -> int:
        """Index the turns nobody has indexed yet; returns how many this call indexed.
        Indexers take turns (an advisory lock), so no turn is indexed twice."""
        return await catch_up(self._db, TURNS, batch)

    # -- vectors ---------------------------------------------------------------------------

    async def put_vectors(self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        await self._put_vectors(_PUT_VECTORS, model, vectors)  # memory ids

    async def unembedded(self, model: str, after_id: int, limit: int) -> list[tuple[int, str]]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(_UNEMBEDDED, after_id, model, max(limit, 0))
        return [(int(row[0]), str(row[1])) for row in rows]

    async def memory_vectors(
        self, audience: Audience, model: str, dims: int, limit: int
    ) -> list[tuple[Memory, Sequence[float]]]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(_VECTORS, *_audience_args(audience), model, dims, max(limit, 0))
        return [(_memory(row), unpack_vector(bytes(row[-1]))) for row in rows]

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
        async with self._db.acquire() as conn:
            await conn.execute(
                sql,
                model,
                list(latest),
                [len(vector) for vector in latest.values()],
                [pack_vector(vector) for vector in latest.values()],
            )

    async def unembedded_turns(
        self, conversation_key: str, model: str, *, after_turn_id: int, limit: int
    ) -> list[tuple[int, str]]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                _UNEMBEDDED_TURNS, conversation_key, model, max(limit, 0), after_turn_id
            )
        return [(int(row[0]), str(row[1])) for row in rows]

    async def turn_vectors(
        self, conversation_key: str, model: str, dims: int, *, before_turn_id: int, limit: int
    ) -> list[tuple[FoundTurn, Sequence[float]]]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                _TURN_VECTORS, conversation_key, before_turn_id, model, dims, max(limit, 0)
            )
        return [(_found_turn(row), unpack_vector(bytes(row[-1]))) for row in rows]


def _count(status: str) -> int:
    """The row count of a command tag such as ``DELETE 3`` or ``UPDATE 0``."""
    try:
        return int(status.rsplit(" ", 1)[-1])
    except ValueError:
        return 0
