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
from typing import Any

from bot.errors import StoreError
from bot.storage.audience import Audience
from bot.storage.bounds import fits_int64
from bot.storage.memories import FoundTurn, NewMemory, storable_memory
from bot.storage.search_text import match_query, pack_vector, search_form, unpack_vector
from bot.storage.sqlite.connection import Database
from bot.storage.sqlite.scopes import (
    IN_AUDIENCE,
    RESCOPE_MEMORIES,
    audience_args,
    audience_tokens,
    index_scope,
    scope_token,
)
from bot.storage.values import Memory, MemoryScope

_COLUMNS = "m.id, m.chat_key, m.conv_key, m.user_id, m.user_name, m.scope, m.text, m.created_at"

# CROSS JOIN keeps the FTS match as the outer loop; each hit is then one primary-key lookup.
# bm25 weights: the body counts, the scope column (see scopes.py) does not.
SEARCH_SQL = f"""
SELECT {_COLUMNS}, -bm25(memories_fts, 1.0, 0.0) FROM memories_fts CROSS JOIN memories AS m
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
SELECT {_COLUMNS}, 0.0, v.vector FROM memories AS m CROSS JOIN memory_vectors AS v
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

_UNEMBEDDED = """
SELECT m.id, m.text FROM memories AS m LEFT JOIN memory_vectors AS v ON v.memory_id = m.id
WHERE m.id > ?1 AND (v.memory_id IS NULL OR v.model != ?2) ORDER BY m.id LIMIT ?3
"""

# INSERT ... SELECT: a memory deleted while its vector was being computed gets none.
_PUT_VECTOR = """
INSERT OR REPLACE INTO memory_vectors (memory_id, model, dims, vector)
    SELECT id, ?2, ?3, ?4 FROM memories WHERE id = ?1
"""

_TURN_COLUMNS = "t.id, t.user_id, t.user_name, t.user_text, t.created_at"

SEARCH_TURNS_SQL = f"""
SELECT {_TURN_COLUMNS}, -bm25(turns_fts, 1.0, 0.0) FROM turns_fts CROSS JOIN turns AS t
    ON t.id = turns_fts.rowid
WHERE turns_fts MATCH ?1 AND turns_fts.rowid < ?2 AND t.conv_key = ?3
  AND bm25(turns_fts, 1.0, 0.0) <= -?4
  AND t.id > coalesce((SELECT after_turn_id FROM resets WHERE conv_key = ?3), 0)
ORDER BY bm25(turns_fts, 1.0, 0.0), t.id DESC LIMIT ?5
"""

_AFTER_RESET = "t.id > coalesce((SELECT after_turn_id FROM resets WHERE conv_key = ?1), 0)"

# The conversation's newest turns first, on turns_by_conversation; each vector by primary key.
_TURN_VECTORS = f"""
SELECT {_TURN_COLUMNS}, 0.0, v.vector FROM turns AS t CROSS JOIN turn_vectors AS v
    ON v.turn_id = t.id
WHERE t.conv_key = ?1 AND t.id < ?2 AND {_AFTER_RESET} AND v.model = ?3 AND v.dims = ?4
ORDER BY t.id DESC LIMIT ?5
"""

_UNEMBEDDED_TURNS = f"""
SELECT t.id, t.user_text FROM turns AS t LEFT JOIN turn_vectors AS v ON v.turn_id = t.id
WHERE t.conv_key = ?1 AND t.id > ?4 AND {_AFTER_RESET} AND (v.turn_id IS NULL OR v.model != ?2)
ORDER BY t.id DESC LIMIT ?3
"""

_PUT_TURN_VECTOR = """
INSERT OR REPLACE INTO turn_vectors (turn_id, model, dims, vector)
    SELECT id, ?2, ?3, ?4 FROM turns WHERE id = ?1
"""


def within(scopes: list[str], terms: str) -> str:
    """An FTS5 query: any of ``terms`` in the body, only in rows of one of ``scopes``."""
    wanted = " OR ".join(f'"{token}"' for token in scopes)
    return f"scope : ({wanted}) AND body : ({terms})"


def _found_turn(row: Any) -> FoundTurn:
    turn_id, user_id, user_name, text, created_at, score = row
    return FoundTurn(
        int(turn_id), str(user_id), str(user_name), str(text), float(created_at), float(score)
    )


def _memory(row: Any) -> Memory:
    memory_id, chat_key, conv_key, user_id, user_name, scope, text, created_at, score = row
    return Memory(
        int(memory_id),
        str(chat_key),
        str(conv_key),
        str(user_id),
        str(user_name),
        MemoryScope(scope),
        str(text),
        float(created_at),
        float(score),
    )


class SQLiteMemories:
    def __init__(self, db: Database) -> None:
        self._db = db

    # -- records ---------------------------------------------------------------------------

    async def add_memory(
        self,
        memory: NewMemory,
        vector: Sequence[float] | None = None,
        model: str | None = None,
    ) -> Memory:
        m, now = storable_memory(memory), time.time()
        async with self._db.transaction() as conn:
            row = await conn.execute_insert(
                "INSERT INTO memories (chat_key, conv_key, user_id, user_name, scope, text,"
                " source_turn_id, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (m.chat_key, m.conversation_key, m.user_id, m.user_name, m.scope.value, m.text,
                 m.source_turn_id, m.created_by, now),
            )  # fmt: skip
            if row is None:
                raise StoreError("the database returned no id for a new memory")
            memory_id = int(row[0])
            tokens = index_scope(m.chat_key, m.conversation_key, m.user_id, m.scope)
            await conn.execute(
                "INSERT INTO memories_fts (rowid, body, scope) VALUES (?, ?, ?)",
                (memory_id, search_form(m.text), tokens),
            )
            if vector is not None and model is not None:
                await conn.execute(
                    _PUT_VECTOR, (memory_id, model, len(vector), pack_vector(vector))
                )
        return Memory(
            memory_id, m.chat_key, m.conversation_key, m.user_id, m.user_name, m.scope, m.text, now
        )

    async def delete_memory(self, memory_id: int, *, chat_key: str, user_id: str | None) -> bool:
        if not fits_int64(memory_id):  # no row has it (and the driver would raise)
            return False
        async with self._db.writing() as conn:  # the trigger drops the index row with it
            cursor = await conn.execute(
                "DELETE FROM memories WHERE id = ?1 AND chat_key = ?2"
                " AND (?3 IS NULL OR user_id = ?3)",
                (memory_id, chat_key, user_id),
            )
        return cursor.rowcount > 0

    async def list_memories(
        self, chat_key: str, user_id: str | None = None, limit: int = 50
    ) -> list[Memory]:
        rows = await self._db.reader.execute_fetchall(
            f"SELECT {_COLUMNS}, 0.0 FROM memories AS m WHERE m.chat_key = ?1"
            " AND (?2 IS NULL OR m.user_id = ?2) ORDER BY m.id DESC LIMIT ?3",
            (chat_key, user_id, limit),
        )
        return [_memory(row) for row in rows]

    async def clear_memories(self, chat_key: str) -> int:
        async with self._db.writing() as conn:
            cursor = await conn.execute("DELETE FROM memories WHERE chat_key = ?", (chat_key,))
        return cursor.rowcount

    async def move_memories(self, old_chat_key: str, new_chat_key: str) -> int:
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE memories SET chat_key = ?1, conv_key = ?1 || substr(conv_key, ?3)"
                " WHERE chat_key = ?2",
                (new_chat_key, old_chat_key, len(old_chat_key) + 1),
            )
            for statement in RESCOPE_MEMORIES:
                await conn.execute(statement, (new_chat_key,))
        return cursor.rowcount

    # -- full-text search ------------------------------------------------------------------

    async def search_memories(
        self, audience: Audience, query: str, *, limit: int, min_score: float
    ) -> list[Memory]:
        fts_query = match_query(query)
        if fts_query is None or limit <= 0:
            return []
        rows = await self._db.reader.execute_fetchall(
            SEARCH_SQL,
            (
                within(audience_tokens(audience), fts_query),
                *audience_args(audience),
                min_score,
                limit,
            ),
        )
        return [_memory(row) for row in rows]

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
        rows = await self._db.reader.execute_fetchall(
            SEARCH_TURNS_SQL, (terms, before_turn_id, conversation_key, min_score, limit)
        )
        return [_found_turn(row) for row in rows]

    async def index_turns(self, batch: int = 1000) -> int:
        """Index the user messages written since the last call; returns how many.

        Turn ids only grow, so the highest indexed id is the watermark; reading it inside the
        write transaction keeps two processes from indexing a turn twice.
        """
        if not await self._turns_behind():
            return 0
        indexed = 0
        while True:
            async with self._db.transaction() as conn:
                rows = list(
                    await conn.execute_fetchall(
                        "SELECT id, user_text, conv_key FROM turns WHERE id >"
                        " (SELECT coalesce(max(rowid), 0) FROM turns_fts) ORDER BY id LIMIT ?",
                        (batch,),
                    )
                )
                await conn.executemany(
                    "INSERT INTO turns_fts (rowid, body, scope) VALUES (?, ?, ?)",
                    [(i, search_form(text), scope_token("c", key)) for i, text, key in rows],
                )
            indexed += len(rows)
            if len(rows) < batch:
                return indexed

    async def _turns_behind(self) -> bool:
        rows = await self._db.reader.execute_fetchall(
            "SELECT (SELECT coalesce(max(id), 0) FROM turns)"
            " > (SELECT coalesce(max(rowid), 0) FROM turns_fts)"
        )
        return bool(next(iter(rows))[0])

    # -- vectors ---------------------------------------------------------------------------

    async def put_vectors(self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        async with self._db.transaction() as conn:
            await conn.executemany(
                _PUT_VECTOR,
                [(i, model, len(vector), pack_vector(vector)) for i, vector in vectors],
            )

    async def unembedded(self, model: str, after_id: int, limit: int) -> list[tuple[int, str]]:
        rows = await self._db.reader.execute_fetchall(_UNEMBEDDED, (after_id, model, limit))
        return [(int(memory_id), str(text)) for memory_id, text in rows]

    async def memory_vectors(
        self, audience: Audience, model: str, dims: int, limit: int
    ) -> list[tuple[Memory, Sequence[float]]]:
        rows = await self._db.reader.execute_fetchall(
            _VECTORS, (None, *audience_args(audience), model, dims, limit)
        )
        return [(_memory(row[:-1]), unpack_vector(row[-1])) for row in rows]

    async def put_turn_vectors(
        self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None:
        async with self._db.transaction() as conn:
            await conn.executemany(
                _PUT_TURN_VECTOR,
                [(i, model, len(vector), pack_vector(vector)) for i, vector in vectors],
            )

    async def unembedded_turns(
        self, conversation_key: str, model: str, *, after_turn_id: int, limit: int
    ) -> list[tuple[int, str]]:
        rows = await self._db.reader.execute_fetchall(
            _UNEMBEDDED_TURNS, (conversation_key, model, limit, after_turn_id)
        )
        return [(int(turn_id), str(text)) for turn_id, text in rows]

    async def turn_vectors(
        self, conversation_key: str, model: str, dims: int, *, before_turn_id: int, limit: int
    ) -> list[tuple[FoundTurn, Sequence[float]]]:
        rows = await self._db.reader.execute_fetchall(
            _TURN_VECTORS, (conversation_key, before_turn_id, model, dims, limit)
        )
        return [(_found_turn(row[:-1]), unpack_vector(row[-1])) for row in rows]
