"""Resets, clears and their audit, history statistics and export, chat settings:
:class:`bot.storage.resets.Resets`, :class:`bot.storage.turns.TurnArchive`,
:class:`bot.storage.chat_settings.ChatSettingsStore`."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator
from typing import Any

from bot.context import Scope
from bot.storage.answers import turn_messages
from bot.storage.sql.seam import Database, Dialect, Windows, fetchval
from bot.storage.sql.summaries import LAST_ID
from bot.values import ChatPreferences, ClearResult, HistoryStats

log = logging.getLogger(__name__)

TURN_ORDER_LOCK = "turn-order"  # Tx.lock: see bot.storage.postgres.turns
EXPORT_PAGE = 500  # turns per query: an export never holds a connection while it is consumed
_EXPORT_COLUMNS = (
    "id, user_id, user_name, status, user_text, answer, created_at, completed_at, chat_key"
)


def export_sql(dialect: Dialect) -> str:
    """One page of an export: conversation $1, turns after $2 and before $3."""
    return dialect.conversation_page(_EXPORT_COLUMNS, limit=EXPORT_PAGE, after="$2", before="$3")


class History:
    def __init__(self, db: Database, windows: Windows) -> None:
        self._db, self._windows = db, windows
        self._export = export_sql(db.dialect)

    # -- resets and clears -----------------------------------------------------------------

    async def reset(
        self, conversation_key: str, chat_key: str, by_user: str, by_name: str = ""
    ) -> None:
        now = time.time()
        async with self._db.transaction() as tx:
            # No turn is between getting its id and committing while we read the newest one
            # (bot.storage.postgres.turns): the cut is exactly what is stored now.
            await tx.lock(TURN_ORDER_LOCK)
            # Chatter overheard before the reset, and the summary, are forgotten with the rest.
            await tx.execute("DELETE FROM overheard WHERE conv_key = $1", conversation_key)
            await tx.execute("DELETE FROM summaries WHERE conv_key = $1", conversation_key)
            await tx.execute(
                "INSERT INTO resets (conv_key, chat_key, after_turn_id, by_user, at)"
                " VALUES ($1, $2, (SELECT coalesce(max(id), 0) FROM turns), $3, $4)"
                " ON CONFLICT (conv_key) DO UPDATE SET after_turn_id = excluded.after_turn_id,"
                " by_user = excluded.by_user, at = excluded.at",
                conversation_key, chat_key, by_user, now,
            )  # fmt: skip
            await tx.execute(  # the audit trail keeps every reset (bot.storage.audit)
                "INSERT INTO chat_audit (chat_key, conv_key, actor_id, actor_name, action, at)"
                " VALUES ($1, $2, $3, $4, 'reset', $5)",
                chat_key, conversation_key, by_user, self._db.dialect.text(by_name), now,
            )  # fmt: skip
        self._windows.forget(conversation_key)

    async def reset_point(self, conversation_key: str) -> int:
        found = await fetchval(
            self._db, "SELECT after_turn_id FROM resets WHERE conv_key = $1", conversation_key
        )
        return int(found or 0)

    async def clear_chat(self, chat_key: str, actor_id: str, actor_name: str) -> ClearResult:
        async with self._db.transaction() as tx:
            # Counted from what the DELETE itself removed: a turn committed by another replica
            # between a count and the delete can neither be missed nor counted twice.
            gone = await tx.fetch(
                "DELETE FROM turns WHERE chat_key = $1"
                f" RETURNING 1 + coalesce({self._db.dialect.json_length('answer')}, 0)",
                chat_key,
            )
            turns, messages = len(gone), sum(int(n) for (n,) in gone)
            # Search-index rows and vectors go with them (trigger or cascade).
            for table in ("resets", "overheard", "deliveries", "memories", "summaries"):
                await tx.execute(f"DELETE FROM {table} WHERE chat_key = $1", chat_key)
            await tx.execute(
                "INSERT INTO clear_audit (chat_key, actor_id, actor_name, at, deleted_turns,"
                " deleted_messages) VALUES ($1, $2, $3, $4, $5, $6)",
                chat_key, actor_id, self._db.dialect.text(actor_name), time.time(), turns,
                messages,
            )  # fmt: skip
        self._windows.forget_chat(chat_key)
        log.info("chat cleared chat=%s actor=%s turns=%d", chat_key, actor_id, turns)
        return ClearResult(turns=turns, messages=messages)

    async def clear_audit(self, chat_key: str) -> list[dict[str, Any]]:
        rows = await self._db.fetch(
            "SELECT actor_id, actor_name, at, deleted_turns, deleted_messages FROM clear_audit"
            " WHERE chat_key = $1 ORDER BY id",
            chat_key,
        )
        keys = ("actor_id", "actor_name", "at", "deleted_turns", "deleted_messages")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    # -- reading the archive ---------------------------------------------------------------

    async def stats(self, conversation_key: str) -> HistoryStats:
        ((total, in_context, unanswered, prompt, completion, undelivered),) = await self._db.fetch(
            "SELECT count(*), count(*) FILTER (WHERE id > coalesce("
            "   (SELECT after_turn_id FROM resets WHERE conv_key = $1), 0)),"
            " count(*) FILTER (WHERE status = 'unanswered'), coalesce(sum(prompt_tokens), 0),"
            " coalesce(sum(completion_tokens), 0), count(*) FILTER (WHERE status = 'undelivered')"
            " FROM turns WHERE conv_key = $1 AND status != 'context'",
            conversation_key,
        )
        return HistoryStats(
            turns_in_context=int(in_context),
            turns_stored=int(total),
            unanswered=int(unanswered),
            prompt_tokens=int(prompt),
            completion_tokens=int(completion),
            undelivered=int(undelivered),
        )

    async def export(self, conversation_key: str) -> AsyncGenerator[dict[str, Any], None]:
        after = 0
        while True:
            rows = await self._db.fetch(self._export, conversation_key, after, LAST_ID)
            for row in rows:
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
            if len(rows) < EXPORT_PAGE:
                return
            after = int(rows[-1][0])

    async def conversations(self) -> list[tuple[str, int]]:
        """Every conversation key with its turn count (for ``history export`` discovery)."""
        rows = await self._db.fetch(
            "SELECT conv_key, count(*) FROM turns GROUP BY conv_key"
            f" ORDER BY conv_key{self._db.dialect.bytewise}"
        )
        return [(str(k), int(n)) for k, n in rows]

    async def turn_exists(self, turn_id: int) -> bool:
        return bool(await self._db.fetch("SELECT 1 FROM turns WHERE id = $1", turn_id))

    # -- chat settings ---------------------------------------------------------------------

    async def load_preferences(self) -> dict[str, ChatPreferences]:
        rows = await self._db.fetch(
            "SELECT chat_key, scope, system_prompt, ambient FROM chat_preferences"
        )
        return {
            str(key): ChatPreferences(
                scope=Scope(scope) if scope else None,
                system_prompt=prompt,
                ambient=None if ambient is None else bool(ambient),
            )
            for key, scope, prompt, ambient in rows
        }

    async def save_preferences(self, chat_key: str, prefs: ChatPreferences) -> None:
        prompt, ambient = prefs.system_prompt, prefs.ambient
        await self._db.execute(  # one upsert: atomic on its own
            "INSERT INTO chat_preferences (chat_key, scope, system_prompt, ambient, updated_at)"
            " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (chat_key) DO UPDATE SET"
            " scope = excluded.scope, system_prompt = excluded.system_prompt,"
            " ambient = excluded.ambient, updated_at = excluded.updated_at",
            chat_key,
            prefs.scope.value if prefs.scope else None,
            None if prompt is None else self._db.dialect.text(prompt),
            None if ambient is None else int(ambient),
            time.time(),
        )
