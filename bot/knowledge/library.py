"""Adding one document to a base: the path the admin API, the dashboard and a chat upload share
(the CLI reads the same way, file by file, with its own progress and outcome counts).

The bytes are hashed first: a document whose base already holds the same source with the same
hash is "unchanged" and not parsed again. Otherwise it is read and chunked in a worker thread
(a PDF of a few hundred pages takes seconds of CPU; the event loop keeps serving chats), then
stored in one transaction, replacing the old chunks of a changed document. A refused document
raises :class:`~bot.knowledge.formats.DocumentError` with the reason, and nothing is stored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from bot.config import Settings
from bot.errors import ParlourError
from bot.knowledge.formats import DocumentError, check_size
from bot.knowledge.prepare import content_hash, prepare_document
from bot.storage.knowledge import (
    FoundChunk,
    KnowledgeDocument,
    KnowledgeDocuments,
    NewDocument,
    PutResult,
)

__all__ = ["KnowledgeLibrary", "UnknownBaseError", "add_document"]


class UnknownBaseError(ParlourError):
    """A base that config does not declare (``knowledge.bases``)."""


async def add_document(
    store: KnowledgeDocuments,
    settings: Settings,
    *,
    base: str,
    source: str,
    data: bytes,
    added_by: str,
    count: Callable[[str], int],
    may_replace: Callable[[str], bool] | None = None,
) -> PutResult:
    """Store ``data`` as ``source`` in ``base`` (declared in config: the caller checks).
    ``may_replace``: given who added the document of that source, whether this may replace
    it (None: anyone may, as the operator's own paths do)."""
    options = settings.knowledge
    check_size(source, len(data), options.max_file_bytes)
    digest = content_hash(data)
    for document in await store.list_documents(base):
        if document.source != source:
            continue
        if document.content_hash == digest:
            return PutResult(document, "unchanged")
        if may_replace is not None and not may_replace(document.added_by):
            raise DocumentError(
                f"{source}: {base} already holds a document of that name, added by someone"
                " else; only a bot admin can replace it (or send it under another name)"
            )
    prepared = await asyncio.to_thread(
        prepare_document,
        source,
        data,
        max_bytes=options.max_file_bytes,
        chunk_tokens=options.chunk_tokens,
        overlap=options.chunk_overlap,
        count=count,
    )
    return await store.put_document(
        NewDocument(base, source, prepared.content_hash, prepared.format, added_by, prepared.chunks)
    )


class KnowledgeLibrary:
    """The bases as an operator manages them (the admin API, the dashboard): declared bases,
    their documents and chunks, adding and removing. Each method refuses a base config does
    not declare with :class:`UnknownBaseError` (a 404 to an API)."""

    def __init__(
        self,
        settings: Settings,
        store: KnowledgeDocuments,
        count: Callable[[str], int],
        added: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.count = count
        self.added = added  # after a document is added or replaced (its vectors, later)

    def bases(self) -> dict[str, str]:
        """Declared bases and their descriptions, by name."""
        return {name: base.description for name, base in self.settings.knowledge.bases.items()}

    def _declared(self, base: str) -> str:
        if base not in self.settings.knowledge.bases:
            raise UnknownBaseError(f"no knowledge base {base!r} (knowledge.bases)")
        return base

    async def documents(self, base: str) -> list[KnowledgeDocument]:
        return await self.store.list_documents(self._declared(base))

    async def chunks(self, base: str, source: str) -> list[FoundChunk]:
        """One document's chunks in order (empty: no such document)."""
        return await self.store.document_chunks(self._declared(base), source)

    async def add(self, base: str, source: str, data: bytes, added_by: str) -> PutResult:
        """Raises :class:`~bot.knowledge.formats.DocumentError` for a refused document."""
        result = await add_document(
            self.store, self.settings, base=self._declared(base), source=source, data=data,
            added_by=added_by, count=self.count,
        )  # fmt: skip
        if result.outcome != "unchanged" and self.added is not None:
            self.added()
        return result

    async def remove(self, base: str, source: str) -> bool:
        return await self.store.remove_document(self._declared(base), source)
