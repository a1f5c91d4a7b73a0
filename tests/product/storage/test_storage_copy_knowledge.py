"""``storage copy`` and knowledge bases: a copied base searches on the destination exactly as if
its documents had been put there (same chunks, order and scores: the destination's search
index and BM25 statistics rebuilt), and new documents get ids past the copied ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.cli.storage_copy import copy_storage
from bot.config.storage_url import StorageURL, parse_storage_url
from bot.storage import Storage, open_storage_url
from bot.storage.knowledge import NewChunk, NewDocument
from tests.postgres_support import fresh_pg_url
from tests.product.storage.test_storage_copy import (
    GROUP,
    KNOWLEDGE_SEARCHES,
    needs_pg,
    seed_knowledge,
    sqlite_at,
)

KITES = NewDocument(
    "rules", "kites.md", "sha256:kites", "markdown", "cli", (NewChunk(0, (), "Kites fly.", 3),)
)


async def knowledge_only(url: StorageURL) -> StorageURL:
    """A deployment holding only the knowledge seed, put through the storage API."""
    async with open_storage_url(url) as store:
        await seed_knowledge(store)
    return url


async def searches(store: Storage) -> dict[str, Any]:
    """What a chat reads of the knowledge: searches with their scores, chunks, bindings."""
    return {
        "found": [await store.search_chunks(b, q, limit=9) for b, q in KNOWLEDGE_SEARCHES],
        "chunks": [await store.document_chunks("rules", "rules.md")],
        "bound": await store.bound_bases(GROUP),
    }


async def searches_of(url: StorageURL) -> dict[str, Any]:
    async with open_storage_url(url) as store:
        return await searches(store)


async def goes_on_after_the_copy(url: StorageURL) -> None:
    """A put after the copy takes ids past every copied one and is found; a reindex of the
    copied base changes no search."""
    async with open_storage_url(url) as store:
        documents = [d for base in ("rules", "faq") for d in await store.list_documents(base)]
        chunks = [c for d in documents for c in await store.document_chunks(d.base, d.source)]
        before = await searches(store)
        put = await store.put_document(KITES)
        assert put.outcome == "added"
        assert put.document.document_id > max(d.document_id for d in documents)
        [kite] = await store.document_chunks("rules", "kites.md")
        assert kite.chunk_id > max(c.chunk_id for c in chunks)
        assert [c.chunk_id for c in await store.search_chunks(["rules"], "kites", limit=5)] == [
            kite.chunk_id
        ]
        assert await store.remove_document("rules", "kites.md")
        assert await store.reindex_base("rules") == len(chunks) - 1  # faq's chunk is not rules'
        assert await searches(store) == before


async def test_sqlite_to_sqlite_searches_as_the_source_and_goes_on(tmp_path: Path) -> None:
    source = await knowledge_only(sqlite_at(tmp_path / "source.db"))
    target = sqlite_at(tmp_path / "target.db")
    report = await copy_storage(source, target, batch=2)
    copied = {count.table: count.copied for count in report.tables}
    assert copied["knowledge_documents"] == 3 and copied["knowledge_chunks"] == 4
    assert copied["knowledge_vectors"] == 1 and copied["knowledge_bindings"] == 1
    expected = await searches_of(source)
    assert all(expected["found"])
    assert await searches_of(target) == expected
    await goes_on_after_the_copy(target)


@needs_pg
async def test_a_copy_searches_as_if_the_documents_were_put_on_the_destination(
    tmp_path: Path,
) -> None:
    on_sqlite = await knowledge_only(sqlite_at(tmp_path / "native.db"))
    on_postgres = await knowledge_only(parse_storage_url(fresh_pg_url()))

    to_postgres = parse_storage_url(fresh_pg_url())  # SQLite -> PostgreSQL
    await copy_storage(on_sqlite, to_postgres, batch=2)
    assert await searches_of(to_postgres) == await searches_of(on_postgres)

    to_sqlite = sqlite_at(tmp_path / "from-postgres.db")  # PostgreSQL -> SQLite
    await copy_storage(on_postgres, to_sqlite, batch=2)
    assert await searches_of(to_sqlite) == await searches_of(on_sqlite)

    await goes_on_after_the_copy(to_postgres)  # the identities moved past the copied ids
    await goes_on_after_the_copy(to_sqlite)
