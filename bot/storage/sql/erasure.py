"""Deleting one person's data (:class:`bot.storage.erasure.Erasure`).

Search-index rows and vectors go with the turns and memories deleted here (SQLite: triggers;
PostgreSQL: ``ON DELETE CASCADE`` and the rows' own columns).
"""

from __future__ import annotations

import logging

from bot.storage.erasure import sent_by
from bot.storage.sql.seam import Database, Tx, Windows
from bot.values import UserDeletion

log = logging.getLogger(__name__)


class Eraser:
    def __init__(self, db: Database, windows: Windows) -> None:
        self._db, self._windows = db, windows
        # The person's rows on one platform: $1 "platform:", $2 the user id. A conversation
        # ``<chat>:u:<id>`` is theirs alone.
        on_platform = db.dialect.starts_with("chat_key", "$1")
        self._on_platform = on_platform
        self._by_them = f"{on_platform} AND user_id = $2"
        self._own = f"{on_platform} AND conv_key = chat_key || ':u:' || $2"
        self._theirs = f"{on_platform} AND (user_id = $2 OR conv_key = chat_key || ':u:' || $2)"

    async def delete_user(self, platform: str, user_id: str) -> UserDeletion:
        d, theirs, who = self._db.dialect, self._theirs, (f"{platform}:", user_id)
        async with self._db.transaction() as tx:
            deliveries = await tx.execute(
                f"DELETE FROM deliveries WHERE turn_id IN (SELECT id FROM turns WHERE {theirs})",
                *who,
            )
            gone = await tx.fetch(
                f"DELETE FROM turns WHERE {theirs} RETURNING conv_key,"
                f" 1 + coalesce({d.json_length('answer')}, 0)",
                *who,
            )
            heard = await tx.fetch(f"DELETE FROM overheard WHERE {theirs} RETURNING conv_key", *who)
            await tx.execute(f"DELETE FROM resets WHERE {self._own}", *who)
            memories = await tx.execute(
                f"DELETE FROM memories WHERE {self._on_platform} AND ((user_id = $2"
                " AND scope IN ('member', 'private')) OR conv_key = chat_key || ':u:' || $2)",
                *who,
            )
            # The group's facts they stated stay, without their name.
            await tx.execute(f"UPDATE memories SET user_name = '' WHERE {self._by_them}", *who)
            touched = {str(row[0]) for row in (*gone, *heard)}
            dropped = await tx.fetch(
                f"DELETE FROM summaries WHERE {d.in_array('conv_key', '$3', 'text')}"
                f" OR ({self._own}) RETURNING conv_key",
                *who,
                d.array(sorted(touched)),
            )
            inbox = await self._blank_inbox(tx, platform, user_id)
            usage = await tx.execute(
                f"UPDATE usage_daily SET user_name = '' WHERE {self._by_them}", *who
            )
            audit = 0
            for table in ("clear_audit", "chat_audit"):
                audit += await tx.execute(
                    f"UPDATE {table} SET actor_name = ''"
                    f" WHERE {self._on_platform} AND actor_id = $2",
                    *who,
                )
            await tx.execute(  # a private chat's title is their name (bot.storage.directory)
                f"DELETE FROM chats WHERE {self._on_platform} AND chat_type = 'private' AND NOT"
                " EXISTS (SELECT 1 FROM turns AS t WHERE t.chat_key = chats.chat_key)",
                who[0],
            )
        conversations = touched | {str(row[0]) for row in dropped}
        for key in conversations:
            self._windows.forget(key)
        log.info(
            "user data deleted platform=%s turns=%d memories=%d", platform, len(gone), memories
        )
        return UserDeletion(
            turns=len(gone),
            messages=sum(int(row[1]) for row in gone),
            overheard=len(heard),
            conversations=len(conversations),
            memories=memories,
            summaries=len(dropped),
            deliveries=deliveries,
            inbox=inbox,
            usage_rows=usage,
            audit_rows=audit,
        )

    async def _blank_inbox(self, tx: Tx, platform: str, user_id: str) -> int:
        """The person's platform updates lose their payload; an unfinished one is finished."""
        d = self._db.dialect
        rows = await tx.fetch(
            "SELECT id, payload FROM inbox WHERE source = $1"
            f" OR {d.starts_with('source', '$2')}{d.for_update}",
            platform,
            f"{platform}:",
        )
        theirs = [int(item_id) for item_id, payload in rows if sent_by(str(payload), user_id)]
        if theirs:
            await tx.execute(
                f"UPDATE inbox SET payload = '{{}}', lease_until = NULL,"
                f" done_at = coalesce(done_at, {d.now}),"
                " error = coalesce(error, 'deleted on request')"
                f" WHERE {d.in_array('id', '$1', 'bigint')}",
                d.array(theirs),
            )
        return len(theirs)
