"""Long-term memories and recall of old user messages, over the storage's memory protocols.

Isolation is part of every search the storage runs, never a filter applied afterwards: a search
returns only what its :class:`~bot.memory.scope.Audience` admits (the conversation's memories,
the asker's own facts in that chat, and on explicit opt-in the asker's own private memories on
that platform; ``bot.memory.scope`` states the rule, :mod:`bot.storage.memories` the contract).
The search maths (CJK search forms, vectors, rank fusion) are pure functions in
:mod:`bot.memory.search`.

With a :class:`~bot.llm.embeddings.TextEmbedder` (``memory.embeddings`` on), each memory also
gets a unit vector, and :meth:`MemoryStore.search` fuses two rankings by reciprocal rank fusion
(score = sum of 1 / (60 + rank)): full-text relevance, and cosine similarity between the query's
vector and the vectors of the memories the *same* audience admits. The relevance floor still
holds: a memory enters the fusion only if it passes the full-text floor (``min_score``) or its
cosine reaches ``memory.embeddings.min_similarity`` -- fusion orders relevant memories, it never
promotes an unrelated one for being the best of a bad lot. Cosine is plain Python over at most
:data:`MAX_VECTOR_CANDIDATES` vectors (the audience's newest memories), in a worker thread: a
few thousand 1536-float dot products take tens to a few hundred ms, fine per message; a larger
corpus would want a vector index. When embedding fails, recall is full-text only and a new
memory is stored without a vector until :meth:`MemoryStore.backfill_vectors`.

Old messages (turns' user messages) are searched the same way: their vectors are filled in the
background when recall runs in their conversation (:mod:`bot.memory.turn_vectors`). A search's
question is embedded in the ``query`` role without the names of the conversation's speakers
(:func:`~bot.memory.search.without_names`); what is stored, in the ``passage`` role.
"""

from __future__ import annotations

import asyncio
import logging
from array import array
from collections.abc import Callable, Sequence
from typing import Protocol

from cachetools import LRUCache

from bot.context import ChatContext, Scope
from bot.errors import LLMError
from bot.llm.embeddings import INTERACTIVE_POLICY, TextEmbedder
from bot.memory.scope import Audience
from bot.memory.search import (
    by_cosine,
    fuse,
    fuse_turns,
    match_query,
    memory_id,
    search_form,
    turn_id,
    without_names,
)
from bot.memory.turn_vectors import TurnVectorFiller
from bot.storage.memories import MemoryRecords, MemorySearch, MemoryVectors
from bot.values import FoundTurn, Memory, MemoryScope, NewMemory

__all__ = [
    "Audience",
    "FoundTurn",
    "Memory",
    "MemoryBackend",
    "MemoryScope",
    "MemoryStore",
    "fuse",
    "match_query",
    "search_form",
]

log = logging.getLogger(__name__)

# A reply (or a remember call) waits for these embeddings: a slow endpoint falls back to FTS,
# and a new memory is stored without its vector (the backfill adds it), instead of stalling.
INTERACTIVE_TIMEOUT = 3.0

# A relevance of 1.0 (SQLite: bm25) is one matching term found in at most ~27% of the indexed
# rows (idf = ln((N - n + 0.5) / (n + 0.5)) >= 1) in a row of average length. Rows matched only
# by terms more common than that -- in big indexes, the words everyone uses -- are not worth the
# prompt. A small index cannot tell from frequencies that "I" or "to" say nothing, so stop words
# never reach the query at all.
MIN_SCORE = 1.0
MAX_MEMORY_CHARS = 1000
RRF_POOL = 50  # candidates taken from each ranking before fusing
MAX_VECTOR_CANDIDATES = 5000  # newest vectors scored per search; older ones: full-text only
QUERY_VECTORS_KEPT = 1024  # recent queries' vectors: a stored turn's message reuses its own
SPEAKERS_KEPT = 10_000  # conversations whose speakers' names are remembered (without_names)


class MemoryBackend(MemoryRecords, MemorySearch, MemoryVectors, Protocol):
    """What :class:`MemoryStore` needs from the storage."""


class MemoryStore:
    """Memories and the user-message index, in ``store`` (any :class:`MemoryBackend`).

    Open ``store`` first; this class holds no connection of its own. With an ``embedder``,
    memories are embedded too and search fuses BM25 with cosine similarity (module docstring).
    """

    def __init__(
        self,
        store: MemoryBackend,
        embedder: TextEmbedder | None = None,
        *,
        share_private: bool = False,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.share_private = share_private  # memory.share_private: see audience()
        # float32 arrays: 6 KB a 1536-float vector, where a list of floats takes 50 KB
        self._vectors: LRUCache[str, Sequence[float]] = LRUCache(QUERY_VECTORS_KEPT)
        self._turn_vectors = TurnVectorFiller(store, embedder, self._vectors)
        # conversation -> names of people whose messages its last search scored
        self._speakers: LRUCache[str, frozenset[str]] = LRUCache(SPEAKERS_KEPT)

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
        memory = NewMemory(
            ctx.chat_key, key, ctx.user_id, ctx.user_name, scope, text, source_turn_id, created_by
        )
        model = self.embedder.model if self.embedder is not None else None
        return await self.store.add_memory(memory, vector, model)

    async def _embed_new(self, text: str) -> list[float] | None:
        """The new memory's vector, or None: a memory is worth keeping without one."""
        if self.embedder is None:
            return None
        try:
            [vector] = await asyncio.wait_for(
                self.embedder.embed([text], role="passage", policy=INTERACTIVE_POLICY),
                INTERACTIVE_TIMEOUT,
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
            rows = await self.store.unembedded(model, after, batch)
            if not rows:
                return filled
            vectors = await self.embedder.embed([text for _, text in rows], role="passage")
            pairs = [(i, v) for (i, _), v in zip(rows, vectors, strict=True)]
            await self.store.put_vectors(model, pairs)
            filled += len(rows)
            after = rows[-1][0]

    async def delete(self, memory_id: int, *, chat_key: str, user_id: str | None) -> bool:
        """Forget one memory of ``chat_key``: the user's own, or anyone's when ``user_id`` is
        None (an admin). False when there is no such memory there (or it is someone else's)."""
        return await self.store.delete_memory(memory_id, chat_key=chat_key, user_id=user_id)

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
        if limit <= 0 or match_query(query) is None:
            return []
        pool = limit if self.embedder is None else max(limit, RRF_POOL)
        by_bm25 = await self.store.search_memories(audience, query, limit=pool, min_score=min_score)
        if self.embedder is None:
            return by_bm25
        vector = await self.query_vector(query)
        if vector is None:
            return by_bm25[:limit]
        candidates = await self.store.memory_vectors(
            audience, self.embedder.model, len(vector), MAX_VECTOR_CANDIDATES
        )
        floor = self.embedder.settings.similarity_floor
        cosine = await asyncio.to_thread(by_cosine, vector, candidates, floor, pool, memory_id)
        return fuse([by_bm25, [memory for _, memory in cosine]], limit)

    async def search_turns(
        self,
        conversation_key: str,
        query: str,
        *,
        before_turn_id: int,
        limit: int = 5,
        min_score: float = MIN_SCORE,
    ) -> list[FoundTurn]:
        """Older user messages of this conversation relevant to ``query``, best first.

        Turns with ids below ``before_turn_id`` (the oldest turn the prompt holds) and after
        the conversation's last ``/reset``: a reset is the user asking to start over, so recall
        honours it too. With embeddings, full-text and cosine rankings are fused as for
        memories, over the turns that have a vector already (:meth:`embed_turns_later`).
        """
        if limit <= 0 or match_query(query) is None:  # stop words only: nothing, as for memories
            return []
        pool = limit if self.embedder is None else max(limit, RRF_POOL)
        by_bm25 = await self.store.search_turns(
            conversation_key, query, before_turn_id=before_turn_id, limit=pool, min_score=min_score
        )
        if self.embedder is None:
            return by_bm25
        speakers = self._speakers.get(conversation_key, frozenset())
        speakers |= {turn.user_name for turn in by_bm25}
        vector = await self.query_vector(without_names(query, speakers))
        if vector is None:
            return by_bm25[:limit]
        candidates = await self.store.turn_vectors(
            conversation_key,
            self.embedder.model,
            len(vector),
            before_turn_id=before_turn_id,
            limit=MAX_VECTOR_CANDIDATES,
        )
        self._speakers[conversation_key] = frozenset(turn.user_name for turn, _ in candidates)
        floor = self.embedder.settings.similarity_floor
        cosine = await asyncio.to_thread(by_cosine, vector, candidates, floor, pool, turn_id)
        return fuse_turns([by_bm25, [turn for _, turn in cosine]], limit)

    async def turns_beside(
        self, conversation_key: str, turn_ids: Sequence[int], *, before_turn_id: int
    ) -> dict[int, list[FoundTurn]]:
        """Each found turn's neighbours in its conversation: the turn after it, then the one
        before it (below ``before_turn_id``, after the last reset)."""
        return await self.store.turns_beside(
            conversation_key, turn_ids, before_turn_id=before_turn_id
        )

    async def query_vector(self, query: str) -> Sequence[float] | None:
        """``query``'s vector, or None (no embeddings, or the endpoint failed or was slow).

        Remembered for a while: one message's recall searches memories and old messages with
        one request, and when the message is stored as a turn, its vector is already known.
        """
        if self.embedder is None:
            return None
        known = self._vectors.get(query)
        if known is not None:
            return known
        try:
            [vector] = await asyncio.wait_for(
                self.embedder.embed([query], role="query", policy=INTERACTIVE_POLICY),
                INTERACTIVE_TIMEOUT,
            )
        except (LLMError, TimeoutError) as exc:
            log.warning("memory search without embeddings this time: %s", exc)
            return None
        self._vectors[query] = array("f", vector)
        return vector

    def embed_turns_later(self, conversation_key: str) -> None:
        """Give the conversation's turns their vectors, in the background (never delaying a
        reply): called by recall, so a message has its vector long before it leaves the
        prompt. A no-op without embeddings; one task per conversation at a time."""
        if self.embedder is not None:
            self._turn_vectors.schedule(conversation_key)

    async def fill_turn_vectors(
        self, conversation_key: str, on_rows: Callable[[int], None] | None = None
    ) -> int:
        """Give the conversation's old messages their vectors now (``bot.memory.backfill``);
        how many were looked at. Raises the endpoint's ``LLMError``."""
        return await self._turn_vectors.fill_now(conversation_key, on_rows)

    async def wait_for_turn_vectors(self) -> None:
        """Until the background embedding of old messages is done (tests and benchmarks)."""
        await self._turn_vectors.wait()

    async def aclose(self) -> None:
        """Stop the background embedding (before the embedder and the storage close)."""
        await self._turn_vectors.aclose()

    async def sync_turns(self, batch: int = 1000) -> int:
        """Index the user messages written since the last sync; returns how many. Worth
        calling at startup, for the history that predates the memory schema (searches catch up
        on their own)."""
        return await self.store.index_turns(batch)

    async def move_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """Re-key a chat's memories (a Telegram group upgraded to a supergroup gets a new id)."""
        return await self.store.move_memories(old_chat_key, new_chat_key)

    async def clear_chat(self, chat_key: str) -> int:
        """Forget every memory of the chat (the index rows go with them); returns how many."""
        return await self.store.clear_memories(chat_key)

    async def list(
        self, chat_key: str, user_id: str | None = None, limit: int = 50
    ) -> list[Memory]:
        """The chat's memories (or one user's there), newest first, for /memories and review.

        Defined last: inside the class body, ``list`` names this method from here on.
        """
        return await self.store.list_memories(chat_key, user_id, limit)
