"""Group chatter kept as context (table ``overheard``): :mod:`bot.storage.overheard`."""

from __future__ import annotations

import time

from bot.storage.sql.seam import Database
from bot.values import NewTurn, Overheard


def turn_row(turn: NewTurn, db: Database) -> tuple[str, str, str, str, str | None, str, float]:
    """``conv_key, chat_key, user_id, user_name, platform_message_id, text, created_at``."""
    text = db.dialect.text
    return (
        turn.conversation_key,
        turn.chat_key,
        turn.user_id,
        text(turn.user_name),
        turn.platform_message_id,
        text(turn.text),
        time.time(),
    )


class OverheardRows:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record_overheard(self, message: NewTurn, keep: int, retain: int = 0) -> None:
        key = message.conversation_key
        async with self._db.transaction() as tx:
            # One writer per conversation at a time: ids then grow in arrival order within it.
            await tx.lock(f"overheard:{key}")
            await tx.execute(
                "INSERT INTO overheard (conv_key, chat_key, user_id, user_name,"
                " platform_message_id, text, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                *turn_row(message, self._db),
            )
            if retain > keep:  # older than the newest keep waiting: passed, kept for /catchup
                await tx.execute(
                    "UPDATE overheard SET passed = 1 WHERE conv_key = $1 AND passed = 0"
                    " AND id NOT IN (SELECT id FROM overheard WHERE conv_key = $1"
                    " AND passed = 0 ORDER BY id DESC LIMIT $2)",
                    key,
                    max(keep, 0),
                )
            await tx.execute(
                "DELETE FROM overheard WHERE conv_key = $1 AND id NOT IN"
                " (SELECT id FROM overheard WHERE conv_key = $1 ORDER BY id DESC LIMIT $2)",
                key,
                max(keep, retain, 0),
            )

    async def replace_overheard(
        self, conversation_key: str, platform_message_id: str, text: str
    ) -> bool:
        changed = await self._db.execute(
            "UPDATE overheard SET text = $3"
            " WHERE conv_key = $1 AND platform_message_id = $2 AND passed = 0",
            conversation_key,
            platform_message_id,
            self._db.dialect.text(text),
        )
        return changed > 0

    async def load_overheard(self, conversation_key: str, since: float) -> list[Overheard]:
        rows = await self._db.fetch(
            "SELECT id, user_id, user_name, text, created_at FROM overheard"
            " WHERE conv_key = $1 AND created_at >= $2 AND passed = 0 ORDER BY id",
            conversation_key,
            since,
        )
        return [
            Overheard(int(i), str(user), str(name), str(text), float(at))
            for i, user, name, text, at in rows
        ]
