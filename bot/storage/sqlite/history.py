"""Resets, clears and their audit, history statistics and export, chat settings, in SQLite."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator
from typing import Any

from bot.context import Scope
from bot.storage.answers import turn_messages
from bot.storage.sqlite.part import Part
from bot.storage.values import ChatPreferences, ClearResult, HistoryStats

log = logging.getLogger(__name__)


class SQLiteHistory(Part):
    # -- resets and clears -----------------------------------------------------------------

    async def reset(
        self, conversation_key: str, chat_key: str, by_user: str, by_name: str = ""
    ) -> None:
        now = time.time()
        async with self._db.transaction() as conn:
            # Chatter overheard before the reset, and the summary, are forgotten with the rest.
            await conn.execute("DELETE FROM overheard WHERE conv_key = ?", (conversation_key,))
            await conn.execute("DELETE FROM summaries WHERE conv_key = ?", (conversation_key,))
            await conn.execute(
                "INSERT INTO resets (conv_key, chat_key, after_turn_id, by_user, at)"
                " VALUES (?, ?, (SELECT coalesce(max(id), 0) FROM turns), ?, ?)"
                " ON CONFLICT (conv_key) DO UPDATE SET after_turn_id = excluded.after_turn_id,"
                " by_user = excluded.by_user, at = excluded.at",
                (conversation_key, chat_key, by_user, now),
            )
            await conn.execute(  # the audit trail keeps every reset (bot.storage.audit)
                "INSERT INTO chat_audit (chat_key, conv_key, actor_id, actor_name, action, at)"
                " VALUES (?, ?, ?, ?, 'reset', ?)",
                (chat_key, conversation_key, by_user, by_name, now),
            )
        self._windows.forget(conversation_key)

    async def reset_point(self, conversation_key: str) -> int:
        rows = await self._db.reader.execute_fetchall(
            "SELECT after_turn_id FROM resets WHERE conv_key = ?", (conversation_key,)
        )
        row = next(iter(rows), None)
        return int(row[0]) if row else 0

    async def clear_chat(self, chat_key: str, actor_id: str, actor_name: str) -> ClearResult:
        async with self._db.transaction() as conn:
            rows = await conn.execute_fetchall(
                "SELECT count(*), coalesce(sum(1 + coalesce(json_array_length(answer), 0)), 0)"
                " FROM turns WHERE chat_key = ?",
                (chat_key,),
            )
            turns, messages = (int(v) for v in next(iter(rows)))
            # Triggers drop the search-index rows (and vectors) of what goes here.
            await conn.execute("DELETE FROM turns WHERE chat_key = ?", (chat_key,))
            await conn.execute("DELETE FROM resets WHERE chat_key = ?", (chat_key,))
            await conn.execute("DELETE FROM overheard WHERE chat_key = ?", (chat_key,))
            await conn.execute("DELETE FROM deliveries WHERE chat_key = ?", (chat_key,))
            await conn.execute("DELETE FROM memories WHERE chat_key = ?", (chat_key,))
            await conn.execute("DELETE FROM summaries WHERE chat_key = ?", (chat_key,))
            await conn.execute(
                "INSERT INTO clear_audit (chat_key, actor_id, actor_name, at, deleted_turns,"
                " deleted_messages) VALUES (?, ?, ?, ?, ?, ?)",
                (chat_key, actor_id, actor_name, time.time(), turns, messages),
            )
        self._windows.forget_chat(chat_key)
        log.info("chat cleared chat=%s actor=%s turns=%d", chat_key, actor_id, turns)
        return ClearResult(turns=turns, messages=messages)

    async def clear_audit(self, chat_key: str) -> list[dict[str, Any]]:
        rows = await self._db.reader.execute_fetchall(
            "SELECT actor_id, actor_name, at, deleted_turns, deleted_messages FROM clear_audit"
            " WHERE chat_key = ? ORDER BY id",
            (chat_key,),
        )
        keys = ("actor_id", "actor_name", "at", "deleted_turns", "deleted_messages")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    # -- reading the archive ---------------------------------------------------------------

    async def stats(self, conversation_key: str) -> HistoryStats:
        rows = await self._db.reader.execute_fetchall(
            "SELECT count(*), coalesce(sum(id > coalesce("
            "   (SELECT after_turn_id FROM resets WHERE conv_key = ?), 0)), 0),"
            " coalesce(sum(status = 'unanswered'), 0), coalesce(sum(prompt_tokens), 0),"
            " coalesce(sum(completion_tokens), 0), coalesce(sum(status = 'undelivered'), 0)"
            " FROM turns WHERE conv_key = ? AND status != 'context'",
            (conversation_key, conversation_key),
        )
        total, in_context, unanswered, prompt, completion, undelivered = next(iter(rows))
        return HistoryStats(
            turns_in_context=int(in_context),
            turns_stored=int(total),
            unanswered=int(unanswered),
            prompt_tokens=int(prompt),
            completion_tokens=int(completion),
            undelivered=int(undelivered),
        )

    async def export(self, conversation_key: str) -> AsyncGenerator[dict[str, Any], None]:
        async with self._db.reader.execute(
            "SELECT id, user_id, user_name, status, user_text, answer, created_at, completed_at,"
            " chat_key FROM turns WHERE conv_key = ? ORDER BY id",
            (conversation_key,),
        ) as cursor:
            async for row in cursor:
                turn_id, user_id, user_name, status, user_text, answer, created, completed = row[:8]
                for seq, message in enumerate(turn_messages(user_text, answer)):
                    record: dict[str, Any] = {
                        "chat": row[8],
                        "turn": turn_id,
                        "seq": seq,
                        **message,
                        "status": status,
                        "created_at": created if seq == 0 else completed,
                    }
                    if seq == 0:
                        record["user_id"] = user_id
                        record["user_name"] = user_name
                    yield record

    async def conversations(self) -> list[tuple[str, int]]:
        """Every conversation key with its turn count (for ``history export`` discovery)."""
        rows = await self._db.reader.execute_fetchall(
            "SELECT conv_key, count(*) FROM turns GROUP BY conv_key ORDER BY conv_key"
        )
        return [(str(k), int(n)) for k, n in rows]

    async def turn_exists(self, turn_id: int) -> bool:
        rows = await self._db.reader.execute_fetchall(
            "SELECT 1 FROM turns WHERE id = ?", (turn_id,)
        )
        return bool(list(rows))

    # -- chat settings ---------------------------------------------------------------------

    async def load_preferences(self) -> dict[str, ChatPreferences]:
        rows = await self._db.reader.execute_fetchall(
            "SELECT chat_key, scope, system_prompt FROM chat_preferences"
        )
        return {
            str(key): ChatPreferences(scope=Scope(scope) if scope else None, system_prompt=prompt)
            for key, scope, prompt in rows
        }

    async def save_preferences(self, chat_key: str, prefs: ChatPreferences) -> None:
        async with self._db.writing() as conn:  # one upsert: atomic on its own
            await conn.execute(
                "INSERT INTO chat_preferences (chat_key, scope, system_prompt, updated_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (chat_key) DO UPDATE SET scope = excluded.scope,"
                " system_prompt = excluded.system_prompt, updated_at = excluded.updated_at",
                (
                    chat_key,
                    prefs.scope.value if prefs.scope else None,
                    prefs.system_prompt,
                    time.time(),
                ),
            )
