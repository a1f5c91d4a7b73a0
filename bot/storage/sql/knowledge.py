"""Knowledge documents, chunks and bindings as both backends run them
(:mod:`bot.storage.knowledge`). What differs -- indexing a chunk for full-text search and
scoring a search -- is each backend's subclass (``bot.storage.<backend>.knowledge``)."""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence

from bot.errors import StoreError
from bot.storage.knowledge import FoundChunk, KnowledgeDocument, NewDocument, PutResult
from bot.storage.search_text import pack_vector, unpack_vector
from bot.storage.sql.seam import Database, Row, Tx

__all__ = ["CHUNK_COLUMNS", "KnowledgeRows", "found_chunk", "searchable"]

DOCUMENT_COLUMNS = (
    "d.id, d.base, d.source, d.content_hash, d.format, d.added_by, d.added_at, d.chunks, d.tokens"
)
CHUNK_COLUMNS = "c.id, d.base, d.source, c.ordinal, c.headings, c.text, c.tokens, c.page"


def searchable(headings: Sequence[str], text: str) -> str:
    """What a chunk's index entry is made of: its heading path, then its text, a line each."""
    return "\n".join([*headings, text])


def document_of(row: Row) -> KnowledgeDocument:
    doc_id, base, source, digest, fmt, added_by, added_at, chunks, tokens = row[:9]
    return KnowledgeDocument(
        int(doc_id), str(base), str(source), str(digest), str(fmt), str(added_by),
        float(added_at), int(chunks), int(tokens),
    )  # fmt: skip


def found_chunk(row: Row, score: float = 0.0) -> FoundChunk:
    chunk_id, base, source, ordinal, headings, text, tokens, page = row[:8]
    return FoundChunk(
        int(chunk_id), str(base), str(source), int(ordinal), tuple(json.loads(headings)),
        str(text), int(tokens), None if page is None else int(page), score,
    )  # fmt: skip


class KnowledgeRows(ABC):
    """Everything of the two protocols but the index: :meth:`_index` and :meth:`search_chunks`
    are the backend's."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @abstractmethod
    async def _index(self, tx: Tx, base: str, chunks: Sequence[tuple[int, str]]) -> None:
        """Index ``(chunk_id, searchable text)`` pairs of ``base`` in the put's transaction."""

    @abstractmethod
    async def _unindex(self, tx: Tx, base: str) -> None:
        """Remove every index entry of ``base`` (and its part of any corpus statistics)."""

    @abstractmethod
    async def search_chunks(
        self, bases: Sequence[str], query: str, *, limit: int
    ) -> list[FoundChunk]: ...

    async def put_document(self, document: NewDocument) -> PutResult:
        now = time.time()
        tokens = sum(chunk.tokens for chunk in document.chunks)
        async with self.db.transaction() as tx:
            await tx.lock(f"knowledge:{document.base}")
            old = await tx.fetch(
                f"SELECT {DOCUMENT_COLUMNS} FROM knowledge_documents AS d"
                " WHERE d.base = $1 AND d.source = $2",
                document.base,
                document.source,
            )
            if old and str(old[0][3]) == document.content_hash:
                return PutResult(document_of(old[0]), "unchanged")
            if old:
                await tx.execute("DELETE FROM knowledge_documents WHERE id = $1", int(old[0][0]))
            rows = await tx.fetch(
                "INSERT INTO knowledge_documents (base, source, content_hash, format, added_by,"
                " added_at, chunks, tokens) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                document.base, document.source, document.content_hash, document.format,
                document.added_by, now, len(document.chunks), tokens,
            )  # fmt: skip
            if not rows:
                raise StoreError("the database returned no id for a new document")
            doc_id = int(rows[0][0])
            indexed: list[tuple[int, str]] = []
            for chunk in document.chunks:
                made = await tx.fetch(
                    "INSERT INTO knowledge_chunks (document_id, base, ordinal, headings, text,"
                    " tokens, page) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                    doc_id, document.base, chunk.ordinal, json.dumps(list(chunk.headings)),
                    chunk.text, chunk.tokens, chunk.page,
                )  # fmt: skip
                indexed.append((int(made[0][0]), searchable(chunk.headings, chunk.text)))
            await self._index(tx, document.base, indexed)
        stored = KnowledgeDocument(
            doc_id, document.base, document.source, document.content_hash, document.format,
            document.added_by, now, len(document.chunks), tokens,
        )  # fmt: skip
        return PutResult(stored, "replaced" if old else "added")

    async def reindex_base(self, base: str) -> int:
        async with self.db.transaction() as tx:
            await tx.lock(f"knowledge:{base}")  # no put of this base in between
            rows = await tx.fetch(
                "SELECT id, headings, text FROM knowledge_chunks WHERE base = $1 ORDER BY id", base
            )
            await self._unindex(tx, base)
            await self._index(
                tx,
                base,
                [
                    (int(i), searchable(json.loads(headings), str(text)))
                    for i, headings, text in rows
                ],
            )
        return len(rows)

    async def unembedded_chunks(
        self, model: str, after_id: int, limit: int
    ) -> list[tuple[int, str]]:
        rows = await self.db.fetch(
            "SELECT c.id, c.headings, c.text FROM knowledge_chunks AS c"
            " LEFT JOIN knowledge_vectors AS v ON v.chunk_id = c.id"
            " WHERE c.id > $1 AND (v.chunk_id IS NULL OR v.model <> $2) ORDER BY c.id LIMIT $3",
            after_id, model, max(limit, 0),
        )  # fmt: skip
        return [(int(i), searchable(json.loads(h), str(text))) for i, h, text in rows]

    async def put_chunk_vectors(
        self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None:
        if not vectors:
            return
        async with self.db.transaction() as tx:
            await tx.executemany(  # a chunk removed meanwhile: nothing to attach it to
                "INSERT INTO knowledge_vectors (chunk_id, model, dims, vector)"
                " SELECT id, $2, $3, $4 FROM knowledge_chunks WHERE id = $1"
                " ON CONFLICT (chunk_id) DO UPDATE SET model = excluded.model,"
                " dims = excluded.dims, vector = excluded.vector",
                [(int(i), model, len(v), pack_vector(v)) for i, v in vectors],
            )

    async def chunk_vectors(
        self, bases: Sequence[str], model: str, dims: int, limit: int
    ) -> list[tuple[FoundChunk, Sequence[float]]]:
        if not bases or limit <= 0:
            return []
        within = self.db.dialect.in_array("c.base", "$1", "text")
        rows = await self.db.fetch(
            f"SELECT {CHUNK_COLUMNS}, v.vector FROM knowledge_chunks AS c"
            " JOIN knowledge_documents AS d ON d.id = c.document_id"
            " JOIN knowledge_vectors AS v ON v.chunk_id = c.id"
            f" WHERE {within} AND v.model = $2 AND v.dims = $3 ORDER BY c.id DESC LIMIT $4",
            self.db.dialect.array(list(bases)), model, dims, limit,
        )  # fmt: skip
        return [(found_chunk(row), unpack_vector(bytes(row[-1]))) for row in rows]

    async def list_documents(self, base: str) -> list[KnowledgeDocument]:
        rows = await self.db.fetch(
            f"SELECT {DOCUMENT_COLUMNS} FROM knowledge_documents AS d WHERE d.base = $1"
            f" ORDER BY d.source {self.db.dialect.bytewise}",
            base,
        )
        return [document_of(row) for row in rows]

    async def document_chunks(self, base: str, source: str) -> list[FoundChunk]:
        rows = await self.db.fetch(
            f"SELECT {CHUNK_COLUMNS} FROM knowledge_documents AS d"
            " JOIN knowledge_chunks AS c ON c.document_id = d.id"
            " WHERE d.base = $1 AND d.source = $2 ORDER BY c.ordinal",
            base,
            source,
        )
        return [found_chunk(row) for row in rows]

    async def remove_document(self, base: str, source: str) -> bool:
        return (
            await self.db.execute(
                "DELETE FROM knowledge_documents WHERE base = $1 AND source = $2", base, source
            )
            > 0
        )

    async def remove_base(self, base: str) -> int:
        async with self.db.transaction() as tx:
            await tx.execute("DELETE FROM knowledge_bindings WHERE base = $1", base)
            return await tx.execute("DELETE FROM knowledge_documents WHERE base = $1", base)

    async def bind_base(self, chat_key: str, base: str, bound_by: str) -> bool:
        return (
            await self.db.execute(
                "INSERT INTO knowledge_bindings (chat_key, base, bound_by, bound_at)"
                " VALUES ($1, $2, $3, $4) ON CONFLICT (chat_key, base) DO NOTHING",
                chat_key,
                base,
                bound_by,
                time.time(),
            )
            > 0
        )

    async def unbind_base(self, chat_key: str, base: str) -> bool:
        return (
            await self.db.execute(
                "DELETE FROM knowledge_bindings WHERE chat_key = $1 AND base = $2", chat_key, base
            )
            > 0
        )

    async def base_bindings(self, base: str) -> list[str]:
        rows = await self.db.fetch(
            "SELECT chat_key FROM knowledge_bindings WHERE base = $1"
            f" ORDER BY chat_key {self.db.dialect.bytewise}",
            base,
        )
        return [str(row[0]) for row in rows]

    async def bound_bases(self, chat_key: str) -> list[str]:
        rows = await self.db.fetch(
            "SELECT base FROM knowledge_bindings WHERE chat_key = $1"
            f" ORDER BY base {self.db.dialect.bytewise}",
            chat_key,
        )
        return [str(row[0]) for row in rows]
