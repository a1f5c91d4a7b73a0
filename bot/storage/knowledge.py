"""Knowledge bases: named collections of documents, their chunks, their search, and which chat
may search which base (the values here are what the protocol takes and returns).

The isolation rule: a chat searches only the bases bound to it, and the search is told those
bases (a chat's bindings from config presets plus :meth:`KnowledgeBindings.bound_bases`); a base
bound nowhere is never searched. The set of bases is part of the search's WHERE clause, never
a filter applied afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "FoundChunk",
    "KnowledgeBindings",
    "KnowledgeDocument",
    "KnowledgeDocuments",
    "KnowledgeVectors",
    "NewChunk",
    "NewDocument",
    "PutResult",
]


@dataclass(frozen=True, slots=True)
class NewChunk:
    ordinal: int
    headings: tuple[str, ...]
    text: str
    tokens: int
    page: int | None = None


@dataclass(frozen=True, slots=True)
class NewDocument:
    base: str
    source: str  # a file name or URL: unique within its base
    content_hash: str
    format: str
    added_by: str  # who added it: "cli", a platform user's id, "admin-api"
    chunks: tuple[NewChunk, ...]


@dataclass(frozen=True, slots=True)
class KnowledgeDocument:
    document_id: int
    base: str
    source: str
    content_hash: str
    format: str
    added_by: str
    added_at: float
    chunks: int
    tokens: int


@dataclass(frozen=True, slots=True)
class FoundChunk:
    chunk_id: int
    base: str
    source: str
    ordinal: int
    headings: tuple[str, ...]
    text: str
    tokens: int
    page: int | None
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class PutResult:
    document: KnowledgeDocument
    outcome: str  # "added", "replaced" (its old chunks gone) or "unchanged" (same hash: skipped)


class KnowledgeDocuments(Protocol):
    """Documents and their chunks.

    A backend must provide: :meth:`put_document` stores a document, its chunks and their index
    entries in one transaction (a search never sees a document half-indexed); the same base and
    source with the same hash changes nothing ("unchanged"); with another hash the old chunks go
    and the new ones come, in that one transaction ("replaced"); removing a document removes its
    chunks, index entries and vectors; :meth:`search_chunks` ORs the query's plain terms as
    :meth:`~bot.storage.memories.MemorySearch.search_memories` does (never parsed, CJK as
    bigrams), over the given bases only, best first, ties in document order.
    """

    async def put_document(self, document: NewDocument) -> PutResult: ...

    async def list_documents(self, base: str) -> list[KnowledgeDocument]:
        """The base's documents, by source."""
        ...

    async def document_chunks(self, base: str, source: str) -> list[FoundChunk]:
        """One document's chunks in order (``score`` 0); empty when there is no such document."""
        ...

    async def remove_document(self, base: str, source: str) -> bool: ...

    async def remove_base(self, base: str) -> int:
        """Remove every document of the base (and its bindings); returns how many documents."""
        ...

    async def search_chunks(
        self, bases: Sequence[str], query: str, *, limit: int
    ) -> list[FoundChunk]: ...

    async def reindex_base(self, base: str) -> int:
        """Rebuild the base's search index from its stored chunks (after a storage copy or a
        restore, or a change of how text is indexed); returns how many chunks were indexed.

        In one transaction: the base's old index entries go, then every chunk of the base is
        indexed again exactly as :meth:`put_document` indexes it (its heading path and text),
        so a search finds what it found before; a base with no documents is 0; other bases'
        entries are not touched.
        """
        ...


class KnowledgeVectors(Protocol):
    """Chunks' embeddings, for fusing cosine similarity with full-text rank.

    A backend must provide: one vector per chunk, tagged with the model that made it (a
    vector of another model counts as missing); a vector goes with its chunk (a replaced or
    removed document's vectors are gone); a vector for a chunk removed meanwhile is dropped,
    never an error; :meth:`chunk_vectors` reads only the given bases, newest chunks first.
    """

    async def unembedded_chunks(
        self, model: str, after_id: int, limit: int
    ) -> list[tuple[int, str]]:
        """``(chunk_id, heading path and text)`` of chunks past ``after_id`` without a vector
        of ``model``, by id."""
        ...

    async def put_chunk_vectors(
        self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None: ...

    async def chunk_vectors(
        self, bases: Sequence[str], model: str, dims: int, limit: int
    ) -> list[tuple[FoundChunk, Sequence[float]]]: ...


class KnowledgeBindings(Protocol):
    """Bases an admin bound to a chat with a command (presets bind in config, not here)."""

    async def bind_base(self, chat_key: str, base: str, bound_by: str) -> bool:
        """Bind; False when it already was."""
        ...

    async def unbind_base(self, chat_key: str, base: str) -> bool: ...

    async def bound_bases(self, chat_key: str) -> list[str]:
        """The chat's bound bases, by name."""
        ...

    async def base_bindings(self, base: str) -> list[str]:
        """The chats that bound ``base`` with a command, by chat key (for an operator)."""
        ...
