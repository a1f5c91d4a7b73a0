"""Resets, clears and their audit, history statistics and export, chat settings, in
PostgreSQL."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator
from typing import Any

from bot.context import Scope
from bot.storage.answers import turn_messages
from bot.storage.postgres.part import Part
from bot.storage.postgres.turns import (
    LAST_ID,
    TURN_ORDER_LOCK,
    clean_text,
    conversation_page,
)
from bot.storage.values import ChatPreferences, ClearResult, HistoryStats

log = logging.getLogger(__name__)

EXPORT_PAGE = 500  # turns per query: an export never holds a connection while it is consumed
EXPORT_SQL = conversation_page(
    "id, user_id, user_name, status, user_text, answer, created_at, completed_at, chat_key",
    limit=EXPORT_PAGE,
)


class PostgresHistory(Part):
    # -- resets and clears -----------------------------------------------------------------

    async def reset(
        self, conversation_key: str, chat_key: str, by_user: str, by_name: str = ""
    ) -> None:
        now = time.time()
        async with self._db.transaction() as conn:
            # No turn is between getting its id and committing while we read the newest one
            # (bot.storage.postgres.turns): the cut is exactly what is stored now.
            await conn.execute(
                "SELECT pg_advisory_xact_lock($1)", self._db.lock_key(TURN_ORDER_LOCK)
            )
            # Chatter overheard before the reset, and the summary, are forgotten with the rest.
            await conn.execute("DELETE FROM overheard WHERE conv_key = $1", conversation_key)
            await conn.execute("DELETE FROM summaries WHERE conv_key = $1", conversation_key)
            await conn.execute(
                "INSERT INTO resets (conv_key, chat_key, after_turn_id, by_user, at)"
                " VALUES ($1, $2, (SELECT coalesce(max(id), 0) FROM turns), $3, $4)"
                " ON CONFLICT (conv_key) DO UPDATE SET after_turn_id = excluded.after_turn_id,"
                " by_user = excluded.by_user, at = excluded.at",
                conversation_key,
                chat_key,
                by_user,
                now,
            )
            await conn.execute(  # the audit trail keeps every reset (bot.storage.audit)
                "INSERT INTO chat_audit (chat_key, conv_key, actor_id, actor_name, action, at)"
                " VALUES ($1, $2, $3, $4, 'reset', $5)",
                chat_key,
                conversation_key,
                by_user,
                clean_text(by_name),
                now,
            )

    async def reset_point(self, conversation_key: str) -> int:
        async with self._db.acquire() as conn:
            found = await conn.fetchval(
                "SELECT after_turn_id FROM resets WHERE conv_key = $1", conversation_key
            )
        return int(found or 0)

    async def clear_chat(self, chat_key: str, actor_id: str, actor_name: str) -> ClearResult:
        async with self._db.transaction() as conn:
            # Counted from what the DELETE itself removed: a turn committed by another replica
            # between a count and the delete can neither be missed nor counted twice.
            row = await conn.fetchrow(
                "WITH gone AS (DELETE FROM turns WHERE chat_key = $1 RETURNING answer)"
                " SELECT count(*) AS turns, coalesce(sum(1 + coalesce("
                "   json_array_length(answer::json), 0)), 0) AS messages FROM gone",
                chat_key,
            )
            assert row is not None, "an aggregate returns one row"
            turns, messages = int(row["turns"]), int(row["messages"])
            await conn.execute("DELETE FROM resets WHERE chat_key = $1", chat_key)
            await conn.execute("DELETE FROM overheard WHERE chat_key = $1", chat_key)
            await conn.execute("DELETE FROM deliveries WHERE chat_key = $1", chat_key)
            # Their vectors go by ON DELETE CASCADE, search columns with the rows.
            await conn.execute("DELETE FROM memories WHERE chat_key = $1", chat_key)
            await conn.execute("DELETE FROM summaries WHERE chat_key = $1", chat_key)
            await conn.execute(
                "INSERT INTO clear_audit (chat_key, actor_id, actor_name, at, deleted_turns,"
                " deleted_messages) VALUES ($1, $2, $3, $4, $5, $6)",
                chat_key,
                actor_id,
                clean_text(actor_name),
                time.time(),
                turns,
                messages,
            )
        log.info("chat cleared chat=%s actor=%s turns=%d", chat_key, actor_id, turns)
        return ClearResult(turns=turns, messages=messages)

    async def clear_audit(self, chat_key: str) -> list[dict[str, Any]]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                "SELECT actor_id, actor_name, at, deleted_turns, deleted_messages"
                " FROM clear_audit WHERE chat_key = $1 ORDER BY id",
                chat_key,
            )
        return [dict(row.items()) for row in rows]

    # -- reading the archive ---------------------------------------------------------------

    async def stats(self, conversation_key: str) -> HistoryStats:
        async with self._db.acquire() as conn:
            row = await conn.fetchrow(
                "SELECT count(*) AS total,"
                " count(*) FILTER (WHERE id > coalesce("
                "   (SELECT after_turn_id FROM resets WHERE conv_key = $1), 0)) AS in_context,"
                " count(*) FILTER (WHERE status = 'unanswered') AS unanswered,"
                " coalesce(sum(prompt_tokens), 0) AS prompt,"
                " coalesce(sum(completion_tokens), 0) AS completion,"
                " count(*) FILTER (WHERE status = 'undelivered') AS undelivered"
                " FROM turns WHERE conv_key = $1 AND status <> 'context'",
                conversation_key,
            )
        assert row is not None, "an aggregate returns one row"
        return HistoryStats(
            turns_in_context=int(row["in_context"]),
            turns_stored=int(row["total"]),
            unanswered=int(row["unanswered"]),
            prompt_tokens=int(row["prompt"]),
            completion_tokens=int(row["completion"]),
            undelivered=int(row["undelivered"]),
        )

    async def export(self, conversation_key: str) -> AsyncGenerator[dict[str, Any], None]:
        after = 0
        while True:
            async with self._db.acquire() as conn:
                rows = await conn.fetch(EXPORT_SQL, conversation_key, after, LAST_ID)
            for row in rows:
                for seq, message in enumerate(turn_messages(row["user_text"], row["answer"])):
                    record: dict[str, Any] = {
                        "chat": row["chat_key"],
                        "turn": row["id"],
                        "seq": seq,
                        **message,
                        "status": row["status"],
                        "created_at": row["created_at"] if seq == 0 else row["completed_at"],
                    }
                    if seq == 0:
                        record["user_id"] = row["user_id"]
                        record["user_name"] = row["user_name"]
                    yield record
            if len(rows) < EXPORT_PAGE:
                return
            after = int(rows[-1]["id"])

    async def conversations(self) -> list[tuple[str, int]]:
        """Every conversation key with its turn count (for ``history export`` discovery)."""
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                "SELECT conv_key, count(*) AS n FROM turns GROUP BY conv_key"
                ' ORDER BY conv_key COLLATE "C"'
            )
        return [(row["conv_key"], int(row["n"])) for row in rows]

    async def turn_exists(self, turn_id: int) -> bool:
        async with self._db.acquire() as conn:
            found = await conn.fetchval("SELECT 1 FROM turns WHERE id = $1", turn_id)
        return found is not None

    # -- chat settings ---------------------------------------------------------------------

    async def load_preferences(self) -> dict[str, ChatPreferences]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch("SELECT chat_key, scope, system_prompt FROM chat_preferences")
        return {
            row["chat_key"]: ChatPreferences(
                scope=Scope(row["scope"]) if row["scope"] else None,
                system_prompt=row["system_prompt"],
            )
            for row in rows
        }

    async def save_preferences(self, chat_key: str, prefs: ChatPreferences) -> None:
        async with self._db.acquire() as conn:  # one upsert: atomic on its own
            await conn.execute(
                "INSERT INTO chat_preferences (chat_key, scope, system_prompt, updated_at)"
                " VALUES ($1, $2, $3, $4) ON CONFLICT (chat_key) DO UPDATE SET"
                " scope = excluded.scope, system_prompt = excluded.system_prompt,"
                " updated_at = excluded.updated_at",
                chat_key,
                prefs.scope.value if prefs.scope else None,
                None if prefs.system_prompt is None else clean_text(prefs.system_prompt),
                time.time(),
            )
