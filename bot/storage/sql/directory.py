"""The chat directory (:class:`bot.storage.directory.ChatDirectory`).

``chats`` holds what adapters noted; the list is every chat of ``turns`` (grouped by chat over
the index ``turns_by_chat_status_time (chat_key, status, created_at)``: one pass over the
index, never the rows), of ``chats`` and of the two audit tables (an operator's actions: few
rows), so a cleared chat stays listed. History pages walk ``(chat_key, id)`` backwards
(SQLite's ``turns_by_chat`` holds the row id; PostgreSQL's ``turns_by_chat_id``).
"""

from __future__ import annotations

import time

from bot.storage.answers import final_text, tool_steps
from bot.storage.directory import summary_of
from bot.storage.sql.seam import Database
from bot.values import ChatEntry, ChatSummary, HistoryItem, TurnStatus

# {where}: filters each table (one chat) or nothing; {q}, {limit}, {offset}: placeholders after it.
_CHATS_SQL = """
WITH known AS (
    SELECT chat_key, count(*) FILTER (WHERE status != 'context') AS turns,
        max(created_at) AS last
    FROM turns {where} GROUP BY chat_key
    UNION ALL SELECT chat_key, 0, max(at) FROM clear_audit {where} GROUP BY chat_key
    UNION ALL SELECT chat_key, 0, max(at) FROM chat_audit {where} GROUP BY chat_key
    UNION ALL SELECT chat_key, 0, 0 FROM chats {where}
), active AS (
    SELECT chat_key, sum(turns) AS turns, max(last) AS last FROM known GROUP BY chat_key
)
SELECT a.chat_key, c.chat_type, c.title, a.turns, a.last
FROM active AS a LEFT JOIN chats AS c ON c.chat_key = a.chat_key
WHERE {q} = '' OR {in_title} OR {in_key}
ORDER BY a.last DESC, a.chat_key{bytewise}
LIMIT {limit} OFFSET {offset}
"""


class Directory:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def note_chat(self, entry: ChatEntry) -> None:
        text = self._db.dialect.text
        await self._db.execute(  # one upsert: atomic on its own
            "INSERT INTO chats (platform, chat_id, chat_key, chat_type, title, updated_at)"
            " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (platform, chat_id) DO UPDATE SET"
            " chat_type = excluded.chat_type, title = excluded.title,"
            " updated_at = excluded.updated_at",
            entry.platform,
            text(entry.chat_id),
            text(f"{entry.platform}:{entry.chat_id}"),
            entry.chat_type,
            text(entry.title),
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
        rows = await self._db.fetch(
            "SELECT conv_key FROM (SELECT conv_key FROM turns WHERE chat_key = $1"
            " UNION SELECT conv_key FROM overheard WHERE chat_key = $1) AS conversations"
            f" ORDER BY conv_key{self._db.dialect.bytewise}",
            chat_key,
        )
        return [str(key) for (key,) in rows]

    async def history_page(
        self, chat_key: str, before: int | None = None, limit: int = 50
    ) -> list[HistoryItem]:
        rows = await self._db.fetch(
            "SELECT id, conv_key, user_id, user_name, user_text, answer, status, created_at"
            " FROM turns WHERE chat_key = $1 AND id < $2 AND status != 'context'"
            " ORDER BY id DESC LIMIT $3",
            chat_key,
            before if before is not None else 2**63 - 1,
            max(limit, 0),
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
                tools=tool_steps(answer),
            )
            for turn_id, conv, user, name, text, answer, status, at in rows
        ]

    async def _chats(
        self, where: str, args: tuple[object, ...], query: str, limit: int, offset: int
    ) -> list[ChatSummary]:
        d, n = self._db.dialect, len(args)
        q = f"${n + 1}"
        sql = _CHATS_SQL.format(
            where=where,
            q=q,
            in_title=d.contains(d.lower("coalesce(c.title, '')"), q),
            in_key=d.contains(d.lower("a.chat_key"), q),
            bytewise=d.bytewise,
            limit=f"${n + 2}",
            offset=f"${n + 3}",
        )
        needle = d.text(query.lower())
        rows = await self._db.fetch(sql, *args, needle, max(limit, 0), max(offset, 0))
        return [summary_of(*row) for row in rows]
