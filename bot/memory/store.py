"""Long-term memories and recall of old user messages: SQLite FTS5, scoped per chat.

Chinese and Japanese have no spaces, so FTS5's unicode61 tokenizer would take a whole sentence
for one word, and the trigram tokenizer cannot match two-character words (花生, peanut). Both the
indexed text and the query therefore go through :func:`search_form`, which turns every run of
CJK, kana or hangul into overlapping character bigrams and keeps other text as words; the FTS
tokenizer then only lower-cases, strips diacritics and Porter-stems English.

Isolation is part of every query's WHERE clause, never a filter applied afterwards: a search
returns only what its :class:`~bot.memory.scope.Audience` admits (the conversation's memories,
the asker's own facts in that chat, and on explicit opt-in the asker's own private memories on
that platform; ``bot.memory.scope`` states the rule). The FTS index is the outer loop and rows
are fetched by primary key, so a search costs the query terms' postings, never a scan.

:class:`MemoryStore` shares :class:`~bot.history.sqlite.SQLiteStore`'s file and connections
(``_writing``, ``_transaction``, ``_read``) on purpose: one writer lock for the whole database,
and an index row is written in the same transaction as the row it indexes.

With an :class:`~bot.llm.embeddings.Embedder` (``memory.embeddings.model`` set), each memory also
gets a unit vector (table ``memory_vectors``), and :meth:`MemoryStore.search` fuses two rankings
by reciprocal rank fusion (score = sum of 1 / (60 + rank)): BM25 as above, and cosine similarity
between the query's vector and the vectors of the memories the *same* scope clause admits. The
relevance floor still holds: a memory enters the fusion only if it passes the BM25 floor
(``min_score``) or its cosine reaches ``memory.embeddings.min_similarity`` -- fusion orders
relevant memories, it never promotes an unrelated one for being the best of a bad lot. Cosine is
plain Python over at most :data:`MAX_VECTOR_CANDIDATES` vectors (the chat's newest memories), in
a worker thread: a few thousand 1536-float dot products take tens to a few hundred ms, fine per
message; a larger corpus would want a vector index. When embedding fails, recall is FTS only and
a new memory is stored without a vector until :meth:`MemoryStore.backfill_vectors`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import operator
import re
import sys
import time
import unicodedata
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.context import ChatContext, Scope
from bot.errors import LLMError, StoreError
from bot.history.scopes import RESCOPE_MEMORIES, scope_token
from bot.history.sqlite import SQLiteStore
from bot.llm.embeddings import INTERACTIVE_POLICY, Embedder
from bot.memory.scope import IN_AUDIENCE, Audience, MemoryScope, index_scope

__all__ = ["Audience", "Memory", "MemoryScope", "MemoryStore", "match_query", "search_form"]

log = logging.getLogger(__name__)

# A reply (or a remember call) waits for these embeddings: a slow endpoint falls back to FTS,
# and a new memory is stored without its vector (the backfill adds it), instead of stalling.
INTERACTIVE_TIMEOUT = 3.0

# A bm25 relevance of 1.0 is one matching term found in at most ~27% of the indexed rows (idf =
# ln((N - n + 0.5) / (n + 0.5)) >= 1) in a row of average length. Rows matched only by terms
# more common than that -- in big indexes, the words everyone uses -- are not worth the prompt.
# The background rows the migration seeds keep the rare terms of a small index above it (one
# memory: idf ~2.4). A small index cannot tell from frequencies that "I" or "to" say nothing,
# so stop words never reach the query at all.
MIN_SCORE = 1.0
MAX_MEMORY_CHARS = 1000
MAX_QUERY_TERMS = 64  # a pasted essay must not become a thousand-term OR
RRF_K = 60  # the usual reciprocal-rank-fusion constant: top ranks matter, but not overwhelmingly
RRF_POOL = 50  # candidates taken from each ranking before fusing
MAX_VECTOR_CANDIDATES = 5000  # newest vectors scored per search; older ones: BM25 only

_CJK = (
    "\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
_TOKEN = re.compile(rf"([{_CJK}]+)|[^\W_{_CJK}]+")
# Dropped from queries (still indexed). Single CJK characters only occur as one-character runs.
_STOP_TEXT = """
    a about am an and any are as at be been but by can could d did do does for from had has have
    he her him his how i if in into is it its just ll m me my no not of on or our re s she so t
    than that the their them then there these they this those to us ve was we were what when
    where which who whom why will with would you your 的 了 是 我 你 他 她 它 吗 呢 の は が を に
    で と も か
"""
_STOP_WORDS = frozenset(_STOP_TEXT.split())


@dataclass(frozen=True, slots=True)
class Memory:
    memory_id: int
    chat_key: str
    conversation_key: str  # the conversation it was said in (bot.memory.scope)
    user_id: str
    user_name: str
    scope: MemoryScope
    text: str
    created_at: float
    # search relevance, higher is better: -bm25, or the fused RRF score with embeddings; 0
    # outside a search
    score: float = 0.0


def search_form(text: str) -> str:
    """``text`` as the FTS index sees it: words, and CJK runs as overlapping bigrams.

    NFKC first, so full-width Latin and half-width katakana index like their usual forms.
    """
    tokens: list[str] = []
    for match in _TOKEN.finditer(unicodedata.normalize("NFKC", text).casefold()):
        run = match.group(1)
        if run is None:
            tokens.append(match.group(0))
        elif len(run) == 1:
            tokens.append(run)
        else:
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return " ".join(tokens)


def _within(scopes: list[str], terms: str) -> str:
    """An FTS5 query: any of ``terms`` in the body, only in rows of one of ``scopes``."""
    wanted = " OR ".join(f'"{token}"' for token in scopes)
    return f"scope : ({wanted}) AND body : ({terms})"


def match_query(text: str) -> str | None:
    """An FTS5 query OR-ing ``text``'s terms, each quoted; None when nothing is left to match.

    Quoting makes every term a plain string to FTS5, so user text such as ``AND``, ``"``,
    ``*`` or ``NEAR(`` is searched for, never parsed as query syntax.
    """
    terms = dict.fromkeys(t for t in search_form(text).split() if t not in _STOP_WORDS)
    quoted = ['"' + t.replace('"', '""') + '"' for t in list(terms)[:MAX_QUERY_TERMS]]
    return " OR ".join(quoted) or None


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


_COLUMNS = "m.id, m.chat_key, m.conv_key, m.user_id, m.user_name, m.scope, m.text, m.created_at"

# CROSS JOIN keeps the FTS match as the outer loop; each hit is then one primary-key lookup.
# bm25 weights: the body counts, the scope column (see scope_tokens) does not.
_SEARCH = f"""
SELECT {_COLUMNS}, -bm25(memories_fts, 1.0, 0.0) FROM memories_fts CROSS JOIN memories AS m
    ON m.id = memories_fts.rowid
WHERE memories_fts MATCH ?1 AND bm25(memories_fts, 1.0, 0.0) <= -?6
  AND {IN_AUDIENCE}
ORDER BY bm25(memories_fts, 1.0, 0.0) LIMIT ?7
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

_SEARCH_TURNS = """
SELECT t.id, t.user_name, t.user_text FROM turns_fts CROSS JOIN turns AS t ON t.id = turns_fts.rowid
WHERE turns_fts MATCH ?1 AND turns_fts.rowid < ?2 AND t.conv_key = ?3
  AND bm25(turns_fts, 1.0, 0.0) <= -?4
  AND t.id > coalesce((SELECT after_turn_id FROM resets WHERE conv_key = ?3), 0)
ORDER BY bm25(turns_fts, 1.0, 0.0) LIMIT ?5
"""


def pack_vector(vector: Sequence[float]) -> bytes:
    """A vector as stored: float32, little-endian whatever the machine."""
    packed = array("f", vector)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def unpack_vector(blob: bytes) -> array[float]:
    packed = array("f")
    packed.frombytes(blob)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed


def _by_cosine(
    query: Sequence[float], rows: Sequence[Any], floor: float, top: int
) -> list[tuple[float, Memory]]:
    """The ``top`` rows whose vectors are at least ``floor`` similar to ``query``, best first.

    Vectors are stored normalised, so cosine is a dot product. Runs in a worker thread.
    """
    scored: list[tuple[float, Memory]] = []
    for row in rows:
        similarity = sum(map(operator.mul, query, unpack_vector(row[-1])))
        if similarity >= floor:
            scored.append((similarity, _memory(row[:-1])))
    scored.sort(key=lambda pair: (-pair[0], -pair[1].memory_id))
    return scored[:top]


def fuse(rankings: Sequence[Sequence[Memory]], limit: int, k: int = RRF_K) -> list[Memory]:
    """Reciprocal rank fusion: each memory scores the sum of 1 / (k + rank) over the rankings
    it appears in (rank 1 = best); ties go to the newer memory. Scores replace ``score``."""
    fused: dict[int, float] = {}
    found: dict[int, Memory] = {}
    for ranking in rankings:
        for rank, memory in enumerate(ranking, start=1):
            fused[memory.memory_id] = fused.get(memory.memory_id, 0.0) + 1.0 / (k + rank)
            found.setdefault(memory.memory_id, memory)
    best = sorted(fused, key=lambda memory_id: (-fused[memory_id], -memory_id))[:limit]
    return [dataclasses.replace(found[i], score=fused[i]) for i in best]


class MemoryStore:
    """Memories and the user-message index, in the history database of ``store``.

    Open ``store`` first; this class holds no connection of its own. With an ``embedder``,
    memories are embedded too and search fuses BM25 with cosine similarity (module docstring).
    """

    def __init__(
        self, store: SQLiteStore, embedder: Embedder | None = None, *, share_private: bool = False
    ) -> None:
        self._store = store
        self.embedder = embedder
        self.share_private = share_private  # memory.share_private: see audience()

    def audience(self, ctx: ChatContext, conversation_key: str) -> Audience:
        """What a search for ``ctx`` in ``conversation_key`` may return (``bot.memory.scope``)."""
        return Audience.of(ctx, conversation_key, share_private=self.share_private)

    async def add(
        self,
        ctx: ChatContext,
        text: str,
        *,
        conversation_key: str | None = None,
        chat_wide: bool = False,
        source_turn_id: int | None = None,
        created_by: str = "user",
    ) -> Memory:
        """Remember ``text`` in the conversation it was said in; ``created_by`` says who asked
        ("user", "tool", "summary").

        ``conversation_key`` is that conversation (default: the chat's shared one, or the
        private chat's). The scope follows where it was said: a private chat's memory is
        private; in a group it is about the member who said it, or about the group (or topic)
        when ``chat_wide``.
        """
        key = conversation_key or ctx.conversation_key(Scope.CHAT)
        if key != ctx.chat_key and not key.startswith(ctx.chat_key + ":"):
            raise ValueError(f"conversation {key!r} is not in chat {ctx.chat_key!r}")
        text = text.strip()
        if not text or len(text) > MAX_MEMORY_CHARS:
            raise ValueError(f"a memory needs 1 to {MAX_MEMORY_CHARS} characters")
        if ctx.is_private:
            scope = MemoryScope.PRIVATE
        else:
            scope = MemoryScope.CHAT if chat_wide else MemoryScope.MEMBER
        vector = await self._embed_new(text)  # before the write lock: it is a network call
        now = time.time()
        async with self._store._transaction() as conn:
            row = await conn.execute_insert(
                "INSERT INTO memories (chat_key, conv_key, user_id, user_name, scope, text,"
                " source_turn_id, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (ctx.chat_key, key, ctx.user_id, ctx.user_name, scope.value, text,
                 source_turn_id, created_by, now),
            )  # fmt: skip
            if row is None:
                raise StoreError("the database returned no id for a new memory")
            memory_id = int(row[0])
            tokens = index_scope(ctx.chat_key, key, ctx.user_id, scope)
            await conn.execute(
                "INSERT INTO memories_fts (rowid, body, scope) VALUES (?, ?, ?)",
                (memory_id, search_form(text), tokens),
            )
            if vector is not None and self.embedder is not None:
                await conn.execute(
                    _PUT_VECTOR, (memory_id, self.embedder.model, len(vector), pack_vector(vector))
                )
        return Memory(memory_id, ctx.chat_key, key, ctx.user_id, ctx.user_name, scope, text, now)

    async def _embed_new(self, text: str) -> list[float] | None:
        """The new memory's vector, or None: a memory is worth keeping without one."""
        if self.embedder is None:
            return None
        try:
            [vector] = await asyncio.wait_for(
                self.embedder.embed([text], policy=INTERACTIVE_POLICY), INTERACTIVE_TIMEOUT
            )
        except (LLMError, TimeoutError) as exc:
            log.warning("memory stored without a vector (backfill_vectors adds it): %r", exc)
            return None
        return vector

    async def backfill_vectors(self, batch: int = 64) -> int:
        """Embed the memories without a vector of the current model; returns how many.

        Fills the gaps left by failed embeddings, by memories from before embeddings were
        switched on, and by a change of model. Raises the ``LLMError`` of a failing endpoint
        (what was filled until then stays); safe to run again, and beside other writers.
        """
        if self.embedder is None:
            return 0
        model, after, filled = self.embedder.model, 0, 0
        while True:
            rows = list(
                await self._store._read.execute_fetchall(_UNEMBEDDED, (after, model, batch))
            )
            if not rows:
                return filled
            vectors = await self.embedder.embed([str(text) for _, text in rows])
            async with self._store._transaction() as conn:
                await conn.executemany(
                    _PUT_VECTOR,
                    [
                        (memory_id, model, len(vector), pack_vector(vector))
                        for (memory_id, _), vector in zip(rows, vectors, strict=True)
                    ],
                )
            filled += len(rows)
            after = int(rows[-1][0])

    async def delete(self, memory_id: int, *, chat_key: str, user_id: str | None) -> bool:
        """Forget one memory of ``chat_key``: the user's own, or anyone's when ``user_id`` is
        None (an admin). False when there is no such memory there (or it is someone else's)."""
        async with self._store._writing() as conn:  # the trigger drops the index row with it
            cursor = await conn.execute(
                "DELETE FROM memories WHERE id = ?1 AND chat_key = ?2"
                " AND (?3 IS NULL OR user_id = ?3)",
                (memory_id, chat_key, user_id),
            )
        return cursor.rowcount > 0

    async def search(
        self,
        audience: Audience,
        query: str,
        *,
        limit: int = 5,
        min_score: float = MIN_SCORE,
    ) -> list[Memory]:
        """The memories ``audience`` may recall most relevant to ``query``, best first.

        Build the audience with :meth:`audience` (it applies ``memory.share_private``).
        """
        fts_query = match_query(query)
        if fts_query is None or limit <= 0:
            return []
        pool = limit if self.embedder is None else max(limit, RRF_POOL)
        scoped = audience.sql_args()
        rows = await self._store._read.execute_fetchall(
            _SEARCH, (_within(audience.index_scopes(), fts_query), *scoped, min_score, pool)
        )
        by_bm25 = [_memory(row) for row in rows]
        if self.embedder is None:
            return by_bm25
        try:
            [vector] = await asyncio.wait_for(
                self.embedder.embed([query], policy=INTERACTIVE_POLICY), INTERACTIVE_TIMEOUT
            )
        except (LLMError, TimeoutError) as exc:
            log.warning("memory search without embeddings this time: %s", exc)
            return by_bm25[:limit]
        candidates = await self._store._read.execute_fetchall(
            _VECTORS,
            (None, *scoped, self.embedder.model, len(vector), MAX_VECTOR_CANDIDATES),
        )
        floor = self.embedder.settings.min_similarity
        by_cosine = await asyncio.to_thread(_by_cosine, vector, list(candidates), floor, pool)
        return fuse([by_bm25, [memory for _, memory in by_cosine]], limit)

    async def search_turns(
        self,
        conversation_key: str,
        query: str,
        *,
        before_turn_id: int,
        limit: int = 5,
        min_score: float = MIN_SCORE,
    ) -> list[tuple[int, str, str]]:
        """Older user messages of this conversation relevant to ``query``, best first.

        Returns ``(turn_id, user_name, user_text)`` for turns with ids below ``before_turn_id``
        (pass the oldest turn still in the context window) and after the conversation's last
        ``/reset``: a reset is the user asking to start over, so recall honours it too.
        """
        fts_query = match_query(query)
        if fts_query is None or limit <= 0:
            return []
        await self.sync_turns()
        within = _within([scope_token("c", conversation_key)], fts_query)
        rows = await self._store._read.execute_fetchall(
            _SEARCH_TURNS, (within, before_turn_id, conversation_key, min_score, limit)
        )
        return [(int(turn_id), str(name), str(text)) for turn_id, name, text in rows]

    async def sync_turns(self, batch: int = 1000) -> int:
        """Index the user messages written since the last sync; returns how many.

        Turns are written by SQLiteStore, which knows nothing of search forms, so the index
        catches up here: before each :meth:`search_turns` (usually a turn or two) and, worth
        calling at startup, for the history that predates the memory schema. Turn ids only
        grow, so the highest indexed id is the watermark; reading it inside the write
        transaction keeps two processes from indexing a turn twice.
        """
        if not await self._turns_behind():
            return 0
        indexed = 0
        while True:
            async with self._store._transaction() as conn:
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
        rows = await self._store._read.execute_fetchall(
            "SELECT (SELECT coalesce(max(id), 0) FROM turns)"
            " > (SELECT coalesce(max(rowid), 0) FROM turns_fts)"
        )
        return bool(next(iter(rows))[0])

    async def move_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """Re-key a chat's memories (a Telegram group upgraded to a supergroup gets a new id)."""
        async with self._store._transaction() as conn:
            cursor = await conn.execute(
                "UPDATE memories SET chat_key = ?1, conv_key = ?1 || substr(conv_key, ?3)"
                " WHERE chat_key = ?2",
                (new_chat_key, old_chat_key, len(old_chat_key) + 1),
            )
            for statement in RESCOPE_MEMORIES:
                await conn.execute(statement, (new_chat_key,))
        return cursor.rowcount

    async def clear_chat(self, chat_key: str) -> int:
        """Forget every memory of the chat (the index rows go with them); returns how many."""
        async with self._store._writing() as conn:
            cursor = await conn.execute("DELETE FROM memories WHERE chat_key = ?", (chat_key,))
        return cursor.rowcount

    async def list(
        self, chat_key: str, user_id: str | None = None, limit: int = 50
    ) -> list[Memory]:
        """The chat's memories (or one user's there), newest first, for /memories and review.

        Defined last: inside the class body, ``list`` names this method from here on.
        """
        rows = await self._store._read.execute_fetchall(
            f"SELECT {_COLUMNS}, 0.0 FROM memories AS m WHERE m.chat_key = ?1"
            " AND (?2 IS NULL OR m.user_id = ?2) ORDER BY m.id DESC LIMIT ?3",
            (chat_key, user_id, limit),
        )
        return [_memory(row) for row in rows]
