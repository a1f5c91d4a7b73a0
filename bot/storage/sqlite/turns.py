"""Turns and the context window, in SQLite.

A turn is one row: the user's text, and once answered the whole answer (assistant messages, tool
calls, tool results) as a JSON array, so every turn write is a single atomic statement and one
trip to aiosqlite's thread. Loading the context window walks the ``(conv_key, id)`` index
backwards in one query, so it costs O(window) however long the history is; recent windows are
kept in memory (:mod:`bot.storage.sqlite.window_cache`).
"""

from __future__ import annotations

from bot.storage.answers import turn_messages
from bot.storage.sql.turns import INSERT_TURN, TurnRows, turn_row
from bot.storage.sqlite.connection import Database, SQLiteSeam
from bot.storage.sqlite.row_cache import VersionProbe
from bot.storage.sqlite.window_cache import WindowCache
from bot.values import NewTurn, StoredTurn, TurnStatus

# The newest N turns after the last reset, with the overheard context rows among them (those do
# not count toward N). Walks the (conv_key, id) index backwards: O(window), whatever the size.
WINDOW_SQL = """
WITH after AS (
    SELECT coalesce((SELECT after_turn_id FROM resets WHERE conv_key = $1), 0) AS id
),
oldest AS (
    SELECT coalesce(
        (SELECT id FROM turns WHERE conv_key = $1 AND id > (SELECT id FROM after)
            AND status != 'context' ORDER BY id DESC LIMIT 1 OFFSET $2 - 1),
        (SELECT id FROM after) + 1
    ) AS id
)
SELECT id, user_id, user_name, status, user_text, answer, chat_key FROM turns
WHERE conv_key = $1 AND id >= (SELECT id FROM oldest) AND id > (SELECT id FROM after)
ORDER BY id DESC
"""


class SQLiteTurns(TurnRows):
    """:class:`TurnRows` plus the window cache: a new turn joins its cached window, and a
    window is read from the cache while no other process has written."""

    def __init__(
        self, db: Database, windows: WindowCache, owner: str, probe: VersionProbe | None
    ) -> None:
        """``probe`` None: no window is kept in memory."""
        super().__init__(SQLiteSeam(db), windows, owner)
        self._windows, self._probe = windows, probe
        self.cache_windows = probe is not None

    async def begin_turn(self, turn: NewTurn) -> int:
        if turn.overheard or turn.burst:
            return await self.begin_with_overheard(turn)
        rows = await self.db.write(INSERT_TURN, *turn_row(turn, self.db), self.owner)
        turn_id = self.new_id(rows)
        user = {"role": "user", "content": turn.text}
        stored = StoredTurn(turn_id, turn.user_id, turn.user_name, TurnStatus.PENDING, (user,))
        self._windows.began(turn.conversation_key, stored)
        return turn_id

    async def load_window(self, conversation_key: str, max_turns: int) -> list[StoredTurn]:
        epoch = self._windows.epoch
        version = await self._probe.version() if self._probe is not None else -1
        cached = self._windows.get(conversation_key, max_turns, version)
        if cached is not None:
            return cached
        rows = await self.db.fetch(WINDOW_SQL, conversation_key, max_turns)
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
        if rows and self._probe is not None:
            self._windows.put(
                conversation_key,
                str(rows[0][6]),
                turns,
                capacity=max_turns,
                version=version,
                epoch=epoch,
            )
        return list(turns)
