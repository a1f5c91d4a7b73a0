"""Which bases a chat searches, and the passages a question brings from them.

The isolation rule lives here and in the store: a chat searches the bases its ``chats:`` preset
names plus those an admin bound in the chat (:class:`~bot.storage.knowledge.KnowledgeBindings`),
and only those still declared under ``knowledge.bases``; the store is told that set, so a base
bound nowhere is never searched and one chat's base never reaches another chat.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.config import Settings
from bot.memory.search import by_cosine, fuse_ranked
from bot.prompt.passages import label_of
from bot.storage.knowledge import FoundChunk

__all__ = [
    "KnowledgeSearch",
    "QueryVectors",
    "VectorSearch",
    "bases_for",
    "passage_cap",
    "retrieve",
    "within",
]

PASSAGE_SHARE = 8  # passages take at most this fraction of a prompt's room (passage_cap)
FUSION_POOL = 50  # candidates taken from each ranking before fusing (as for memories)
MAX_VECTOR_CANDIDATES = 5_000  # newest chunk vectors scored per search (as for memories: about
# 60 ms of CPU); older chunks are found by their words
TOOL_TOKENS = 1000  # what one search_knowledge call returns when knowledge.max_tokens is 0
PASSAGE_COST = 4  # tokens a passage's line costs beyond its label and text (number, quoting)


class KnowledgeSearch(Protocol):
    """What retrieval reads: the chat's bindings and the bases' search."""

    async def bound_bases(self, chat_key: str) -> list[str]: ...

    async def search_chunks(
        self, bases: Sequence[str], query: str, *, limit: int
    ) -> list[FoundChunk]: ...


class VectorSearch(KnowledgeSearch, Protocol):
    """With embeddings: the bases' chunk vectors too."""

    async def chunk_vectors(
        self, bases: Sequence[str], model: str, dims: int, limit: int
    ) -> list[tuple[FoundChunk, Sequence[float]]]: ...


@dataclass(frozen=True, slots=True)
class QueryVectors:
    """How a question becomes a vector (None: the embedder failed or was slow: full-text only
    this time), which stored vectors compare with it, and the cosine floor."""

    model: str
    floor: float
    embed: Callable[[str], Awaitable[Sequence[float] | None]]


async def bases_for(
    store: KnowledgeSearch, settings: Settings, chat_key: str, preset: Sequence[str]
) -> tuple[str, ...]:
    """The bases ``chat_key`` searches: its preset's, then those bound in the chat, each once,
    none that config no longer declares."""
    declared = settings.knowledge.bases
    names = [*preset, *await store.bound_bases(chat_key)]
    return tuple(dict.fromkeys(name for name in names if name in declared))


def passage_cap(settings: Settings, *, tool: bool = False) -> int:
    """``knowledge.max_tokens``, but at most 1/:data:`PASSAGE_SHARE` of what a prompt may hold:
    a small model's window is not given over to documents (the tool can fetch more). For the
    tool (``tool``), the same, or :data:`TOOL_TOKENS` when passages before the call are off."""
    room = settings.llm.context_window - settings.llm.max_output_tokens
    wanted = settings.knowledge.max_tokens or (TOOL_TOKENS if tool else 0)
    return max(0, min(wanted, room // PASSAGE_SHARE))


async def retrieve(
    store: VectorSearch,
    bases: Sequence[str],
    query: str,
    *,
    limit: int,
    max_tokens: int,
    count: Callable[[str], int],
    vectors: QueryVectors | None = None,
) -> list[FoundChunk]:
    """The best passages for ``query`` in ``bases`` that fit ``max_tokens``, best first.

    With ``vectors``, the full-text ranking
    and the cosine ranking of the bases' chunks are fused by reciprocal rank, as memories are
    (:func:`bot.memory.search.fuse_ranked`)."""
    if not bases or not query.strip() or max_tokens <= 0:
        return []
    if vectors is None:
        return within(await store.search_chunks(bases, query, limit=limit), max_tokens, count)
    pool = max(limit, FUSION_POOL)
    by_words = await store.search_chunks(bases, query, limit=pool)
    vector = await vectors.embed(query)
    if vector is None:
        return within(by_words[:limit], max_tokens, count)
    candidates = await store.chunk_vectors(bases, vectors.model, len(vector), MAX_VECTOR_CANDIDATES)
    cosine = await asyncio.to_thread(
        by_cosine, vector, candidates, vectors.floor, pool, _chunk_id
    )  # a worker thread: thousands of dot products
    fused = fuse_ranked([by_words, [chunk for _, chunk in cosine]], _chunk_id, limit)
    return within([chunk for chunk, _ in fused], max_tokens, count)


def _chunk_id(chunk: FoundChunk) -> int:
    return chunk.chunk_id


def within(
    chunks: Sequence[FoundChunk], max_tokens: int, count: Callable[[str], int]
) -> list[FoundChunk]:
    """``chunks`` in order while they fit; a long one never hides shorter ones after it, and a
    passage whose text one kept already holds (the same file added under two names) is left
    out, so it does not take the room twice."""
    kept: list[FoundChunk] = []
    texts: set[str] = set()
    used = 0
    for chunk in chunks:
        text = " ".join(chunk.text.split())
        if text in texts:
            continue
        cost = count(label_of(chunk.source, chunk.headings, chunk.page)) + count(chunk.text)
        cost += PASSAGE_COST
        if used + cost > max_tokens:
            continue
        kept.append(chunk)
        texts.add(text)
        used += cost
    return kept
