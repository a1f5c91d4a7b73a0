"""Deleting one person's data in SQLite (:class:`bot.storage.erasure.Erasure`).

Triggers drop the search-index rows and vectors of every turn and memory deleted here.
"""

from __future__ import annotations

import logging

import aiosqlite

from bot.storage.erasure import sent_by
from bot.storage.sqlite.coordination import NOW
from bot.storage.sqlite.part import Part
from bot.storage.values import UserDeletion

log = logging.getLogger(__name__)

# The person's rows on one platform. Parameters: (prefix length, "platform:", user id), and
# for _THEIRS the user id once more. A conversation ``<chat>:u:<id>`` is theirs alone.
_ON_PLATFORM = "substr(chat_key, 1, ?) = ?"
_BY_THEM = f"{_ON_PLATFORM} AND user_id = ?"
_OWN = f"{_ON_PLATFORM} AND conv_key = chat_key || ':u:' || ?"
_THEIRS = f"{_ON_PLATFORM} AND (user_id = ? OR conv_key = chat_key || ':u:' || ?)"


class SQLiteErasure(Part):
    async def delete_user(self, platform: str, user_id: str) -> UserDeletion:
        prefix = f"{platform}:"
        mine = (len(prefix), prefix, user_id)
        who = (*mine, user_id)
        async with self._db.transaction() as conn:
            conversations = await _conversations(conn, mine)
            rows = await conn.execute_fetchall(
                "SELECT count(*), coalesce(sum(1 + coalesce(json_array_length(answer), 0)), 0)"
                f" FROM turns WHERE {_THEIRS}",
                who,
            )
            turns, messages = (int(v) for v in next(iter(rows)))
            deliveries = await _count(
                conn,
                f"DELETE FROM deliveries WHERE turn_id IN (SELECT id FROM turns WHERE {_THEIRS})",
                who,
            )
            await conn.execute(f"DELETE FROM turns WHERE {_THEIRS}", who)
            overheard = await _count(conn, f"DELETE FROM overheard WHERE {_THEIRS}", who)
            await conn.execute(f"DELETE FROM resets WHERE {_OWN}", mine)
            memories = await _count(
                conn,
                f"DELETE FROM memories WHERE {_ON_PLATFORM} AND ((user_id = ?"
                " AND scope IN ('member', 'private')) OR conv_key = chat_key || ':u:' || ?)",
                who,
            )
            # The group's facts they stated stay, without their name.
            await conn.execute(f"UPDATE memories SET user_name = '' WHERE {_BY_THEM}", mine)
            marks = ",".join("?" * len(conversations))
            summaries = await _count(
                conn, f"DELETE FROM summaries WHERE conv_key IN ({marks})", tuple(conversations)
            )
            inbox = await _blank_inbox(conn, platform, user_id)
            usage = await _count(
                conn, f"UPDATE usage_daily SET user_name = '' WHERE {_BY_THEM}", mine
            )
            audit = 0
            for table in ("clear_audit", "chat_audit"):
                audit += await _count(
                    conn,
                    f"UPDATE {table} SET actor_name = '' WHERE {_ON_PLATFORM} AND actor_id = ?",
                    mine,
                )
            await conn.execute(  # a private chat's title is their name (bot.storage.directory)
                f"DELETE FROM chats WHERE {_ON_PLATFORM} AND chat_type = 'private' AND NOT"
                " EXISTS (SELECT 1 FROM turns AS t WHERE t.chat_key = chats.chat_key)",
                mine[:2],
            )
        for key in conversations:
            self._windows.forget(key)
        log.info("user data deleted platform=%s turns=%d memories=%d", platform, turns, memories)
        return UserDeletion(
            turns=turns,
            messages=messages,
            overheard=overheard,
            conversations=len(conversations),
            memories=memories,
            summaries=summaries,
            deliveries=deliveries,
            inbox=inbox,
            usage_rows=usage,
            audit_rows=audit,
        )


async def _conversations(conn: aiosqlite.Connection, mine: tuple[object, ...]) -> list[str]:
    """The conversations losing a turn or a message, and the person's own ones."""
    who = (*mine, mine[2])
    rows = await conn.execute_fetchall(
        f"SELECT conv_key FROM turns WHERE {_THEIRS}"
        f" UNION SELECT conv_key FROM overheard WHERE {_THEIRS}"
        f" UNION SELECT conv_key FROM summaries WHERE {_OWN} ORDER BY 1",
        (*who, *who, *mine),
    )
    return [str(key) for (key,) in rows]


async def _count(conn: aiosqlite.Connection, sql: str, args: tuple[object, ...]) -> int:
    cursor = await conn.execute(sql, args)
    return max(cursor.rowcount, 0)


async def _blank_inbox(conn: aiosqlite.Connection, platform: str, user_id: str) -> int:
    """The person's platform updates lose their payload; an unfinished one is finished."""
    rows = await conn.execute_fetchall(
        "SELECT id, payload FROM inbox WHERE source = ? OR substr(source, 1, ?) = ?",
        (platform, len(platform) + 1, f"{platform}:"),
    )
    theirs = [(int(item_id),) for item_id, payload in rows if sent_by(str(payload), user_id)]
    await conn.executemany(
        f"UPDATE inbox SET payload = '{{}}', done_at = coalesce(done_at, {NOW}),"
        " lease_until = NULL, error = coalesce(error, 'deleted on request') WHERE id = ?",
        theirs,
    )
    return len(theirs)
