"""BM25 in SQL, computed as SQLite's FTS5 computes ``bm25()``, so ``min_score`` means the same.

FTS5's ranking (``fts5_aux.c``), which :data:`bot.memory.store.MIN_SCORE` is calibrated on::

    score = sum over the query's phrases p found in the row of
            idf(p) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * D / avgdl))
    idf(p) = max(ln((N - n(p) + 0.5) / (n(p) + 0.5)), 1e-6),   k1 = 1.2, b = 0.75

with N the rows of the index, n(p) the rows holding p, tf the row's instances of p, D the row's
tokens and avgdl the index's mean. SQLite's index also holds 16 background rows of 9 tokens
(migration 4, smoothing for tiny indexes) and counts each row's scope tokens into D
(:mod:`bot.storage.sqlite.scopes`); so here N and the total length come from
``search_totals`` plus those 16 rows, D is ``search_len`` (which counts the scope tokens), n(p)
is one lookup in ``search_df`` (counting the postings through the heap cost ~10 ms a common
term at 10^5 rows), and tf is the
number of positions of the lexeme in the row's ``tsvector``. Each query term is one phrase, as
each quoted term is to FTS5 (two terms with one stem count twice there, and here).

The query is never parsed: its terms are lexemes (``to_tsvector`` of each), quoted one by one
into a tsquery (``search_lexeme``). Which rows may match is part of the hits' WHERE clause
(isolation first, then ranking); results are best first, ties newest first.
"""

from __future__ import annotations

__all__ = ["MEMORY_SEARCH_SQL", "TURN_SEARCH_SQL", "bm25_sql"]

BACKGROUND_ROWS = 16  # SQLite's seeded rows (its migration 4)
BACKGROUND_TOKENS = 16 * 9  # eight body tokens and one scope token each
K1, B = 1.2, 0.75


def bm25_sql(
    table: str, hits: str, columns: str, min_param: str, limit_param: str, ties: str = "id DESC"
) -> str:
    """The statement: ``hits`` selects ``id, search, search_len`` and ``columns`` from
    ``table AS r`` where ``r.search @@ wanted.q`` (the CTE ``wanted``) and the audience;
    ``ties``: the order of equal scores (newest first; a document's chunks: in order)."""
    return f"""
WITH phrase AS MATERIALIZED (
    SELECT l.lexeme FROM unnest($1::text[]) AS t (term)
    CROSS JOIN LATERAL unnest(to_tsvector('parlour_search', t.term)) AS l
),
totals AS MATERIALIZED (
    SELECT (coalesce(sum(docs), 0) + {BACKGROUND_ROWS})::float8 AS n,
           (coalesce(sum(tokens), 0) + {BACKGROUND_TOKENS})::float8
               / (coalesce(sum(docs), 0) + {BACKGROUND_ROWS}) AS avgdl
    FROM search_totals WHERE tbl = '{table}'
),
weight AS MATERIALIZED (
    SELECT x.lexeme,
           x.phrases * greatest(ln((totals.n - c.hits + 0.5) / (c.hits + 0.5)), 1e-6) AS weight
    FROM (SELECT lexeme, count(*) AS phrases FROM phrase GROUP BY lexeme) AS x
    CROSS JOIN totals
    CROSS JOIN LATERAL (
        SELECT coalesce(sum(docs), 0)::float8 AS hits FROM search_df
        WHERE tbl = '{table}' AND lexeme = x.lexeme
    ) AS c
),
wanted AS MATERIALIZED (
    SELECT array_agg(lexeme) AS lexemes, array_agg(weight) AS weights,
           string_agg(search_lexeme(lexeme)::text, ' | ')::tsquery AS q
    FROM weight
),
hit AS ({hits}),
scored AS (
    SELECT hit.*, s.score FROM hit CROSS JOIN totals CROSS JOIN wanted CROSS JOIN LATERAL (
        SELECT sum(wanted.weights[array_position(wanted.lexemes, u.lexeme)]
                   * cardinality(u.positions) * {K1 + 1}::float8
                   / (cardinality(u.positions) + {K1}::float8
                      * ({1 - B}::float8 + {B}::float8 * hit.search_len / totals.avgdl)))
            AS score
        FROM unnest(hit.search) AS u WHERE u.lexeme = ANY (wanted.lexemes)
    ) AS s
)
SELECT {columns}, score FROM scored WHERE score >= {min_param}
ORDER BY score DESC, {ties} LIMIT {limit_param}
"""


_MEMORY_COLUMNS = "id, chat_key, conv_key, user_id, user_name, scope, text, created_at"
_MEMORY_HIT = f"SELECT r.search, r.search_len, {', '.join('r.' + c for c in _MEMORY_COLUMNS.split(', '))} FROM memories AS r, wanted WHERE r.search @@ wanted.q"  # noqa: E501

# The Audience rule (bot.memory.scope) as three disjoint branches, each one index range:
# $2 conversation, $3 chat, $4 user, $5 "platform:" when private memories may join, else NULL.
MEMORY_SEARCH_SQL = bm25_sql(
    "memories",
    f"""
    {_MEMORY_HIT} AND r.conv_key = $2
    UNION ALL
    {_MEMORY_HIT} AND r.conv_key <> $2
        AND r.user_id = $4 AND r.scope = 'member' AND r.chat_key = $3
    UNION ALL
    {_MEMORY_HIT} AND r.conv_key <> $2
        AND $5::text IS NOT NULL AND r.user_id = $4 AND r.scope = 'private'
        AND starts_with(r.chat_key, $5::text)
    """,
    _MEMORY_COLUMNS,
    "$6",
    "$7",
)

# $2 conversation, $3 below this turn id; after the conversation's last reset.
TURN_SEARCH_SQL = bm25_sql(
    "turns",
    """
    SELECT r.id, r.search, r.search_len, r.user_id, r.user_name, r.user_text, r.created_at
    FROM turns AS r, wanted
    WHERE r.search @@ wanted.q AND r.conv_key = $2 AND r.id < $3
      AND r.id > coalesce((SELECT after_turn_id FROM resets WHERE conv_key = $2), 0)
    """,
    "id, user_id, user_name, user_text, created_at",
    "$4",
    "$5",
)
