"""The chat directory in SQLite (:class:`bot.storage.directory.ChatDirectory`).

``chats`` holds what adapters noted; the list itself comes from ``turns``, grouped by chat over
the covering index ``turns_by_chat_status_time (chat_key, status, created_at)`` (migration 18):
one pass over the index, never the rows. History pages walk ``turns_by_chat`` (SQLite keeps
the row id in every index entry, so it is ordered by ``(chat_key, id)``).
"""

from __future__ import annotations

import time

from bot.storage.answers import final_text
from bot.storage.directory import ChatEntry, ChatSummary, HistoryItem, summary_of
from bot.storage.sqlite.part import Part
from bot.storage.values import TurnStatus

# {where}: filters the turns (one chat) or nothing; the outer WHERE matches the query.
_CHATS_SQL = """
WITH active AS (
    SELECT chat_key, sum(status != 'context') AS turns, max(created_at) AS last
    FROM turns {where} GROUP BY chat_key
)
SELECT a.chat_key, c.chat_type, c.title, a.turns, a.last
FROM active AS a LEFT JOIN chats AS c ON c.chat_key = a.chat_key
WHERE ? = '' OR instr(unicode_lower(coalesce(c.title, '')), ?) > 0
    OR instr(unicode_lower(a.chat_key), ?) > 0
ORDER BY a.last DESC, a.chat_key
LIMIT ? OFFSET ?
"""


class SQLiteDirectory(Part):
    async def note_chat(self, entry: ChatEntry) -> None:
        async with self._db.writing() as conn:  # one upsert: atomic on its own
            await conn.execute(
                "INSERT INTO chats (platform, chat_id, chat_key, chat_type, title, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (platform, chat_id) DO UPDATE SET"
                " chat_type = excluded.chat_type, title = excluded.title,"
                " updated_at = excluded.updated_at",
                (
                    entry.platform,
                    entry.chat_id,
                    f"{entry.platform}:{entry.chat_id}",
                    entry.chat_type,
                    entry.title,
                    time.time(),
                ),
            )

    async def list_chats(
        self, query: str = "", limit: int = 50, offset: int = 0
    ) -> list[ChatSummary]:
        return await self._chats("", (), query, limit, offset)

    async def chat_summary(self, chat_key: str) -> ChatSummary | None:
        found = await self._chats("WHERE chat_key = ?", (chat_key,), "", 1, 0)
        return found[0] if found else None

    async def chat_conversations(self, chat_key: str) -> list[str]:
        rows = await self._db.reader.execute_fetchall(
            "SELECT conv_key FROM turns WHERE chat_key = ?"
            " UNION SELECT conv_key FROM overheard WHERE chat_key = ? ORDER BY 1",
            (chat_key, chat_key),
        )
        return [str(key) for (key,) in rows]

    async def history_page(
        self, chat_key: str, before: int | None = None, limit: int = 50
    ) -> list[HistoryItem]:
        rows = await self._db.reader.execute_fetchall(
            "SELECT id, conv_key, user_id, user_name, user_text, answer, status, created_at"
            " FROM turns WHERE chat_key = ? AND id < ? AND status != 'context'"
            " ORDER BY id DESC LIMIT ?",
            (chat_key, before if before is not None else 2**63 - 1, max(limit, 0)),
        )
        return [
            HistoryItem(
                turn_id=int(turn_id),
                conversation_key=str(conv),
                user_id=str(user),
                user_name=str(name),
                text=str(text),
                answer=final_text(answer),
                status=TurnStatus(status),
                created_at=float(at),
            )
            for turn_id, conv, user, name, text, answer, status, at in rows
        ]

    async def _chats(
        self, where: str, args: tuple[object, ...], query: str, limit: int, offset: int
    ) -> list[ChatSummary]:
        needle = query.lower()
        rows = await self._db.reader.execute_fetchall(
            _CHATS_SQL.format(where=where),
            (*args, needle, needle, needle, max(limit, 0), max(offset, 0)),
        )
        return [summary_of(*row) for row in rows]
