"""Knowledge chunks' full-text index and search in SQLite: an FTS5 table holding each chunk's
:func:`~bot.storage.search_text.search_form` (its heading path and text) and a scope token
naming its base, so the bases a chat may search are part of the MATCH itself. Deletes cascade
by triggers (migration 19): a document takes its chunks, a chunk its index row and vector."""

from __future__ import annotations

from collections.abc import Sequence

from bot.storage.knowledge import FoundChunk
from bot.storage.search_text import match_query, search_form
from bot.storage.sql.knowledge import CHUNK_COLUMNS, KnowledgeRows, found_chunk
from bot.storage.sql.seam import Tx
from bot.storage.sqlite.memories import within
from bot.storage.sqlite.scopes import scope_token

__all__ = ["SQLiteKnowledge"]

_SEARCH = f"""
SELECT {CHUNK_COLUMNS}, -bm25(knowledge_fts, 1.0, 0.0)
FROM knowledge_fts CROSS JOIN knowledge_chunks AS c ON c.id = knowledge_fts.rowid
    CROSS JOIN knowledge_documents AS d ON d.id = c.document_id
WHERE knowledge_fts MATCH ?1
ORDER BY bm25(knowledge_fts, 1.0, 0.0), d.id, c.ordinal LIMIT ?2
"""


def base_token(base: str) -> str:
    return scope_token("b", base)


class SQLiteKnowledge(KnowledgeRows):
    async def _index(self, tx: Tx, base: str, chunks: Sequence[tuple[int, str]]) -> None:
        token = base_token(base)
        await tx.executemany(
            "INSERT INTO knowledge_fts (rowid, body, scope) VALUES ($1, $2, $3)",
            [(chunk_id, search_form(text), token) for chunk_id, text in chunks],
        )

    async def _unindex(self, tx: Tx, base: str) -> None:
        # The rows of the base's chunks, and any other row that carries the base's token.
        await tx.execute(
            "DELETE FROM knowledge_fts WHERE rowid IN"
            " (SELECT id FROM knowledge_chunks WHERE base = $1)",
            base,
        )
        await tx.execute(
            "DELETE FROM knowledge_fts WHERE knowledge_fts MATCH $1",
            f'scope : "{base_token(base)}"',
        )

    async def search_chunks(
        self, bases: Sequence[str], query: str, *, limit: int
    ) -> list[FoundChunk]:
        terms = match_query(query)
        if terms is None or not bases or limit <= 0:
            return []
        rows = await self.db.fetch(_SEARCH, within([base_token(b) for b in bases], terms), limit)
        return [found_chunk(row, float(row[-1])) for row in rows]
