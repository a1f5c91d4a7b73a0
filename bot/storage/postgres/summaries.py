"""Compaction's rolling summaries (table ``summaries``), in PostgreSQL."""

from __future__ import annotations

import time

from bot.storage.postgres.part import Part
from bot.storage.postgres.turns import clean_text, conversation_page, stored_turn
from bot.storage.values import StoredTurn, Summary, WindowMark

BETWEEN_PAGE = 200
BETWEEN_SQL = conversation_page(
    "id, user_id, user_name, status, user_text, answer", limit=BETWEEN_PAGE
)


class PostgresSummaries(Part):
    """Summaries and, in the same rows, the prompt windows' marks (bot.storage.prompt_windows)."""

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
        found: list[StoredTurn] = []
        async with self._db.acquire() as conn:
            while True:  # pages: see bot.storage.postgres.turns
                rows = await conn.fetch(BETWEEN_SQL, conversation_key, after, before)
                found += (stored_turn(row) for row in rows if row["status"] != "pending")
                if len(rows) < BETWEEN_PAGE:
                    return found
                after = int(rows[-1]["id"])

    async def load_window_mark(self, conversation_key: str) -> WindowMark | None:
        async with self._db.acquire() as conn:
            row = await conn.fetchrow(
                "SELECT window_start, summary_shown FROM summaries WHERE conv_key = $1",
                conversation_key,
            )
        if row is None or row["window_start"] is None:
            return None
        return WindowMark(int(row["window_start"]), row["summary_shown"])

    async def save_window_mark(
        self, conversation_key: str, chat_key: str, mark: WindowMark
    ) -> None:
        async with self._db.acquire() as conn:
            await conn.execute(
                "INSERT INTO summaries (conv_key, chat_key, summary, through_turn_id,"
                " turns_since, updated_at, window_start, summary_shown)"
                " VALUES ($1, $2, '', 0, 0, $3, $4, $5) ON CONFLICT (conv_key)"
                " DO UPDATE SET window_start = excluded.window_start,"
                " summary_shown = excluded.summary_shown, updated_at = excluded.updated_at",
                conversation_key,
                chat_key,
                time.time(),
                mark.start_turn_id,
                clean_text(mark.summary),
            )
