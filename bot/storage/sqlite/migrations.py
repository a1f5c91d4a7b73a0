"""Versioned SQLite schema. ``PRAGMA user_version`` records how many steps have run.

Append a step to add a change; never edit a step that has shipped. A database written by a newer
Parlour (higher version than we know) is refused rather than silently misread.
"""

from __future__ import annotations

from bot.storage.sqlite.schema_steps import STEPS_1_TO_10

MIGRATIONS: tuple[str, ...] = (
    *STEPS_1_TO_10,
    # 11: a memory belongs to the conversation it was said in (bot/memory/scope.py), not to the
    # whole chat: under /scope user or thread one member's or topic's facts were recalled for
    # everyone in the group. Older rows get the conversation of the turn they came from, else
    # the chat's shared conversation (a group) or the private chat's; the index scope tokens
    # become "c" + hex(conversation), plus "o" + hex(chat \n user) for a member's own fact or
    # "p" + hex(platform:user) for a private one (bot.storage.sqlite.scopes.MEMORY_SCOPE_SQL).
    """
    ALTER TABLE memories ADD COLUMN conv_key TEXT NOT NULL DEFAULT '';
    UPDATE memories SET conv_key = coalesce(
        (SELECT t.conv_key FROM turns AS t
            WHERE t.id = memories.source_turn_id AND t.chat_key = memories.chat_key),
        CASE WHEN scope = 'private' THEN chat_key || ':u:' || user_id ELSE chat_key END);
    CREATE INDEX memories_by_conversation ON memories (conv_key, id);
    UPDATE memories_fts SET scope = (SELECT 'c' || lower(hex(m.conv_key)) || CASE m.scope
            WHEN 'member' THEN ' o' || lower(hex(m.chat_key || char(10) || m.user_id))
            WHEN 'private' THEN ' p' || lower(hex(substr(m.chat_key, 1, instr(m.chat_key, ':'))
                || m.user_id))
            ELSE '' END
        FROM memories AS m WHERE m.id = memories_fts.rowid)
    WHERE rowid > 0;
    """,
    # 12: what replicas sharing the file agree on (bot.storage.coordination): the inbox of
    # platform updates (unique per source and update id, leased to one owner at a time), named
    # leases, and the shared limits (token buckets, requests in flight, circuit breakers). Times
    # are seconds since the epoch by the database's clock.
    """
    CREATE TABLE inbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        source TEXT NOT NULL,
        update_id INTEGER NOT NULL,
        lane TEXT NOT NULL,
        payload TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        owner TEXT,
        lease_until REAL,
        error TEXT,
        created_at REAL NOT NULL,
        done_at REAL,
        UNIQUE (source, update_id)
    );
    CREATE INDEX inbox_lanes ON inbox (source, lane, update_id) WHERE done_at IS NULL;
    CREATE INDEX inbox_by_owner ON inbox (owner) WHERE done_at IS NULL;
    CREATE INDEX inbox_done ON inbox (done_at) WHERE done_at IS NOT NULL;

    CREATE TABLE leases (
        name TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        until REAL NOT NULL
    );

    CREATE TABLE rate_buckets (
        key TEXT PRIMARY KEY,
        tokens REAL NOT NULL,
        updated REAL NOT NULL,
        per_second REAL NOT NULL,
        burst INTEGER NOT NULL,
        refusals INTEGER NOT NULL DEFAULT 0
    );

    CREATE TABLE flights (
        key TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        until REAL NOT NULL,
        refusals INTEGER NOT NULL DEFAULT 0
    );

    CREATE TABLE breakers (
        name TEXT PRIMARY KEY,
        failures INTEGER NOT NULL,
        open_until REAL NOT NULL
    );
    """,
    # 13: where each conversation's prompt begins (bot.storage.prompt_windows): the oldest turn
    # it holds, and the summary it shows, both changed only when the window is cut. Kept in the
    # summary's row, so they are forgotten and moved with it. NULL: never cut.
    """
    ALTER TABLE summaries ADD COLUMN window_start INTEGER;
    ALTER TABLE summaries ADD COLUMN summary_shown TEXT NOT NULL DEFAULT '';
    """,
    # 14: the input tokens a provider's prompt cache served (part of prompt_tokens, billed at a
    # discount; bot.llm.cache_hints), per turn and in the ledger: trigger turns_usage (as step
    # 10 left it) books them too. Earlier rows: 0, nothing was reported.
    """
    ALTER TABLE turns ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE usage_daily ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
    DROP TRIGGER turns_usage;
    CREATE TRIGGER turns_usage AFTER UPDATE OF status ON turns
        WHEN (new.status = 'answered' AND old.status != 'answered')
            OR (old.status = 'pending' AND new.status = 'unanswered'
                AND new.prompt_tokens + new.completion_tokens > 0)
    BEGIN
        INSERT INTO usage_daily (day, chat_key, user_id, user_name, turns, prompt_tokens,
            completion_tokens, cached_tokens)
        VALUES (date(coalesce(new.completed_at, new.created_at), 'unixepoch'), new.chat_key,
            new.user_id, new.user_name,
            new.status = 'answered', new.prompt_tokens, new.completion_tokens,
            new.cached_tokens)
        ON CONFLICT (day, chat_key, user_id) DO UPDATE SET
            turns = turns + excluded.turns,
            prompt_tokens = prompt_tokens + excluded.prompt_tokens,
            completion_tokens = completion_tokens + excluded.completion_tokens,
            cached_tokens = cached_tokens + excluded.cached_tokens,
            user_name = excluded.user_name;
    END;
    """,
    # 15: embedding vectors of turns' user messages, so recall finds old messages by
    # meaning too (bot.memory.store, memory.embeddings), stored as memory_vectors are (step 6).
    # A trigger deletes a turn's vector with it, as for its FTS row: the cascade needs
    # ``PRAGMA foreign_keys=ON``.
    """
    CREATE TABLE turn_vectors (
        turn_id INTEGER PRIMARY KEY REFERENCES turns (id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL,
        vector BLOB NOT NULL
    );
    CREATE TRIGGER turn_vectors_delete AFTER DELETE ON turns BEGIN
        DELETE FROM turn_vectors WHERE turn_id = old.id;
    END;
    """,
    # 16: the audit trail (bot.storage.audit): every reset (``resets`` keeps only each
    # conversation's latest, and /clear deletes it) and every persona or scope change, with
    # who made it. Clears stay in ``clear_audit``; the trail reads both. The latest reset of
    # each conversation stored so far becomes an entry (its actor's name was not kept).
    """
    CREATE TABLE chat_audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        chat_key TEXT NOT NULL,
        conv_key TEXT NOT NULL DEFAULT '',
        actor_id TEXT NOT NULL,
        actor_name TEXT NOT NULL DEFAULT '',
        action TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '',
        at REAL NOT NULL
    );
    CREATE INDEX chat_audit_by_chat ON chat_audit (chat_key, id);
    INSERT INTO chat_audit (chat_key, conv_key, actor_id, action, at)
        SELECT chat_key, conv_key, by_user, 'reset', at FROM resets ORDER BY at, conv_key;
    """,
    # 17: what an inbox update is about (a Telegram message: its id), so an edit that arrives
    # while the original still waits unclaimed replaces its payload (bot.storage.coordination
    # Inbox.inbox_amend). NULL: nothing amends it.
    """
    ALTER TABLE inbox ADD COLUMN subject TEXT;
    CREATE INDEX inbox_subjects ON inbox (source, lane, subject)
        WHERE done_at IS NULL AND subject IS NOT NULL;
    """,
    # 18: the chat directory (bot.storage.directory): the title and type an adapter last noted
    # per chat. The list of chats comes from ``turns``, grouped by chat over a covering index
    # (count and newest time without reading a row); pages use ``turns_by_chat``.
    """
    CREATE TABLE chats (
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        chat_key TEXT NOT NULL UNIQUE,
        chat_type TEXT NOT NULL DEFAULT '',
        title TEXT NOT NULL DEFAULT '',
        updated_at REAL NOT NULL,
        PRIMARY KEY (platform, chat_id)
    );
    CREATE INDEX turns_by_chat_status_time ON turns (chat_key, status, created_at);
    """,
    # 19: knowledge bases (bot.storage.knowledge): documents by base and source, their chunks
    # (heading path as a JSON array), an FTS5 index of the chunks whose scope token names the
    # base, their vectors, and the bases an admin bound to a chat. Triggers cascade deletes: a
    # document takes its chunks, a chunk its index row and vector.
    """
    CREATE TABLE knowledge_documents (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        base TEXT NOT NULL,
        source TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        format TEXT NOT NULL,
        added_by TEXT NOT NULL,
        added_at REAL NOT NULL,
        chunks INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        UNIQUE (base, source)
    );
    CREATE TABLE knowledge_chunks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        document_id INTEGER NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
        base TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        headings TEXT NOT NULL CHECK (json_valid(headings)),
        text TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        page INTEGER
    );
    CREATE INDEX knowledge_chunks_by_document ON knowledge_chunks (document_id, ordinal);
    CREATE TABLE knowledge_vectors (
        chunk_id INTEGER PRIMARY KEY REFERENCES knowledge_chunks (id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL,
        vector BLOB NOT NULL
    );
    CREATE VIRTUAL TABLE knowledge_fts USING fts5 (
        body, scope, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TABLE knowledge_bindings (
        chat_key TEXT NOT NULL,
        base TEXT NOT NULL,
        bound_by TEXT NOT NULL,
        bound_at REAL NOT NULL,
        PRIMARY KEY (chat_key, base)
    );
    CREATE TRIGGER knowledge_documents_delete AFTER DELETE ON knowledge_documents BEGIN
        DELETE FROM knowledge_chunks WHERE document_id = old.id;
    END;
    CREATE TRIGGER knowledge_chunks_delete AFTER DELETE ON knowledge_chunks BEGIN
        DELETE FROM knowledge_fts WHERE rowid = old.id;
        DELETE FROM knowledge_vectors WHERE chunk_id = old.id;
    END;
    """,
    # 20: ambient mode set in the chat by an admin (/ambient on|off): 1 on, 0 off, NULL the
    # preset's (bot.conversation.ambient).
    """
    ALTER TABLE chat_preferences ADD COLUMN ambient INTEGER CHECK (ambient IN (0, 1));
    """,
    # 21: chatter a turn passed over (older than what it moved in as context) is kept, marked
    # passed: never in a prompt again, still read by /catchup (bot.storage.sql.turns).
    """
    ALTER TABLE overheard ADD COLUMN passed INTEGER NOT NULL DEFAULT 0 CHECK (passed IN (0, 1));
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
