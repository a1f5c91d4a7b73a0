"""Raw rows in and out of an SQLite store (:class:`bot.storage.portable.PortableStore`).

Explicit ids are inserted as they are: SQLite moves an AUTOINCREMENT counter past any id
inserted, so nothing is left to reset. The FTS5 indexes (``memories_fts``, ``turns_fts``,
``knowledge_fts``) are derived from the rows and only Python computes their search form, so each
inserted memory, turn and knowledge chunk gets its index row in the batch's own transaction;
``turns_fts``'s highest row id is then also the watermark
:meth:`~bot.storage.sqlite.memories.SQLiteMemories.index_turns` continues from.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import cast

import aiosqlite

from bot.storage.portable import PortableRows, Row, Table
from bot.storage.search_text import search_form
from bot.storage.sql.knowledge import searchable
from bot.storage.sqlite.knowledge import base_token
from bot.storage.sqlite.scopes import index_scope, scope_token
from bot.storage.sqlite.store import SQLiteStore
from bot.values import MemoryScope

__all__ = ["SQLitePortable"]


def _index_rows(table: Table, rows: Sequence[Row]) -> tuple[str, list[tuple[object, ...]]] | None:
    """The FTS rows of freshly inserted ``rows`` (memories, turns, knowledge chunks), or None
    for other tables."""
    column = table.columns.index
    if table.name == "memories":
        i, chat, conv, user, scope, text = (
            column(name) for name in ("id", "chat_key", "conv_key", "user_id", "scope", "text")
        )
        return "memories_fts", [
            (
                row[i],
                search_form(str(row[text])),
                index_scope(
                    str(row[chat]), str(row[conv]), str(row[user]), MemoryScope(str(row[scope]))
                ),
            )
            for row in rows
        ]
    if table.name == "turns":
        i, conv, text = column("id"), column("conv_key"), column("user_text")
        return "turns_fts", [
            (row[i], search_form(str(row[text])), scope_token("c", str(row[conv]))) for row in rows
        ]
    if table.name == "knowledge_chunks":
        i, base, headings, text = (column(name) for name in ("id", "base", "headings", "text"))
        return "knowledge_fts", [
            (
                row[i],
                search_form(searchable(json.loads(str(row[headings])), str(row[text]))),
                base_token(str(row[base])),
            )
            for row in rows
        ]
    return None


class SQLitePortable(PortableRows):
    """:class:`~bot.storage.portable.PortableStore` over an open :class:`SQLiteStore`."""

    def __init__(self, store: SQLiteStore) -> None:
        super().__init__(store.seam)
        self._store, self._db = store, store.database

    async def write(self, table: Table, rows: Sequence[Row]) -> int:
        if not rows:
            return 0
        async with self._db.transaction() as conn:
            fresh = await self._absent(conn, table, rows) if table.identity else rows
            cursor = await conn.executemany(
                f"INSERT OR IGNORE INTO {table.name} ({', '.join(table.columns)})"
                f" VALUES ({', '.join('?' * len(table.columns))})",
                fresh,
            )
            index = _index_rows(table, fresh)
            if index is not None:
                name, index_rows = index
                await conn.executemany(
                    f"INSERT INTO {name} (rowid, body, scope) VALUES (?, ?, ?)", index_rows
                )
        return max(cursor.rowcount, 0)

    async def finish(self) -> None:
        # Rows arrived behind the store's back: no window it cached may be served from memory.
        self._store.windows.clear()
        await self._store.index_turns()  # none left when every turn came through write()

    @staticmethod
    async def _absent(conn: aiosqlite.Connection, table: Table, rows: Sequence[Row]) -> list[Row]:
        """The rows whose id the table lacks: their index rows are written with them (a row
        already there has its own). Batches come in id order, so one range query finds them."""
        at = table.columns.index("id")
        ids = [cast(int, row[at]) for row in rows]
        present = {
            int(found)
            for (found,) in await conn.execute_fetchall(
                f"SELECT id FROM {table.name} WHERE id BETWEEN ? AND ?", (min(ids), max(ids))
            )
        }
        return [row for row, row_id in zip(rows, ids, strict=True) if row_id not in present]
