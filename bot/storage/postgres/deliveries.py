"""Delivery records (table ``deliveries``), in PostgreSQL."""

from __future__ import annotations

import time

from bot.storage.deliveries import MAX_SHOWN_CHARS
from bot.storage.postgres.part import Part
from bot.storage.postgres.turns import clean_text
from bot.storage.values import Delivery


class PostgresDeliveries(Part):
    async def begin_delivery(
        self,
        platform: str,
        chat_key: str,
        chat_id: str,
        thread_id: str | None,
        reply_to: str | None,
    ) -> int:
        now = time.time()
        async with self._db.acquire() as conn:
            delivery_id = await conn.fetchval(
                "INSERT INTO deliveries (owner, platform, chat_key, chat_id, thread_id, reply_to,"
                " created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING id",
                self.owner,
                platform,
                chat_key,
                chat_id,
                thread_id,
                reply_to,
                now,
            )
        return int(delivery_id)

    async def update_delivery(
        self,
        delivery_id: int,
        *,
        message_id: str | None = None,
        shown: str | None = None,
        turn_id: int | None = None,
    ) -> None:
        async with self._db.acquire() as conn:
            await conn.execute(
                "UPDATE deliveries SET message_id = coalesce($1, message_id),"
                " shown = coalesce($2, shown), turn_id = coalesce($3, turn_id), updated_at = $4"
                " WHERE id = $5",
                message_id,
                None if shown is None else clean_text(shown[:MAX_SHOWN_CHARS]),
                turn_id,
                time.time(),
                delivery_id,
            )

    async def end_delivery(self, delivery_id: int) -> None:
        async with self._db.acquire() as conn:
            await conn.execute("DELETE FROM deliveries WHERE id = $1", delivery_id)

    async def deliveries(self, platform: str) -> list[Delivery]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                "SELECT id, owner, platform, chat_key, chat_id, thread_id, reply_to, message_id,"
                " shown, turn_id, created_at FROM deliveries WHERE platform = $1 ORDER BY id",
                platform,
            )
        return [
            Delivery(
                delivery_id=int(row["id"]),
                owner=row["owner"],
                platform=row["platform"],
                chat_key=row["chat_key"],
                chat_id=row["chat_id"],
                thread_id=row["thread_id"],
                reply_to=row["reply_to"],
                message_id=row["message_id"],
                shown=row["shown"],
                turn_id=None if row["turn_id"] is None else int(row["turn_id"]),
                created_at=float(row["created_at"]),
            )
            for row in rows
        ]
