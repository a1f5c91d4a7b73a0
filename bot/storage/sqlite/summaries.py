"""Compaction's rolling summaries (table ``summaries``), in SQLite."""

from __future__ import annotations

import time

from bot.storage.answers import turn_messages
from bot.storage.sqlite.part import Part
from bot.storage.values import StoredTurn, Summary, TurnStatus, WindowMark


class SQLiteSummaries(Part):
    """Summaries and, in the same rows, the prompt windows' marks (bot.storage.prompt_windows)."""

    async def load_summary(self, conversation_key: str) -> Summary | None:
        rows = await self._db.reader.execute_fetchall(
            "SELECT summary, through_turn_id, turns_since FROM summaries WHERE conv_key = ?",
            (conversation_key,),
        )
        row = next(iter(rows), None)
        return None if row is None else Summary(str(row[0]), int(row[1]), int(row[2]))

    async def count_summary_turn(self, conversation_key: str, chat_key: str) -> int:
        async with self._db.writing() as conn:
            rows = await conn.execute_fetchall(
                "INSERT INTO summaries (conv_key, chat_key, summary, through_turn_id,"
                " turns_since, updated_at) VALUES (?, ?, '', 0, 1, ?) ON CONFLICT (conv_key)"
                " DO UPDATE SET turns_since = turns_since + 1 RETURNING turns_since",
                (conversation_key, chat_key, time.time()),
            )
        return int(next(iter(rows))[0])

    async def restart_summary_count(self, conversation_key: str) -> None:
        async with self._db.writing() as conn:
            await conn.execute(
                "UPDATE summaries SET turns_since = 0 WHERE conv_key = ?", (conversation_key,)
            )

    async def save_summary(
        self, conversation_key: str, chat_key: str, text: str, through_turn_id: int
    ) -> None:
        async with self._db.writing() as conn:
            await conn.execute(
                "INSERT INTO summaries (conv_key, chat_key, summary, through_turn_id,"
                " turns_since, updated_at) VALUES (?, ?, ?, ?, 0, ?) ON CONFLICT (conv_key)"
                " DO UPDATE SET summary = excluded.summary,"
                " through_turn_id = excluded.through_turn_id, turns_since = 0,"
                " updated_at = excluded.updated_at",
                (conversation_key, chat_key, text, through_turn_id, time.time()),
            )

    async def turns_between(
        self, conversation_key: str, after: int, before: int
    ) -> list[StoredTurn]:
        rows = await self._db.reader.execute_fetchall(
            "SELECT id, user_id, user_name, status, user_text, answer FROM turns"
            " WHERE conv_key = ? AND id > ? AND id < ? AND status != 'pending' ORDER BY id",
            (conversation_key, after, before),
        )
        return [
            StoredTurn(
                int(turn_id),
                str(user_id),
                str(user_name),
                TurnStatus(status),
                turn_messages(user_text, answer),
            )
            for turn_id, user_id, user_name, status, user_text, answer in rows
        ]

    async def load_window_mark(self, conversation_key: str) -> WindowMark | None:
        rows = await self._db.reader.execute_fetchall(
            "SELECT window_start, summary_shown FROM summaries WHERE conv_key = ?",
            (conversation_key,),
        )
        row = next(iter(rows), None)
        if row is None or row[0] is None:
            return None
        return WindowMark(int(row[0]), str(row[1]))

    async def save_window_mark(
        self, conversation_key: str, chat_key: str, mark: WindowMark
    ) -> None:
        async with self._db.writing() as conn:
            await conn.execute(
                "INSERT INTO summaries (conv_key, chat_key, summary, through_turn_id,"
                " turns_since, updated_at, window_start, summary_shown)"
                " VALUES (?, ?, '', 0, 0, ?, ?, ?) ON CONFLICT (conv_key)"
                " DO UPDATE SET window_start = excluded.window_start,"
                " summary_shown = excluded.summary_shown, updated_at = excluded.updated_at",
                (conversation_key, chat_key, time.time(), mark.start_turn_id, mark.summary),
            )
