"""The chat directory in PostgreSQL (:class:`bot.storage.directory.ChatDirectory`).

``chats`` holds what adapters noted; the list itself comes from ``turns``, grouped by chat over
the index ``turns_by_chat_status_time (chat_key, status, created_at)`` (an index-only scan once
vacuumed); history pages walk ``turns_by_chat_id (chat_key, id)`` backwards (core step 5).
"""

from __future__ import annotations

import time

from bot.storage.answers import final_text
from bot.storage.directory import ChatEntry, ChatSummary, HistoryItem, summary_of
from bot.storage.postgres.part import Part
from bot.storage.postgres.turns import clean_text
from bot.storage.values import TurnStatus

# {where}: filters the turns (one chat) or nothing; $n placeholders follow it.
_CHATS_SQL = """
WITH active AS (
    SELECT chat_key, count(*) FILTER (WHERE status != 'context') AS turns,
        max(created_at) AS last
    FROM turns {where} GROUP BY chat_key
)
SELECT a.chat_key, c.chat_type, c.title, a.turns, a.last
FROM active AS a LEFT JOIN chats AS c ON c.chat_key = a.chat_key
WHERE ${q} = '' OR strpos(lower(coalesce(c.title, '')), ${q}) > 0
    OR strpos(lower(a.chat_key), ${q}) > 0
ORDER BY a.last DESC, a.chat_key COLLATE "C"
LIMIT ${limit} OFFSET ${offset}
"""


class PostgresDirectory(Part):
    async def note_chat(self, entry: ChatEntry) -> None:
        async with self._db.acquire() as conn:  # one upsert: atomic on its own
            await conn.execute(
                "INSERT INTO chats (platform, chat_id, chat_key, chat_type, title, updated_at)"
                " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (platform, chat_id) DO UPDATE SET"
                " chat_type = excluded.chat_type, title = excluded.title,"
                " updated_at = excluded.updated_at",
                entry.platform,
                clean_text(entry.chat_id),
                clean_text(f"{entry.platform}:{entry.chat_id}"),
                entry.chat_type,
                clean_text(entry.title),
                time.time(),
            )

    async def list_chats(
        self, query: str = "", limit: int = 50, offset: int = 0
    ) -> list[ChatSummary]:
        return await self._chats("", (), query, limit, offset)

    async def chat_summary(self, chat_key: str) -> ChatSummary | None:
        found = await self._chats("WHERE chat_key = $1", (chat_key,), "", 1, 0)
        return found[0] if found else None

    async def chat_conversations(self, chat_key: str) -> list[str]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                "SELECT conv_key FROM (SELECT conv_key FROM turns WHERE chat_key = $1"
                " UNION SELECT conv_key FROM overheard WHERE chat_key = $1) AS conversations"
                ' ORDER BY conv_key COLLATE "C"',
                chat_key,
            )
        return [row["conv_key"] for row in rows]

    async def history_page(
        self, chat_key: str, before: int | None = None, limit: int = 50
    ) -> list[HistoryItem]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                "SELECT id, conv_key, user_id, user_name, user_text, answer, status, created_at"
                " FROM turns WHERE chat_key = $1 AND id < $2 AND status != 'context'"
                " ORDER BY id DESC LIMIT $3",
                chat_key,
                before if before is not None else 2**63 - 1,
                max(limit, 0),
            )
        return [
            HistoryItem(
                turn_id=int(row["id"]),
                conversation_key=row["conv_key"],
                user_id=row["user_id"],
                user_name=row["user_name"],
                text=row["user_text"],
                answer=final_text(row["answer"]),
                status=TurnStatus(row["status"]),
                created_at=float(row["created_at"]),
            )
            for row in rows
        ]

    async def _chats(
        self, where: str, args: tuple[object, ...], query: str, limit: int, offset: int
    ) -> list[ChatSummary]:
        first = len(args) + 1
        sql = _CHATS_SQL.format(where=where, q=first, limit=first + 1, offset=first + 2)
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                sql, *args, clean_text(query.lower()), max(limit, 0), max(offset, 0)
            )
        return [
            summary_of(row["chat_key"], row["chat_type"], row["title"], row["turns"], row["last"])
            for row in rows
        ]
