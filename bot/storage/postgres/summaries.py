"""Compaction's rolling summaries (table ``summaries``), in PostgreSQL."""

from __future__ import annotations

import time

from bot.storage.postgres.part import Part
from bot.storage.postgres.turns import clean_text, in_conversation, stored_turn
from bot.storage.values import StoredTurn, Summary


class PostgresSummaries(Part):
    async def load_summary(self, conversation_key: str) -> Summary | None:
        async with self._db.acquire() as conn:
            row = await conn.fetchrow(
                "SELECT summary, through_turn_id, turns_since FROM summaries WHERE conv_key = $1",
                conversation_key,
            )
        if row is None:
            return None
        return Summary(row["summary"], int(row["through_turn_id"]), int(row["turns_since"]))

    async def count_summary_turn(self, conversation_key: str, chat_key: str) -> int:
        async with self._db.acquire() as conn:
            count = await conn.fetchval(
                "INSERT INTO summaries AS s (conv_key, chat_key, summary, through_turn_id,"
                " turns_since, updated_at) VALUES ($1, $2, '', 0, 1, $3) ON CONFLICT (conv_key)"
                " DO UPDATE SET turns_since = s.turns_since + 1 RETURNING turns_since",
                conversation_key,
                chat_key,
                time.time(),
            )
        return int(count)

    async def restart_summary_count(self, conversation_key: str) -> None:
        async with self._db.acquire() as conn:
            await conn.execute(
                "UPDATE summaries SET turns_since = 0 WHERE conv_key = $1", conversation_key
            )

    async def save_summary(
        self, conversation_key: str, chat_key: str, text: str, through_turn_id: int
    ) -> None:
        async with self._db.acquire() as conn:
            await conn.execute(
                "INSERT INTO summaries (conv_key, chat_key, summary, through_turn_id,"
                " turns_since, updated_at) VALUES ($1, $2, $3, $4, 0, $5) ON CONFLICT (conv_key)"
                " DO UPDATE SET summary = excluded.summary,"
                " through_turn_id = excluded.through_turn_id, turns_since = 0,"
                " updated_at = excluded.updated_at",
                conversation_key,
                chat_key,
                clean_text(text),
                through_turn_id,
                time.time(),
            )

    async def turns_between(
        self, conversation_key: str, after: int, before: int
    ) -> list[StoredTurn]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                "SELECT id, user_id, user_name, status, user_text, answer FROM turns"
                f" WHERE {in_conversation('$2', '$3')} AND status <> 'pending'"
                " ORDER BY conv_key, id",
                conversation_key,
                after,
                before,
            )
        return [stored_turn(row) for row in rows]
