"""Which bases a chat searches, and the passages a question brings from them.

The isolation rule lives here and in the store: a chat searches the bases its ``chats:`` preset
names plus those an admin bound in the chat (:class:`~bot.storage.knowledge.KnowledgeBindings`),
and only those still declared under ``knowledge.bases``; the store is told that set, so a base
bound nowhere is never searched and one chat's base never reaches another chat.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from bot.config import Settings
from bot.prompt.passages import label_of
from bot.storage.knowledge import FoundChunk

__all__ = ["KnowledgeSearch", "bases_for", "passage_cap", "retrieve", "within"]

PASSAGE_SHARE = 8  # passages take at most this fraction of a prompt's room (passage_cap)
PASSAGE_COST = 4  # tokens a passage's line costs beyond its label and text (number, quoting)


class KnowledgeSearch(Protocol):
    """What retrieval reads: the chat's bindings and the bases' search."""

    async def bound_bases(self, chat_key: str) -> list[str]: ...

    async def search_chunks(
        self, bases: Sequence[str], query: str, *, limit: int
    ) -> list[FoundChunk]: ...


async def bases_for(
    store: KnowledgeSearch, settings: Settings, chat_key: str, preset: Sequence[str]
) -> tuple[str, ...]:
    """The bases ``chat_key`` searches: its preset's, then those bound in the chat, each once,
    none that config no longer declares."""
    declared = settings.knowledge.bases
    names = [*preset, *await store.bound_bases(chat_key)]
    return tuple(dict.fromkeys(name for name in names if name in declared))


def passage_cap(settings: Settings) -> int:
    """``knowledge.max_tokens``, but at most 1/:data:`PASSAGE_SHARE` of what a prompt may hold:
    a small model's window is not given over to documents (the tool can fetch more)."""
    room = settings.llm.context_window - settings.llm.max_output_tokens
    return max(0, min(settings.knowledge.max_tokens, room // PASSAGE_SHARE))


async def retrieve(
    store: KnowledgeSearch,
    bases: Sequence[str],
    query: str,
    *,
    limit: int,
    max_tokens: int,
    count: Callable[[str], int],
) -> list[FoundChunk]:
    """The best passages for ``query`` in ``bases`` that fit ``max_tokens``, best first."""
    if not bases or not query.strip() or max_tokens <= 0:
        return []
    found = await store.search_chunks(bases, query, limit=limit)
    return within(found, max_tokens, count)


def within(
    chunks: Sequence[FoundChunk], max_tokens: int, count: Callable[[str], int]
) -> list[FoundChunk]:
    """``chunks`` in order while they fit; a long one never hides shorter ones after it."""
    kept: list[FoundChunk] = []
    used = 0
    for chunk in chunks:
        cost = count(label_of(chunk.source, chunk.headings, chunk.page)) + count(chunk.text)
        cost += PASSAGE_COST
        if used + cost > max_tokens:
            continue
        kept.append(chunk)
        used += cost
    return kept
