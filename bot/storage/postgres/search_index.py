"""Filling the search columns (:mod:`.memory_schema`): the text form, lazy catch-up, totals.

The index holds :func:`search_text`: the :func:`~bot.memory.search.search_form` SQLite's FTS5
indexes, with diacritics stripped from Latin letters as FTS5's ``remove_diacritics 2`` does
(PostgreSQL's ``unaccent`` is an extension; this needs none), then ``to_tsvector`` with the
``parlour_search`` configuration (lower-cases, stems English). Queries go through the same
function term by term, so both sides always agree.

Rows that nobody indexed yet (every turn: the turn writes know nothing of search; memories
another writer inserted) are indexed lazily by :func:`catch_up`: one indexer at a time per
table and schema (an advisory lock, waited for, so a search after it sees everything its
predecessor indexed), and an ``UPDATE ... WHERE search IS NULL`` that cannot index a row twice.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import asyncpg

from bot.storage.postgres.connection import Database
from bot.storage.search_text import query_terms, search_form

__all__ = [
    "MEMORIES",
    "TURNS",
    "Indexed",
    "catch_up",
    "catch_up_sql",
    "fold_totals",
    "search_terms",
    "search_text",
]

# A tsvector holds at most 1 MB; no message needs more than this many characters of it.
MAX_INDEXED_CHARS = 100_000
FOLD_AFTER = 32  # delta rows of search_totals before add_memory folds them


@dataclass(frozen=True, slots=True)
class Indexed:
    """A table with search columns: its text column and its scope tokens (as SQL)."""

    table: str
    text_column: str
    scope_tokens: str  # the row's scope tokens in SQLite's index, counted into search_len


MEMORIES = Indexed("memories", "text", "CASE scope WHEN 'chat' THEN 1 ELSE 2 END")
TURNS = Indexed("turns", "user_text", "1")


@lru_cache(maxsize=4096)
def _fold_latin(token: str) -> str:
    if token.isascii():
        return token
    folded = []
    for char in token:
        if "\u00c0" <= char <= "\u024f" or "\u1e00" <= char <= "\u1eff":
            base = unicodedata.normalize("NFD", char)
            char = "".join(c for c in base if not unicodedata.combining(c)) or char
        folded.append(char)
    return "".join(folded)


def search_text(text: str) -> str:
    """What the index holds for ``text`` (before ``to_tsvector``)."""
    form = search_form(text[:MAX_INDEXED_CHARS])
    return " ".join(_fold_latin(token) for token in form.split())


def search_terms(query: str) -> list[str]:
    """A query's terms as the index spells them: no stop words, each one FTS5 phrase."""
    return [_fold_latin(term) for term in query_terms(query)]


def lock_sql(purpose: str) -> str:
    """An advisory lock of this schema for ``purpose`` (bots in other schemas never wait)."""
    return f"hashtextextended('parlour.{purpose}:' || current_schema(), 0)"


def catch_up_sql(target: Indexed) -> str:
    return f"""
WITH done AS (
    UPDATE {target.table} AS r
    SET search = f.v, search_len = search_tokens(f.v) + {target.scope_tokens}
    FROM (SELECT i, to_tsvector('parlour_search', form) AS v
          FROM unnest($1::bigint[], $2::text[]) AS u (i, form)) AS f
    WHERE r.id = f.i AND r.search IS NULL
    RETURNING r.search, r.search_len
),
df AS (
    INSERT INTO search_df AS d (tbl, lexeme, docs)
    SELECT '{target.table}', u.lexeme, count(*) FROM done CROSS JOIN unnest(done.search) AS u
    GROUP BY u.lexeme ORDER BY u.lexeme
    ON CONFLICT (tbl, lexeme) DO UPDATE SET docs = d.docs + excluded.docs
)
INSERT INTO search_totals (tbl, docs, tokens)
    SELECT '{target.table}', count(*), coalesce(sum(search_len), 0) FROM done
    HAVING count(*) > 0
RETURNING docs
"""


_FOLD = """
WITH gone AS (DELETE FROM search_totals WHERE tbl = $1 RETURNING docs, tokens)
INSERT INTO search_totals (tbl, docs, tokens)
    SELECT $1, sum(docs), sum(tokens) FROM gone HAVING count(*) > 0
"""


async def fold_totals(conn: asyncpg.Connection, table: str, *, wait: bool) -> None:
    """Fold ``table``'s statistics deltas into one row, inside ``conn``'s transaction. Under
    the indexer's lock (``wait``) or, if another holds it, not at all this time."""
    key = lock_sql("index." + table)
    if wait:
        await conn.execute(f"SELECT pg_advisory_xact_lock({key})")
    elif not await conn.fetchval(f"SELECT pg_try_advisory_xact_lock({key})"):
        return
    await conn.execute(_FOLD, table)


async def catch_up(db: Database, target: Indexed, batch: int) -> int:
    """Index ``target``'s rows that have no search form yet; returns how many this call did."""
    table, column = target.table, target.text_column
    async with db.acquire() as conn:
        if not await conn.fetchval(f"SELECT EXISTS (SELECT FROM {table} WHERE search IS NULL)"):
            return 0
    indexed = 0
    statement = catch_up_sql(target)
    while True:
        async with db.transaction() as conn:
            await fold_totals(conn, table, wait=True)  # also: one indexer at a time
            rows = await conn.fetch(
                f"SELECT id, {column} FROM {table} WHERE search IS NULL ORDER BY id LIMIT $1",
                max(batch, 1),
            )
            if rows:
                ids = [int(row[0]) for row in rows]
                forms = [search_text(str(row[1])) for row in rows]
                indexed += int(await conn.fetchval(statement, ids, forms) or 0)
        if len(rows) < max(batch, 1):
            return indexed
