"""Turns and the context window, in SQLite.

A turn is one row: the user's text, and once answered the whole answer (assistant messages, tool
calls, tool results) as a JSON array, so every turn write is a single atomic statement and one
trip to aiosqlite's thread. Loading the context window walks the ``(conv_key, id)`` index
backwards in one query, so it costs O(window) however long the history is; recent windows are
kept in memory (:mod:`bot.storage.sqlite.window_cache`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from bot.errors import StoreError
from bot.storage.answers import answer_json, api_messages, turn_messages
from bot.storage.sqlite.connection import Database
from bot.storage.sqlite.window_cache import WindowCache
from bot.storage.values import NO_USAGE, NewTurn, StoredTurn, TurnStatus, Usage

# The newest N turns after the last reset, with the overheard context rows among them (those do
# not count toward N). Walks the (conv_key, id) index backwards: O(window), whatever the size.
WINDOW_SQL = """
WITH after AS (
    SELECT coalesce((SELECT after_turn_id FROM resets WHERE conv_key = ?1), 0) AS id
),
oldest AS (
    SELECT coalesce(
        (SELECT id FROM turns WHERE conv_key = ?2 AND id > (SELECT id FROM after)
            AND status != 'context' ORDER BY id DESC LIMIT 1 OFFSET ?4 - 1),
        (SELECT id FROM after) + 1
    ) AS id
)
SELECT id, user_id, user_name, status, user_text, answer, chat_key FROM turns
WHERE conv_key = ?3 AND id >= (SELECT id FROM oldest) AND id > (SELECT id FROM after)
ORDER BY id DESC
"""

_INSERT_TURN = (
    "INSERT INTO turns (conv_key, chat_key, user_id, user_name, platform_message_id,"
    " user_text, status, created_at, owner) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)"
)


class SQLiteTurns:
    def __init__(self, db: Database, windows: WindowCache, owner: str, cache_windows: bool) -> None:
        self._db, self._windows, self.owner, self.cache_windows = db, windows, owner, cache_windows

    async def begin_turn(self, turn: NewTurn) -> int:
        if turn.overheard:
            return await self._begin_with_overheard(turn)
        async with self._db.writing() as conn:
            row = await conn.execute_insert(_INSERT_TURN, (*_turn_row(turn), self.owner))
        if row is None:
            raise StoreError("the database returned no id for a new turn")
        turn_id = int(row[0])
        user = {"role": "user", "content": turn.text}
        stored = StoredTurn(turn_id, turn.user_id, turn.user_name, TurnStatus.PENDING, (user,))
        self._windows.began(turn.conversation_key, stored)
        return turn_id

    async def _begin_with_overheard(self, turn: NewTurn) -> int:
        """Move the chosen overheard messages in as context rows, then the user's turn."""
        marks = ",".join("?" * len(turn.overheard))
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO turns (conv_key, chat_key, user_id, user_name, platform_message_id,"
                " user_text, status, created_at, completed_at) SELECT conv_key, chat_key, user_id,"
                " user_name, platform_message_id, text, 'context', created_at, created_at"
                f" FROM overheard WHERE conv_key = ? AND id IN ({marks}) ORDER BY id",
                (turn.conversation_key, *turn.overheard),
            )
            # The rest is older than the chosen ones or superseded: the turn answers the chatter.
            await conn.execute(
                "DELETE FROM overheard WHERE conv_key = ? AND id <= ?",
                (turn.conversation_key, max(turn.overheard)),
            )
            row = await conn.execute_insert(_INSERT_TURN, (*_turn_row(turn), self.owner))
        if row is None:
            raise StoreError("the database returned no id for a new turn")
        self._windows.forget(turn.conversation_key)
        return int(row[0])

    async def complete_turn(
        self, turn_id: int, messages: Sequence[Mapping[str, Any]], usage: Usage, model: str
    ) -> None:
        # The whole answer lands in one UPDATE: atomic without a multi-statement transaction.
        # Trigger turns_usage books the tokens in the same statement.
        plain = api_messages(messages)
        answer = answer_json(plain)
        async with self._db.writing() as conn:
            await conn.execute(
                "UPDATE turns SET status = 'answered', answer = ?, model = ?, prompt_tokens = ?,"
                " completion_tokens = ?, cached_tokens = ?, completed_at = ? WHERE id = ?",
                (
                    answer,
                    model,
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    usage.cached_tokens,
                    time.time(),
                    turn_id,
                ),
            )
        self._windows.completed(turn_id, plain)

    async def fail_turn(self, turn_id: int, reason: str, usage: Usage = NO_USAGE) -> None:
        async with self._db.writing() as conn:
            await conn.execute(
                "UPDATE turns SET status = 'unanswered', error = ?, completed_at = ?,"
                " prompt_tokens = ?, completion_tokens = ?, cached_tokens = ?"
                " WHERE id = ? AND status = 'pending'",
                (
                    reason[:500],
                    time.time(),
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    usage.cached_tokens,
                    turn_id,
                ),
            )
        self._windows.failed(turn_id)

    async def mark_undelivered(self, turn_id: int, reason: str) -> bool:
        async with self._db.writing() as conn:
            rows = await conn.execute_fetchall(
                "UPDATE turns SET status = 'undelivered', error = ? WHERE id = ?"
                " AND status = 'answered' RETURNING conv_key",
                (reason[:500], turn_id),
            )
        marked = [str(key) for (key,) in rows]
        for key in marked:
            self._windows.forget(key)
        return bool(marked)

    async def load_window(self, conversation_key: str, max_turns: int) -> list[StoredTurn]:
        epoch = self._windows.epoch
        version = await self._db.external_version() if self.cache_windows else -1
        cached = self._windows.get(conversation_key, max_turns, version)
        if cached is not None:
            return cached
        rows = list(
            await self._db.reader.execute_fetchall(
                WINDOW_SQL, (conversation_key,) * 3 + (max_turns,)
            )
        )
        turns = [
            StoredTurn(
                turn_id=int(turn_id),
                user_id=str(user_id),
                user_name=str(user_name),
                status=TurnStatus(status),
                messages=turn_messages(user_text, answer),
            )
            for turn_id, user_id, user_name, status, user_text, answer, _ in reversed(rows)
        ]
        if rows and self.cache_windows:
            self._windows.put(
                conversation_key,
                str(rows[0][6]),
                turns,
                capacity=max_turns,
                version=version,
                epoch=epoch,
            )
        return list(turns)


def _turn_row(turn: NewTurn) -> tuple[str, str, str, str, str | None, str, float]:
    return (
        turn.conversation_key,
        turn.chat_key,
        turn.user_id,
        turn.user_name,
        turn.platform_message_id,
        turn.text,
        time.time(),
    )
