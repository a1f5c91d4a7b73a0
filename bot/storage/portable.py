"""Rows out of one backend and into another: the seam ``python -m bot storage copy`` uses.

Both backends keep the same tables, column for column (``bot/storage/sqlite/migrations.py``,
``bot/storage/postgres/migrations.py``), so a copy is a loop over :data:`TABLES` that reads a
batch of rows in key order from the source and writes it to the target. What differs per
backend is only how rows are read and written, and what must be redone afterwards: a
PostgreSQL identity set past the highest copied id, the search indexes that are *derived* from
the rows (SQLite's FTS5 tables, PostgreSQL's search columns) rebuilt rather than copied. That is
:class:`PortableStore`, one small class per backend (``bot.storage.<backend>.portable``);
:func:`portable` finds the one for an open store.

Rows are plain tuples in :attr:`Table.columns` order holding ``int``, ``float``, ``str``,
``bytes`` or None, the types both drivers return and accept, so no value is converted on the
way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.storage.sql.seam import Database

__all__ = ["TABLES", "PortableRows", "PortableStore", "Row", "Table", "key_of"]

Row = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class Table:
    """One table as both backends keep it. ``key``: its primary key, the order rows are read in
    and what decides that a row is "already there"; ``identity``: the key is an id the
    database hands out (its counter must move past the copied ids)."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...] = ("id",)
    identity: bool = True


def _table(name: str, columns: str, key: str = "id", *, identity: bool = True) -> Table:
    return Table(name, tuple(columns.split()), tuple(key.split()), identity)


# In dependency order: memory_vectors refers to memories, turn_vectors to turns, a knowledge
# chunk to its document and a knowledge vector to its chunk (foreign keys on both backends).
TABLES: tuple[Table, ...] = (
    _table(
        "turns",
        "id conv_key chat_key user_id user_name platform_message_id user_text answer status"
        " error model prompt_tokens completion_tokens created_at completed_at owner"
        " cached_tokens",
    ),
    _table("resets", "conv_key chat_key after_turn_id by_user at", "conv_key", identity=False),
    _table(
        "chat_preferences",
        "chat_key scope system_prompt updated_at ambient",
        "chat_key",
        identity=False,
    ),
    _table("clear_audit", "id chat_key actor_id actor_name at deleted_turns deleted_messages"),
    _table("chat_audit", "id chat_key conv_key actor_id actor_name action detail at"),
    _table(
        "chats",
        "platform chat_id chat_key chat_type title updated_at",
        "platform chat_id",
        identity=False,
    ),
    _table(
        "overheard",
        "id conv_key chat_key user_id user_name platform_message_id text created_at passed",
    ),
    _table("plugin_kv", "plugin key value updated_at", "plugin key", identity=False),
    _table(
        "memories",
        "id chat_key conv_key user_id user_name scope text source_turn_id created_by created_at",
    ),
    _table("memory_vectors", "memory_id model dims vector", "memory_id", identity=False),
    _table("turn_vectors", "turn_id model dims vector", "turn_id", identity=False),
    _table(
        "summaries",
        "conv_key chat_key summary through_turn_id turns_since updated_at window_start"
        " summary_shown",
        "conv_key",
        identity=False,
    ),
    _table(
        "usage_daily",
        "day chat_key user_id user_name turns prompt_tokens completion_tokens cached_tokens",
        "day chat_key user_id",
        identity=False,
    ),
    _table(
        "deliveries",
        "id owner platform chat_key chat_id thread_id reply_to message_id shown turn_id"
        " created_at updated_at",
    ),
    # Knowledge bases (bot.storage.knowledge): the chunks' search index is derived, not copied.
    _table(
        "knowledge_documents",
        "id base source content_hash format added_by added_at chunks tokens",
    ),
    _table("knowledge_chunks", "id document_id base ordinal headings text tokens page"),
    _table("knowledge_vectors", "chunk_id model dims vector", "chunk_id", identity=False),
    _table(
        "knowledge_bindings", "chat_key base bound_by bound_at", "chat_key base", identity=False
    ),
    # Platform updates replicas take turns at (bot.storage.coordination): the pending ones are
    # work not done yet, the done ones recognise a redelivery until pruned. The other
    # coordination tables (leases, rate buckets, flights, breakers) hold seconds of state that
    # only means something to the processes that wrote it: not copied.
    _table(
        "inbox",
        "id source update_id lane payload attempts owner lease_until error created_at done_at"
        " subject",
    ),
)


class PortableStore(Protocol):
    """Raw rows of one open store, table by table.

    ``tables`` lists what this backend holds in copy order (:data:`TABLES`, plus any table a
    backend part adds). ``read`` returns up to ``limit`` rows whose key is greater than
    ``after`` (the last row's key of the previous batch; None: from the start), in key order,
    so a copy streams with constant memory. ``write`` inserts rows in one transaction, skips
    any whose key the table already has (a copy run twice writes nothing twice, and never
    adds a day's usage twice), and returns how many it inserted; it writes a derived search
    index row for each inserted row or leaves that to ``finish``. ``finish`` runs once after
    the last write: identities past the highest id, derived indexes complete.
    """

    def tables(self) -> Sequence[Table]: ...

    async def count(self, table: Table) -> int: ...

    async def read(self, table: Table, after: Row | None, limit: int) -> list[Row]: ...

    async def write(self, table: Table, rows: Sequence[Row]) -> int: ...

    async def finish(self) -> None: ...


class PortableRows:
    """What both backends' :class:`PortableStore` do alike: list, count and read rows."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def tables(self) -> Sequence[Table]:
        return TABLES

    async def count(self, table: Table) -> int:
        return int((await self.db.fetch(f"SELECT count(*) FROM {table.name}"))[0][0])

    async def read(self, table: Table, after: Row | None, limit: int) -> list[Row]:
        columns, key, args = ", ".join(table.columns), ", ".join(table.key), (*(after or ()), limit)
        where = ""
        if after is not None:
            where = f" WHERE ({key}) > ({', '.join(f'${i}' for i in range(1, len(after) + 1))})"
        rows = await self.db.fetch(
            f"SELECT {columns} FROM {table.name}{where} ORDER BY {key} LIMIT ${len(args)}", *args
        )
        return [tuple(row) for row in rows]


def key_of(table: Table, row: Row) -> Row:
    """The key columns of ``row`` (the ``after`` of the next :meth:`PortableStore.read`)."""
    return tuple(row[table.columns.index(column)] for column in table.key)
