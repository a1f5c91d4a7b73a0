"""Retention, the turns a crash left pending, and chat migration, in SQLite."""

from __future__ import annotations

import logging
import time

import aiosqlite

from bot.storage import owners
from bot.storage.maintenance import STALE_PENDING_SECONDS
from bot.storage.sqlite.part import Part
from bot.storage.sqlite.scopes import RESCOPE_MEMORIES, RESCOPE_TURNS

log = logging.getLogger(__name__)


class SQLiteMaintenance(Part):
    async def close_interrupted_turns(self) -> int:
        """Mark turns left pending by a process that died (kill -9, power loss) unanswered,
        with error ``interrupted`` (:class:`bot.storage.maintenance.Maintenance`)."""
        async with self._db.writing() as conn:
            closed = await close_interrupted(conn)
        if closed:
            self._windows.clear()
        return closed

    async def delete_older_than(self, seconds: float) -> int:
        """History retention: drop turns (and overheard messages) older than ``seconds``."""
        cutoff = time.time() - seconds
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM turns WHERE created_at < ? AND status != 'pending'", (cutoff,)
            )
            deleted = cursor.rowcount
            await conn.execute("DELETE FROM overheard WHERE created_at < ?", (cutoff,))
            await conn.execute("DELETE FROM deliveries WHERE created_at < ?", (cutoff,))
            await conn.execute("DELETE FROM summaries WHERE updated_at < ?", (cutoff,))
        if deleted:
            self._windows.clear()
            log.info("retention: deleted %d turns older than %.0f days", deleted, seconds / 86400)
        return deleted

    async def migrate_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """Re-key every row of the old chat; the conversation keys keep their suffixes."""
        start = len(old_chat_key) + 1
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE turns SET chat_key = ?, conv_key = ? || substr(conv_key, ?)"
                " WHERE chat_key = ?",
                (new_chat_key, new_chat_key, start, old_chat_key),
            )
            moved = cursor.rowcount
            for table in ("resets", "overheard", "summaries"):
                # OR REPLACE: the new chat may already have its own (newer) row for a key.
                await conn.execute(
                    f"UPDATE OR REPLACE {table} SET chat_key = ?,"
                    " conv_key = ? || substr(conv_key, ?) WHERE chat_key = ?",
                    (new_chat_key, new_chat_key, start, old_chat_key),
                )
            await conn.execute(
                "UPDATE OR IGNORE chat_preferences SET chat_key = ? WHERE chat_key = ?",
                (new_chat_key, old_chat_key),
            )
            # Today's spending follows the chat, so a migration does not refill its budget.
            await conn.execute(
                "INSERT INTO usage_daily (day, chat_key, user_id, user_name, turns,"
                " prompt_tokens, completion_tokens, cached_tokens)"
                " SELECT day, ?, user_id, user_name, turns, prompt_tokens, completion_tokens,"
                " cached_tokens FROM usage_daily WHERE chat_key = ? ON CONFLICT"
                " (day, chat_key, user_id) DO UPDATE SET turns = turns + excluded.turns,"
                " prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = completion_tokens + excluded.completion_tokens,"
                " cached_tokens = cached_tokens + excluded.cached_tokens",
                (new_chat_key, old_chat_key),
            )
            await conn.execute("DELETE FROM usage_daily WHERE chat_key = ?", (old_chat_key,))
            await conn.execute(
                "UPDATE clear_audit SET chat_key = ? WHERE chat_key = ?",
                (new_chat_key, old_chat_key),
            )
            await conn.execute(  # the audit trail; a reset names its conversation
                "UPDATE chat_audit SET chat_key = ?, conv_key = CASE WHEN conv_key = '' THEN ''"
                " ELSE ? || substr(conv_key, ?) END WHERE chat_key = ?",
                (new_chat_key, new_chat_key, start, old_chat_key),
            )
            await conn.execute(  # a memory keeps the conversation it was said in
                "UPDATE memories SET chat_key = ?, conv_key = ? || substr(conv_key, ?)"
                " WHERE chat_key = ?",
                (new_chat_key, new_chat_key, start, old_chat_key),
            )
            # The full-text indexes name each row's chat and conversation (scopes.py).
            for statement in (*RESCOPE_MEMORIES, *RESCOPE_TURNS):
                await conn.execute(statement, (new_chat_key,))
        self._windows.forget_chat(old_chat_key)
        self._windows.forget_chat(new_chat_key)
        log.info("chat migrated old=%s new=%s turns=%d", old_chat_key, new_chat_key, moved)
        return moved


async def close_interrupted(conn: aiosqlite.Connection) -> int:
    """Close pending turns of dead owners at once, any other after ``STALE_PENDING_SECONDS``:
    another live process (the console next to the bot) may share the file, and no live turn
    runs that long."""
    rows = await conn.execute_fetchall(
        "SELECT DISTINCT owner FROM turns WHERE status = 'pending' AND owner IS NOT NULL"
    )
    dead = [str(owner) for (owner,) in rows if owners.is_dead(str(owner))]
    gone = f" OR owner IN ({','.join('?' * len(dead))})" if dead else ""
    cursor = await conn.execute(
        "UPDATE turns SET status = 'unanswered', error = 'interrupted', completed_at = ?"
        f" WHERE status = 'pending' AND (created_at < ?{gone})",
        (time.time(), time.time() - STALE_PENDING_SECONDS, *dead),
    )
    if cursor.rowcount:
        log.warning("marked %d interrupted turns unanswered", cursor.rowcount)
    return cursor.rowcount
