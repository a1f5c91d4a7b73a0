"""Deleting one person's data in PostgreSQL (:class:`bot.storage.erasure.Erasure`).

Vectors go by ``ON DELETE CASCADE`` and the search columns with their rows (the search
statistics by trigger, :mod:`bot.storage.postgres.memory_schema`).
"""

from __future__ import annotations

import logging

import asyncpg

from bot.storage.erasure import sent_by
from bot.storage.postgres.part import Part
from bot.storage.values import UserDeletion

log = logging.getLogger(__name__)

# The person's rows on one platform: $1 "platform:", $2 the user id. A conversation
# ``<chat>:u:<id>`` is theirs alone.
_ON_PLATFORM = "starts_with(chat_key, $1)"
_BY_THEM = f"{_ON_PLATFORM} AND user_id = $2"
_OWN = f"{_ON_PLATFORM} AND conv_key = chat_key || ':u:' || $2"
_THEIRS = f"{_ON_PLATFORM} AND (user_id = $2 OR conv_key = chat_key || ':u:' || $2)"


class PostgresErasure(Part):
    async def delete_user(self, platform: str, user_id: str) -> UserDeletion:
        who = (f"{platform}:", user_id)
        async with self._db.transaction() as conn:
            deliveries = await _count(
                conn,
                f"DELETE FROM deliveries WHERE turn_id IN (SELECT id FROM turns WHERE {_THEIRS})",
                who,
            )
            gone = await conn.fetch(
                f"DELETE FROM turns WHERE {_THEIRS} RETURNING conv_key,"
                " 1 + coalesce(json_array_length(answer::json), 0) AS messages",
                *who,
            )
            heard = await conn.fetch(
                f"DELETE FROM overheard WHERE {_THEIRS} RETURNING conv_key", *who
            )
            await conn.execute(f"DELETE FROM resets WHERE {_OWN}", *who)
            memories = await _count(
                conn,
                f"DELETE FROM memories WHERE {_ON_PLATFORM} AND ((user_id = $2"
                " AND scope IN ('member', 'private')) OR conv_key = chat_key || ':u:' || $2)",
                who,
            )
            # The group's facts they stated stay, without their name.
            await conn.execute(f"UPDATE memories SET user_name = '' WHERE {_BY_THEM}", *who)
            touched = {row["conv_key"] for row in (*gone, *heard)}
            dropped = await conn.fetch(
                f"DELETE FROM summaries WHERE conv_key = ANY($3::text[]) OR ({_OWN})"
                " RETURNING conv_key",
                *who,
                sorted(touched),
            )
            inbox = await _blank_inbox(conn, platform, user_id)
            usage = await _count(
                conn, f"UPDATE usage_daily SET user_name = '' WHERE {_BY_THEM}", who
            )
            audit = 0
            for table in ("clear_audit", "chat_audit"):
                audit += await _count(
                    conn,
                    f"UPDATE {table} SET actor_name = '' WHERE {_ON_PLATFORM} AND actor_id = $2",
                    who,
                )
            await conn.execute(  # a private chat's title is their name (bot.storage.directory)
                f"DELETE FROM chats WHERE {_ON_PLATFORM} AND chat_type = 'private' AND NOT"
                " EXISTS (SELECT 1 FROM turns AS t WHERE t.chat_key = chats.chat_key)",
                who[0],
            )
        turns = len(gone)
        log.info("user data deleted platform=%s turns=%d memories=%d", platform, turns, memories)
        return UserDeletion(
            turns=turns,
            messages=sum(int(row["messages"]) for row in gone),
            overheard=len(heard),
            conversations=len(touched | {row["conv_key"] for row in dropped}),
            memories=memories,
            summaries=len(dropped),
            deliveries=deliveries,
            inbox=inbox,
            usage_rows=usage,
            audit_rows=audit,
        )


async def _count(conn: asyncpg.Connection, sql: str, args: tuple[object, ...]) -> int:
    """The rows a DELETE or UPDATE touched (its status is ``"DELETE 3"``)."""
    status = await conn.execute(sql, *args)
    return int(str(status).rsplit(" ", 1)[-1])


async def _blank_inbox(conn: asyncpg.Connection, platform: str, user_id: str) -> int:
    """The person's platform updates lose their payload; an unfinished one is finished."""
    rows = await conn.fetch(
        "SELECT id, payload FROM inbox WHERE source = $1 OR starts_with(source, $1 || ':')"
        " FOR UPDATE",
        platform,
    )
    theirs = [row["id"] for row in rows if sent_by(row["payload"], user_id)]
    if theirs:
        await conn.execute(
            "UPDATE inbox SET payload = '{}', lease_until = NULL,"
            " done_at = coalesce(done_at, extract(epoch FROM clock_timestamp())::float8),"
            " error = coalesce(error, 'deleted on request') WHERE id = ANY($1::bigint[])",
            theirs,
        )
    return len(theirs)
