"""Compaction's rolling summaries (table ``summaries``) and, in the same rows, the prompt
windows' marks: :class:`bot.storage.summaries.Summaries`,
:class:`bot.storage.prompt_windows.PromptWindows`."""

from __future__ import annotations

import time
from typing import Any

from bot.storage.answers import turn_messages
from bot.storage.sql.seam import Database, Dialect
from bot.values import StoredTurn, Summary, TurnStatus, WindowMark

BETWEEN_PAGE = 200
LAST_ID = 2**63 - 1
TURN_COLUMNS = "id, user_id, user_name, status, user_text, answer"


def stored_turn(row: Any) -> StoredTurn:
    """A row of :data:`TURN_COLUMNS` as a StoredTurn."""
    turn_id, user_id, user_name, status, user_text, answer = row
    return StoredTurn(
        int(turn_id), str(user_id), str(user_name), TurnStatus(status),
        turn_messages(str(user_text), answer),
    )  # fmt: skip


def between_sql(dialect: Dialect) -> str:
    """One page of ``turns_between``: conversation $1, turns after $2 and before $3."""
    return dialect.conversation_page(TURN_COLUMNS, limit=BETWEEN_PAGE, after="$2", before="$3")


class SummaryRows:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._between = between_sql(db.dialect)

    async def load_summary(self, conversation_key: str) -> Summary | None:
        rows = await self._db.fetch(
            "SELECT summary, through_turn_id, turns_since FROM summaries WHERE conv_key = $1",
            conversation_key,
        )
        return Summary(str(rows[0][0]), int(rows[0][1]), int(rows[0][2])) if rows else None

    async def count_summary_turn(self, conversation_key: str, chat_key: str) -> int:
        rows = await self._db.write(
            "INSERT INTO summaries AS s (conv_key, chat_key, summary, through_turn_id,"
            " turns_since, updated_at) VALUES ($1, $2, '', 0, 1, $3) ON CONFLICT (conv_key)"
            " DO UPDATE SET turns_since = s.turns_since + 1 RETURNING turns_since",
            conversation_key,
            chat_key,
            time.time(),
        )
        return int(rows[0][0])

    async def restart_summary_count(self, conversation_key: str) -> None:
        await self._db.execute(
            "UPDATE summaries SET turns_since = 0 WHERE conv_key = $1", conversation_key
        )

    async def save_summary(
        self, conversation_key: str, chat_key: str, text: str, through_turn_id: int
    ) -> None:
        await self._db.execute(
            "INSERT INTO summaries (conv_key, chat_key, summary, through_turn_id,"
            " turns_since, updated_at) VALUES ($1, $2, $3, $4, 0, $5) ON CONFLICT (conv_key)"
            " DO UPDATE SET summary = excluded.summary,"
            " through_turn_id = excluded.through_turn_id, turns_since = 0,"
            " updated_at = excluded.updated_at",
            conversation_key,
            chat_key,
            self._db.dialect.text(text),
            through_turn_id,
            time.time(),
        )

    async def turns_between(
        self, conversation_key: str, after: int, before: int
    ) -> list[StoredTurn]:
        found: list[StoredTurn] = []
        while True:  # in pages: Dialect.conversation_page
            rows = await self._db.fetch(self._between, conversation_key, after, before)
            found += (stored_turn(row) for row in rows if row[3] != "pending")
            if len(rows) < BETWEEN_PAGE:
                return found
            after = int(rows[-1][0])

    async def load_window_mark(self, conversation_key: str) -> WindowMark | None:
        rows = await self._db.fetch(
            "SELECT window_start, summary_shown FROM summaries WHERE conv_key = $1",
            conversation_key,
        )
        if not rows or rows[0][0] is None:
            return None
        return WindowMark(int(rows[0][0]), str(rows[0][1]))

    async def save_window_mark(
        self, conversation_key: str, chat_key: str, mark: WindowMark
    ) -> None:
        await self._db.execute(
            "INSERT INTO summaries (conv_key, chat_key, summary, through_turn_id,"
            " turns_since, updated_at, window_start, summary_shown)"
            " VALUES ($1, $2, '', 0, 0, $3, $4, $5) ON CONFLICT (conv_key)"
            " DO UPDATE SET window_start = excluded.window_start,"
            " summary_shown = excluded.summary_shown, updated_at = excluded.updated_at",
            conversation_key,
            chat_key,
            time.time(),
            mark.start_turn_id,
            self._db.dialect.text(mark.summary),
        )
