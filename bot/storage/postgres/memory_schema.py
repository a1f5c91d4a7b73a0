"""The ``memories`` migration component: full-text search over memories and past messages.

Added to the core tables (``memories``, ``turns``) rather than kept beside them, so a delete
takes its index entry with it and nothing the core writes needs to know about search:

* ``search`` -- a ``tsvector`` of the row's :func:`~bot.memory.search.search_form` (CJK runs as
  bigrams) through the configuration ``parlour_search``: the ``simple`` one with Snowball
  English stemming for ASCII words and *no* stop words (FTS5's ``porter unicode61`` indexes
  them too; queries drop them in Python). NULL until indexed; filled only from Python
  (:mod:`.search_index`), in ``add_memory``'s statement or lazily for rows others wrote
  (turns, a ``storage copy``);
* ``search_len`` -- the row's length for BM25 as FTS5 counts it: its tokens plus its scope
  tokens (1 for a turn or a chat-wide memory, 2 for a member's or a private one), so scores
  match SQLite's;
* ``search_df`` -- how many indexed rows hold each lexeme (BM25's n), kept by the same writes
  and triggers, always in lexeme order (writers of one lexeme queue; they never deadlock);
* ``search_totals`` -- BM25's corpus statistics (rows indexed, their total length) as
  append-only deltas: indexing adds, a statement-level trigger subtracts deleted rows, and
  indexers fold the rows into one. Appending means no writer waits for another on one hot
  counter row;
* GIN indexes without ``fastupdate`` (a pending list makes every search scan it), partial
  indexes of the rows not yet indexed, and one for a user's private memories.

An edit of the text (no Parlour code does one) sends the row back to "not yet indexed".

Step 2 adds ``turn_vectors``: the embedding of each turn's user message, for recall by meaning.
"""

from __future__ import annotations

__all__ = ["MEMORY_SEARCH_COMPONENT", "MEMORY_SEARCH_STEPS"]

MEMORY_SEARCH_STEPS: tuple[str, ...] = (
    # 1: search columns, indexes, corpus statistics and the triggers that keep them.
    """
    CREATE TEXT SEARCH DICTIONARY parlour_english_stem (
        TEMPLATE = pg_catalog.snowball, Language = english
    );
    CREATE TEXT SEARCH CONFIGURATION parlour_search (COPY = pg_catalog.simple);
    ALTER TEXT SEARCH CONFIGURATION parlour_search
        ALTER MAPPING FOR asciiword, asciihword, hword_asciipart WITH parlour_english_stem;

    ALTER TABLE memories ADD COLUMN search tsvector, ADD COLUMN search_len integer;
    ALTER TABLE turns ADD COLUMN search tsvector, ADD COLUMN search_len integer;
    CREATE INDEX memories_search ON memories USING gin (search) WITH (fastupdate = off);
    CREATE INDEX turns_search ON turns USING gin (search) WITH (fastupdate = off);
    CREATE INDEX memories_unindexed ON memories (id) WHERE search IS NULL;
    CREATE INDEX turns_unindexed ON turns (id) WHERE search IS NULL;
    CREATE INDEX memories_private_by_user ON memories (user_id, id) WHERE scope = 'private';

    CREATE TABLE search_totals (
        tbl TEXT NOT NULL CHECK (tbl IN ('memories', 'turns')),
        docs BIGINT NOT NULL,
        tokens BIGINT NOT NULL
    );
    CREATE INDEX search_totals_by_table ON search_totals (tbl);

    -- Rows holding each lexeme, for BM25's idf: one index lookup instead of a count over the
    -- heap. Always changed in lexeme order (no deadlock between writers).
    CREATE TABLE search_df (
        tbl TEXT NOT NULL CHECK (tbl IN ('memories', 'turns')),
        lexeme TEXT NOT NULL,
        docs BIGINT NOT NULL,
        PRIMARY KEY (tbl, lexeme)
    );

    -- A quoted lexeme as a tsquery of itself: never parsed as query syntax.
    CREATE FUNCTION search_lexeme(lexeme text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''')::tsquery;

    -- How many tokens a tsvector holds (each position is one).
    CREATE FUNCTION search_tokens(v tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest(v));

    CREATE FUNCTION search_forget() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    BEGIN
        INSERT INTO search_totals (tbl, docs, tokens)
            SELECT TG_TABLE_NAME, -count(*), -coalesce(sum(search_len), 0)
            FROM gone WHERE search IS NOT NULL HAVING count(*) > 0;
        INSERT INTO search_df AS d (tbl, lexeme, docs)
            SELECT TG_TABLE_NAME, u.lexeme, -count(*) FROM gone CROSS JOIN unnest(gone.search) AS u
            GROUP BY u.lexeme ORDER BY u.lexeme
            ON CONFLICT (tbl, lexeme) DO UPDATE SET docs = d.docs + excluded.docs;
        RETURN NULL;
    END
    $$;
    CREATE TRIGGER memories_search_forget AFTER DELETE ON memories
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION search_forget();
    CREATE TRIGGER turns_search_forget AFTER DELETE ON turns
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION search_forget();

    CREATE FUNCTION search_truncated() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    BEGIN
        DELETE FROM search_totals WHERE tbl = TG_TABLE_NAME;
        DELETE FROM search_df WHERE tbl = TG_TABLE_NAME;
        RETURN NULL;
    END
    $$;
    CREATE TRIGGER memories_search_truncated AFTER TRUNCATE ON memories
        FOR EACH STATEMENT EXECUTE FUNCTION search_truncated();
    CREATE TRIGGER turns_search_truncated AFTER TRUNCATE ON turns
        FOR EACH STATEMENT EXECUTE FUNCTION search_truncated();

    CREATE FUNCTION search_stale() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    BEGIN
        INSERT INTO search_totals (tbl, docs, tokens) VALUES (TG_TABLE_NAME, -1, -OLD.search_len);
        INSERT INTO search_df AS d (tbl, lexeme, docs)
            SELECT TG_TABLE_NAME, u.lexeme, -1 FROM unnest(OLD.search) AS u ORDER BY u.lexeme
            ON CONFLICT (tbl, lexeme) DO UPDATE SET docs = d.docs + excluded.docs;
        NEW.search := NULL;
        NEW.search_len := NULL;
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER memories_search_stale BEFORE UPDATE OF text ON memories FOR EACH ROW
        WHEN (OLD.text IS DISTINCT FROM NEW.text AND OLD.search IS NOT NULL)
        EXECUTE FUNCTION search_stale();
    CREATE TRIGGER turns_search_stale BEFORE UPDATE OF user_text ON turns FOR EACH ROW
        WHEN (OLD.user_text IS DISTINCT FROM NEW.user_text AND OLD.search IS NOT NULL)
        EXECUTE FUNCTION search_stale();
    """,
    # 2: embedding vectors of turns' user messages (recall by meaning over old messages), as
    # memory_vectors holds memories': float32 little-endian, with the model; gone with the turn.
    """
    CREATE TABLE turn_vectors (
        turn_id BIGINT PRIMARY KEY REFERENCES turns (id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL,
        vector BYTEA NOT NULL
    );
    """,
)

MEMORY_SEARCH_COMPONENT: tuple[str, tuple[str, ...]] = ("memories", MEMORY_SEARCH_STEPS)
