"""Delivery records (table ``deliveries``): :class:`bot.storage.deliveries.Deliveries`."""

from __future__ import annotations

import time

from bot.storage.deliveries import MAX_SHOWN_CHARS
from bot.storage.sql.seam import Database
from bot.values import Delivery

_COLUMNS = (
    "id, owner, platform, chat_key, chat_id, thread_id, reply_to, message_id, shown, turn_id,"
    " created_at"
)


class DeliveryRecords:
    def __init__(self, db: Database, owner: str) -> None:
        self._db, self.owner = db, owner

    async def begin_delivery(
        self,
        platform: str,
        chat_key: str,
        chat_id: str,
        thread_id: str | None,
        reply_to: str | None,
    ) -> int:
        rows = await self._db.write(
            "INSERT INTO deliveries (owner, platform, chat_key, chat_id, thread_id, reply_to,"
            " created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING id",
            self.owner, platform, chat_key, chat_id, thread_id, reply_to, time.time(),
        )  # fmt: skip
        return int(rows[0][0])

    async def update_delivery(
        self,
        delivery_id: int,
        *,
        message_id: str | None = None,
        shown: str | None = None,
        turn_id: int | None = None,
    ) -> None:
        await self._db.execute(
            "UPDATE deliveries SET message_id = coalesce($1, message_id),"
            " shown = coalesce($2, shown), turn_id = coalesce($3, turn_id), updated_at = $4"
            " WHERE id = $5",
            message_id,
            None if shown is None else self._db.dialect.text(shown[:MAX_SHOWN_CHARS]),
            turn_id,
            time.time(),
            delivery_id,
        )

    async def end_delivery(self, delivery_id: int) -> None:
        await self._db.execute("DELETE FROM deliveries WHERE id = $1", delivery_id)

    async def deliveries(self, platform: str) -> list[Delivery]:
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM deliveries WHERE platform = $1 ORDER BY id", platform
        )
        return [
            Delivery(int(i), owner, platform, key, chat, thread, reply, message, shown,
                     None if turn is None else int(turn), float(at))
            for i, owner, platform, key, chat, thread, reply, message, shown, turn, at in rows
        ]  # fmt: skip
