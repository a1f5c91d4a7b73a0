"""Retention, the turns a crash left pending, and chat migration
(:class:`bot.storage.maintenance.Maintenance`).

Replicas on other hosts may share the database: :func:`bot.storage.owners.is_dead` only calls
an owner dead when that is certain (same host), so a turn another host's process left pending
closes by age (``STALE_PENDING_SECONDS``), never while that process may still answer it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from bot.storage import owners
from bot.storage.maintenance import STALE_PENDING_SECONDS
from bot.storage.sql.seam import Database, Tx, Windows

log = logging.getLogger(__name__)

ChatMoved = Callable[[Tx, str], Awaitable[None]]  # (transaction, new chat key): re-index


async def close_interrupted(db: Database) -> int:
    """Close pending turns of dead owners at once, any other after ``STALE_PENDING_SECONDS``."""
    rows = await db.fetch(
        "SELECT DISTINCT owner FROM turns WHERE status = 'pending' AND owner IS NOT NULL"
    )
    dead = [str(owner) for (owner,) in rows if owners.is_dead(str(owner))]
    now = time.time()
    sql = (
        "UPDATE turns SET status = 'unanswered', error = 'interrupted', completed_at = $1"
        f" WHERE status = 'pending' AND (created_at < $2"
        f" OR {db.dialect.in_array('owner', '$3', 'text')})"
    )
    closed = await db.execute(sql, now, now - STALE_PENDING_SECONDS, db.dialect.array(dead))
    if closed:
        log.warning("marked %d interrupted turns unanswered", closed)
    return closed


class Upkeep:
    def __init__(self, db: Database, windows: Windows, chat_moved: ChatMoved) -> None:
        self._db, self._windows, self._chat_moved = db, windows, chat_moved

    async def close_interrupted_turns(self) -> int:
        """Mark turns left pending by a process that died (kill -9, power loss) unanswered,
        with error ``interrupted`` (:class:`bot.storage.maintenance.Maintenance`)."""
        closed = await close_interrupted(self._db)
        if closed:
            self._windows.clear()
        return closed

    async def delete_older_than(self, seconds: float) -> int:
        """History retention: drop turns (and overheard messages) older than ``seconds``."""
        cutoff = time.time() - seconds
        async with self._db.transaction() as tx:
            deleted = await tx.execute(
                "DELETE FROM turns WHERE created_at < $1 AND status != 'pending'", cutoff
            )
            heard = await tx.execute("DELETE FROM overheard WHERE created_at < $1", cutoff)
            await tx.execute("DELETE FROM deliveries WHERE created_at < $1", cutoff)
            marks = await tx.execute("DELETE FROM summaries WHERE updated_at < $1", cutoff)
        if deleted or heard or marks:  # SQLite keeps overheard rows and marks in memory too
            self._windows.clear()
        if deleted:
            log.info("retention: deleted %d turns older than %.0f days", deleted, seconds / 86400)
        return deleted

    async def migrate_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """Re-key every row of the old chat; the conversation keys keep their suffixes."""
        args = (new_chat_key, len(old_chat_key) + 1, old_chat_key)  # $2: substr() of the suffix
        rekey = "chat_key = $1, conv_key = $1 || substr(conv_key, $2) WHERE chat_key = $3"
        async with self._db.transaction() as tx:
            moved = await tx.execute(f"UPDATE turns SET {rekey}", *args)
            for table in ("resets", "summaries"):  # keyed by conversation:
                # a row the new chat already has wins (the protocol's rule) ...
                await tx.execute(
                    f"DELETE FROM {table} AS o WHERE o.chat_key = $3 AND EXISTS (SELECT 1 FROM"
                    f" {table} AS n WHERE n.conv_key = $1 || substr(o.conv_key, $2))",
                    *args,
                )
            for table in ("resets", "summaries", "overheard"):  # ... the rest moves.
                await tx.execute(f"UPDATE {table} SET {rekey}", *args)
            await tx.execute(
                "UPDATE chat_preferences SET chat_key = $1 WHERE chat_key = $2 AND NOT EXISTS"
                " (SELECT 1 FROM chat_preferences WHERE chat_key = $1)",
                new_chat_key,
                old_chat_key,
            )
            await tx.execute(  # the bases bound with /knowledge bind follow the chat
                "UPDATE knowledge_bindings SET chat_key = $1 WHERE chat_key = $2 AND NOT EXISTS"
                " (SELECT 1 FROM knowledge_bindings AS b WHERE b.chat_key = $1"
                " AND b.base = knowledge_bindings.base)",
                new_chat_key,
                old_chat_key,
            )
            await tx.execute("DELETE FROM knowledge_bindings WHERE chat_key = $1", old_chat_key)
            # Today's spending follows the chat, so a migration does not refill its budget.
            await tx.execute(
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
            await tx.execute("DELETE FROM usage_daily WHERE chat_key = $1", old_chat_key)
            await tx.execute(
                "UPDATE clear_audit SET chat_key = $1 WHERE chat_key = $2",
                new_chat_key,
                old_chat_key,
            )
            await tx.execute(  # the audit trail; a reset names its conversation
                "UPDATE chat_audit SET chat_key = $1, conv_key = CASE WHEN conv_key = ''"
                " THEN '' ELSE $1 || substr(conv_key, $2) END WHERE chat_key = $3",
                *args,
            )
            await tx.execute(  # a memory keeps the conversation it was said in
                "UPDATE memories SET chat_key = $1, conv_key = CASE WHEN"
                f" {self._db.dialect.starts_with('conv_key', '$3')}"
                " THEN $1 || substr(conv_key, $2) ELSE conv_key END WHERE chat_key = $3",
                *args,
            )
            await tx.execute(  # the directory's entry (its title), unless the new has one
                "UPDATE chats SET chat_key = $1, chat_id = substr($1, length(platform) + 2)"
                " WHERE chat_key = $2 AND NOT EXISTS (SELECT 1 FROM chats WHERE chat_key = $1)",
                new_chat_key,
                old_chat_key,
            )
            await tx.execute("DELETE FROM chats WHERE chat_key = $1", old_chat_key)
            await self._chat_moved(tx, new_chat_key)  # indexes that name chats follow
        self._windows.forget_chat(old_chat_key)
        self._windows.forget_chat(new_chat_key)
        log.info("chat migrated old=%s new=%s turns=%d", old_chat_key, new_chat_key, moved)
        return moved
