"""Adding one document to a base: the one path the CLI, the admin API, the dashboard and a
chat upload share.

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
from bot.knowledge.formats import check_size
from bot.knowledge.prepare import content_hash, prepare_document
from bot.storage.knowledge import KnowledgeDocuments, NewDocument, PutResult

__all__ = ["add_document"]


async def add_document(
    store: KnowledgeDocuments,
    settings: Settings,
    *,
    base: str,
    source: str,
    data: bytes,
    added_by: str,
    count: Callable[[str], int],
) -> PutResult:
    """Store ``data`` as ``source`` in ``base`` (declared in config: the caller checks)."""
    options = settings.knowledge
    check_size(source, len(data), options.max_file_bytes)
    digest = content_hash(data)
    for document in await store.list_documents(base):
        if document.source == source and document.content_hash == digest:
            return PutResult(document, "unchanged")
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
