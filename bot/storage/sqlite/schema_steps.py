"""SQLite schema steps 1 to 10 (:mod:`.migrations` has the rest and the version): shipped,
so never edited."""

from __future__ import annotations

# Usage booked by the statement that completes a turn: step 9 makes it, step 10 remakes it.
_TURNS_USAGE = """
    CREATE TRIGGER turns_usage AFTER UPDATE OF status ON turns
        WHEN (new.status = 'answered' AND old.status != 'answered')
            OR (old.status = 'pending' AND new.status = 'unanswered'
                AND new.prompt_tokens + new.completion_tokens > 0)
    BEGIN
        INSERT INTO usage_daily
            (day, chat_key, user_id, user_name, turns, prompt_tokens, completion_tokens)
        VALUES (date(coalesce(new.completed_at, new.created_at), 'unixepoch'), new.chat_key,
            new.user_id, new.user_name,
            new.status = 'answered', new.prompt_tokens, new.completion_tokens)
        ON CONFLICT (day, chat_key, user_id) DO UPDATE SET
            turns = turns + excluded.turns,
            prompt_tokens = prompt_tokens + excluded.prompt_tokens,
            completion_tokens = completion_tokens + excluded.completion_tokens,
            user_name = excluded.user_name;
    END;
"""

STEPS_1_TO_10: tuple[str, ...] = (
    # 1: one row per turn (the user's message and, once answered, the whole answer as a JSON
    # array of OpenAI-format messages), soft resets, per-chat preferences, the clear audit.
    """
    CREATE TABLE turns (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conv_key TEXT NOT NULL,
        chat_key TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT NOT NULL DEFAULT '',
        platform_message_id TEXT,
        user_text TEXT NOT NULL,
        answer TEXT CHECK (answer IS NULL OR json_valid(answer)),
        status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'unanswered')),
        error TEXT,
        model TEXT,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        completed_at REAL
    );
    CREATE INDEX turns_by_conversation ON turns (conv_key, id);
    CREATE INDEX turns_by_chat ON turns (chat_key);

    CREATE TABLE resets (
        conv_key TEXT PRIMARY KEY,
        chat_key TEXT NOT NULL,
        after_turn_id INTEGER NOT NULL,
        by_user TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE INDEX resets_by_chat ON resets (chat_key);

    CREATE TABLE chat_preferences (
        chat_key TEXT PRIMARY KEY,
        scope TEXT CHECK (scope IN ('chat', 'user', 'thread')),
        system_prompt TEXT,
        updated_at REAL NOT NULL
    );

    CREATE TABLE clear_audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        chat_key TEXT NOT NULL,
        actor_id TEXT NOT NULL,
        actor_name TEXT NOT NULL,
        at REAL NOT NULL,
        deleted_turns INTEGER NOT NULL,
        deleted_messages INTEGER NOT NULL
    );
    """,
    # 2: group messages the bot overheard without being addressed. They wait in ``overheard``
    # (bounded by the service); when the bot is addressed they move into ``turns`` with status
    # 'context', just before the addressed turn, and stay part of the history from then on.
    # SQLite cannot alter a CHECK constraint, so ``turns`` is rebuilt with the new status.
    """
    CREATE TABLE turns_v2 (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conv_key TEXT NOT NULL,
        chat_key TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT NOT NULL DEFAULT '',
        platform_message_id TEXT,
        user_text TEXT NOT NULL,
        answer TEXT CHECK (answer IS NULL OR json_valid(answer)),
        status TEXT NOT NULL
            CHECK (status IN ('pending', 'answered', 'unanswered', 'context')),
        error TEXT,
        model TEXT,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        completed_at REAL
    );
    INSERT INTO turns_v2 SELECT * FROM turns;
    DELETE FROM sqlite_sequence WHERE name = 'turns_v2';
    INSERT INTO sqlite_sequence (name, seq) SELECT 'turns_v2', seq FROM sqlite_sequence
        WHERE name = 'turns';
    DROP TABLE turns;
    ALTER TABLE turns_v2 RENAME TO turns;
    CREATE INDEX turns_by_conversation ON turns (conv_key, id);
    CREATE INDEX turns_by_chat ON turns (chat_key);

    CREATE TABLE overheard (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conv_key TEXT NOT NULL,
        chat_key TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT NOT NULL DEFAULT '',
        platform_message_id TEXT,
        text TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX overheard_by_conversation ON overheard (conv_key, id);
    CREATE INDEX overheard_by_chat ON overheard (chat_key);
    """,
    # 3: a small key-value store per plugin (reminders, settings a plugin keeps).
    """
    CREATE TABLE plugin_kv (
        plugin TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL CHECK (json_valid(value)),
        updated_at REAL NOT NULL,
        PRIMARY KEY (plugin, key)
    ) WITHOUT ROWID;
    """,
    # 4: long-term memories (bot/storage/sqlite/memories.py), full-text indexes over them and
    # over the users' past messages. The FTS tables hold a *search form* of the text (CJK runs as
    # overlapping bigrams) that only Python computes, so rows are indexed from Python: memories
    # in the same transaction as their insert, turns by SQLiteStore.index_turns (which also
    # indexes the turns that predate this step). Deletes need no Python, so triggers do them and
    # no writer (retention, /clear, a sqlite3 shell) can leave deleted text in an index. A later
    # step that rebuilds ``turns`` must recreate ``turns_fts_delete``. Each index is seeded with
    # 16 background rows (negative rowids: no memory or turn has one, so they never join a
    # result) -- smoothing for bm25, whose idf is 0 for any term in half the rows or more, which
    # in an index of one or two rows is every term.
    """
    CREATE TABLE memories (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        chat_key TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT NOT NULL DEFAULT '',
        scope TEXT NOT NULL CHECK (scope IN ('private', 'member', 'chat')),
        text TEXT NOT NULL,
        source_turn_id INTEGER,
        created_by TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX memories_by_chat ON memories (chat_key, id);
    CREATE INDEX memories_by_user ON memories (chat_key, user_id, id);
    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        body, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        DELETE FROM memories_fts WHERE rowid = old.id;
    END;
    CREATE VIRTUAL TABLE turns_fts USING fts5 (
        body, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER turns_fts_delete AFTER DELETE ON turns BEGIN
        DELETE FROM turns_fts WHERE rowid = old.id;
    END;
    INSERT INTO memories_fts (rowid, body)
        WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 16)
        SELECT -i, 'zzbackground zzbackground zzbackground zzbackground zzbackground'
            || ' zzbackground zzbackground zzbackground' FROM n;
    INSERT INTO turns_fts (rowid, body) SELECT rowid, body FROM memories_fts WHERE rowid < 0;
    """,
    # 5: the rolling summary of each conversation's turns that left the context window.
    """
    CREATE TABLE summaries (
        conv_key TEXT PRIMARY KEY,
        chat_key TEXT NOT NULL,
        summary TEXT NOT NULL,
        through_turn_id INTEGER NOT NULL,
        turns_since INTEGER NOT NULL DEFAULT 0,
        updated_at REAL NOT NULL
    );
    CREATE INDEX summaries_by_chat ON summaries (chat_key);
    """,
    # 6: optional embedding vectors of memories (bot/llm/embeddings.py, memory.embeddings): one
    # unit vector per memory as little-endian float32, with the model that made it -- vectors
    # of another model are not comparable and get re-embedded (MemoryStore.backfill_vectors).
    # The cascade needs ``PRAGMA foreign_keys=ON``, which a sqlite3 shell does not set, so a
    # trigger deletes the vector too, as for the FTS rows.
    """
    CREATE TABLE memory_vectors (
        memory_id INTEGER PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL,
        vector BLOB NOT NULL
    );
    CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN
        DELETE FROM memory_vectors WHERE memory_id = old.id;
    END;
    """,
    # 7: the full-text indexes carry each row's scope as its own column ("k" + hex(chat_key),
    # "p" + hex(platform:user) for private memories, "c" + hex(conv_key) for messages), so a
    # search intersects its terms with one chat's rows inside the index instead of ranking
    # every chat's matches and filtering afterwards (39 ms -> a few ms at 10^5 memories).
    """
    CREATE VIRTUAL TABLE memories_fts_v7 USING fts5 (
        body, scope, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    INSERT INTO memories_fts_v7 (rowid, body, scope)
        SELECT f.rowid, f.body, CASE WHEN m.id IS NULL THEN 'zzbackground'
            ELSE 'k' || lower(hex(m.chat_key)) || CASE WHEN m.scope = 'private'
                THEN ' p' || lower(hex(substr(m.chat_key, 1, instr(m.chat_key, ':')) || m.user_id))
                ELSE '' END
            END
        FROM memories_fts AS f LEFT JOIN memories AS m ON m.id = f.rowid;
    DROP TRIGGER memories_fts_delete;
    DROP TABLE memories_fts;
    ALTER TABLE memories_fts_v7 RENAME TO memories_fts;
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        DELETE FROM memories_fts WHERE rowid = old.id;
    END;
    CREATE VIRTUAL TABLE turns_fts_v7 USING fts5 (
        body, scope, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    INSERT INTO turns_fts_v7 (rowid, body, scope)
        SELECT f.rowid, f.body,
            CASE WHEN t.id IS NULL THEN 'zzbackground' ELSE 'c' || lower(hex(t.conv_key)) END
        FROM turns_fts AS f LEFT JOIN turns AS t ON t.id = f.rowid;
    DROP TRIGGER turns_fts_delete;
    DROP TABLE turns_fts;
    ALTER TABLE turns_fts_v7 RENAME TO turns_fts;
    CREATE TRIGGER turns_fts_delete AFTER DELETE ON turns BEGIN
        DELETE FROM turns_fts WHERE rowid = old.id;
    END;
    """,
    # 8: daily usage per chat and per user is summed from turns (limits, /usage).
    """
    CREATE INDEX turns_by_chat_time ON turns (chat_key, created_at);
    CREATE INDEX turns_by_user_time ON turns (user_id, created_at);
    """,
    # 9: usage is its own ledger, one row per UTC day, chat and user, kept when /clear or the
    # retention job delete the turns (the money was spent; the rows hold no content). A trigger
    # books each turn's tokens in the same statement that completes it, on the day it completes
    # (a failed turn's too: its first rounds were billed; an answer that arrives after the
    # turn was closed as interrupted too); ``turns`` counts the answered ones.
    """
    CREATE TABLE usage_daily (
        day TEXT NOT NULL,
        chat_key TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT NOT NULL DEFAULT '',
        turns INTEGER NOT NULL DEFAULT 0,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (day, chat_key, user_id)
    ) WITHOUT ROWID;
    CREATE INDEX usage_by_user ON usage_daily (day, user_id);
    INSERT INTO usage_daily
        SELECT date(coalesce(completed_at, created_at), 'unixepoch'), chat_key, user_id,
            max(user_name),
            sum(status = 'answered'), sum(prompt_tokens), sum(completion_tokens)
        FROM turns WHERE status IN ('answered', 'unanswered')
            AND (status = 'answered' OR prompt_tokens + completion_tokens > 0)
        GROUP BY 1, 2, 3;
    """
    + _TURNS_USAGE
    + """
    DROP INDEX turns_by_user_time;
    """,
    # 10: delivery. A turn whose answer could not be delivered (Telegram refused it past every
    # retry) gets status 'undelivered': the answer is kept, since the model wrote it and its
    # tools ran, but it no longer counts as answered (nor in usage_daily.turns; its tokens were
    # billed and stay booked). ``owner`` names the process instance that began a turn
    # (bot/storage/owners.py), so the next process closes what a killed one left pending at
    # once. ``deliveries`` records each reply while it is being put on a chat platform (where,
    # which preview message, what it shows): the next start edits what a crash left on screen.
    # Rebuilding ``turns`` drops its triggers and indexes: all are recreated as steps 4-9 left
    # them (``turns_fts_delete`` as of step 7).
    """
    CREATE TABLE turns_v10 (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conv_key TEXT NOT NULL,
        chat_key TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT NOT NULL DEFAULT '',
        platform_message_id TEXT,
        user_text TEXT NOT NULL,
        answer TEXT CHECK (answer IS NULL OR json_valid(answer)),
        status TEXT NOT NULL CHECK (
            status IN ('pending', 'answered', 'unanswered', 'undelivered', 'context')
        ),
        error TEXT,
        model TEXT,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        completed_at REAL,
        owner TEXT
    );
    INSERT INTO turns_v10 (id, conv_key, chat_key, user_id, user_name, platform_message_id,
            user_text, answer, status, error, model, prompt_tokens, completion_tokens,
            created_at, completed_at)
        SELECT id, conv_key, chat_key, user_id, user_name, platform_message_id, user_text,
            answer, status, error, model, prompt_tokens, completion_tokens, created_at,
            completed_at
        FROM turns;
    DELETE FROM sqlite_sequence WHERE name = 'turns_v10';
    INSERT INTO sqlite_sequence (name, seq) SELECT 'turns_v10', seq FROM sqlite_sequence
        WHERE name = 'turns';
    DROP TRIGGER turns_fts_delete;
    DROP TRIGGER turns_usage;
    DROP TABLE turns;
    ALTER TABLE turns_v10 RENAME TO turns;
    CREATE INDEX turns_by_conversation ON turns (conv_key, id);
    CREATE INDEX turns_by_chat ON turns (chat_key);
    CREATE INDEX turns_by_chat_time ON turns (chat_key, created_at);
    CREATE INDEX turns_pending ON turns (owner) WHERE status = 'pending';
    CREATE TRIGGER turns_fts_delete AFTER DELETE ON turns BEGIN
        DELETE FROM turns_fts WHERE rowid = old.id;
    END;
    """
    + _TURNS_USAGE
    + """
    CREATE TRIGGER turns_usage_undelivered AFTER UPDATE OF status ON turns
        WHEN old.status = 'answered' AND new.status = 'undelivered'
    BEGIN
        UPDATE usage_daily SET turns = max(turns - 1, 0)
        WHERE day = date(coalesce(old.completed_at, old.created_at), 'unixepoch')
            AND chat_key = old.chat_key AND user_id = old.user_id;
    END;

    CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        owner TEXT NOT NULL,
        platform TEXT NOT NULL,
        chat_key TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        thread_id TEXT,
        reply_to TEXT,
        message_id TEXT,
        shown TEXT NOT NULL DEFAULT '',
        turn_id INTEGER,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX deliveries_by_platform ON deliveries (platform, id);
    CREATE INDEX deliveries_by_chat ON deliveries (chat_key);
    """,
)
