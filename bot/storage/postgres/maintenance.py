"""Retention, the turns a crash left pending, and chat migration, in PostgreSQL.

Replicas on other hosts share the database: :func:`bot.storage.owners.is_dead` only calls an
owner dead when that is certain (same host), so a turn another host's replica left pending
closes by age (``STALE_PENDING_SECONDS``), never while that replica may still answer it.
"""

from __future__ import annotations

import logging
import time

import asyncpg

from bot.storage import owners
from bot.storage.maintenance import STALE_PENDING_SECONDS
from bot.storage.postgres.part import Part

log = logging.getLogger(__name__)

# Tables keyed by conversation whose rows move with a chat; overheard has no key to clash on.
_KEYED_BY_CONVERSATION = ("resets", "summaries")


class PostgresMaintenance(Part):
    async def close_interrupted_turns(self) -> int:
        """Mark turns left pending by a process that died (kill -9, power loss) unanswered,
        with error ``interrupted`` (:class:`bot.storage.maintenance.Maintenance`)."""
        async with self._db.acquire() as conn:
            return await close_interrupted(conn)

    async def delete_older_than(self, seconds: float) -> int:
        """History retention: drop turns (and overheard messages) older than ``seconds``."""
        cutoff = time.time() - seconds
        async with self._db.transaction() as conn:
            deleted = await conn.fetchval(
                "WITH gone AS (DELETE FROM turns WHERE created_at < $1 AND status <> 'pending'"
                " RETURNING 1) SELECT count(*) FROM gone",
                cutoff,
            )
            await conn.execute("DELETE FROM overheard WHERE created_at < $1", cutoff)
            await conn.execute("DELETE FROM deliveries WHERE created_at < $1", cutoff)
            await conn.execute("DELETE FROM summaries WHERE updated_at < $1", cutoff)
        if deleted:
            log.info("retention: deleted %d turns older than %.0f days", deleted, seconds / 86400)
        return int(deleted)

    async def migrate_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """Re-key every row of the old chat; the conversation keys keep their suffixes."""
        start = len(old_chat_key) + 1  # substr() of the suffix after the old chat key
        async with self._db.transaction() as conn:
            moved = await conn.fetchval(
                "WITH moved AS (UPDATE turns SET chat_key = $1, conv_key = $1 || substr(conv_key,"
                " $2) WHERE chat_key = $3 RETURNING 1) SELECT count(*) FROM moved",
                new_chat_key,
                start,
                old_chat_key,
            )
            for table in _KEYED_BY_CONVERSATION:
                # A row the new chat already has wins (the protocol's rule) ...
                await conn.execute(
                    f"DELETE FROM {table} AS o WHERE o.chat_key = $3 AND EXISTS (SELECT 1 FROM"
                    f" {table} AS n WHERE n.conv_key = $1 || substr(o.conv_key, $2))",
                    new_chat_key,
                    start,
                    old_chat_key,
                )
            for table in (*_KEYED_BY_CONVERSATION, "overheard"):
                # ... the rest moves.
                await conn.execute(
                    f"UPDATE {table} SET chat_key = $1, conv_key = $1 || substr(conv_key, $2)"
                    " WHERE chat_key = $3",
                    new_chat_key,
                    start,
                    old_chat_key,
                )
            await conn.execute(
                "UPDATE chat_preferences SET chat_key = $1 WHERE chat_key = $2 AND NOT EXISTS"
                " (SELECT 1 FROM chat_preferences WHERE chat_key = $1)",
                new_chat_key,
                old_chat_key,
            )
            # Today's spending follows the chat, so a migration does not refill its budget.
            await conn.execute(
                "INSERT INTO usage_daily AS u (day, chat_key, user_id, user_name, turns,"
                " prompt_tokens, completion_tokens, cached_tokens)"
                " SELECT day, $1, user_id, user_name, turns, prompt_tokens, completion_tokens,"
                " cached_tokens FROM usage_daily WHERE chat_key = $2"
                " ON CONFLICT (day, chat_key, user_id) DO UPDATE SET"
                " turns = u.turns + excluded.turns,"
                " prompt_tokens = u.prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = u.completion_tokens + excluded.completion_tokens,"
                " cached_tokens = u.cached_tokens + excluded.cached_tokens",
                new_chat_key,
                old_chat_key,
            )
            await conn.execute("DELETE FROM usage_daily WHERE chat_key = $1", old_chat_key)
            await conn.execute(
                "UPDATE clear_audit SET chat_key = $1 WHERE chat_key = $2",
                new_chat_key,
                old_chat_key,
            )
            await conn.execute(  # the audit trail; a reset names its conversation
                "UPDATE chat_audit SET chat_key = $1, conv_key = CASE WHEN conv_key = ''"
                " THEN '' ELSE $1 || substr(conv_key, $2) END WHERE chat_key = $3",
                new_chat_key,
                start,
                old_chat_key,
            )
            await conn.execute(  # a memory keeps the conversation it was said in
                "UPDATE memories SET chat_key = $1, conv_key = CASE WHEN"
                " starts_with(conv_key, $3) THEN $1 || substr(conv_key, $2) ELSE conv_key END"
                " WHERE chat_key = $3",
                new_chat_key,
                start,
                old_chat_key,
            )
            await self._chat_moved(conn, old_chat_key, new_chat_key)
        log.info("chat migrated old=%s new=%s turns=%d", old_chat_key, new_chat_key, moved)
        return int(moved)

    async def _chat_moved(
        self, conn: asyncpg.Connection, old_chat_key: str, new_chat_key: str
    ) -> None:
        """Called inside :meth:`migrate_chat`'s transaction once every core row has moved: a
        mixin keeping data derived from chat keys (memory search) updates it here, in the same
        transaction. The core has nothing to do."""


async def close_interrupted(conn: asyncpg.Connection) -> int:
    """Close pending turns of dead owners at once, any other after ``STALE_PENDING_SECONDS``:
    other live processes (replicas, the console) share the database, and no live turn runs
    that long."""
    rows = await conn.fetch(
        "SELECT DISTINCT owner FROM turns WHERE status = 'pending' AND owner IS NOT NULL"
    )
    dead = [row["owner"] for row in rows if owners.is_dead(row["owner"])]
    now = time.time()
    closed = await conn.fetchval(
        "WITH closed AS (UPDATE turns SET status = 'unanswered', error = 'interrupted',"
        " completed_at = $1 WHERE status = 'pending' AND (created_at < $2"
        " OR owner = any($3::text[])) RETURNING 1) SELECT count(*) FROM closed",
        now,
        now - STALE_PENDING_SECONDS,
        dead,
    )
    if closed:
        log.warning("marked %d interrupted turns unanswered", closed)
    return int(closed)
