"""Delivery records (table ``deliveries``), in SQLite."""

from __future__ import annotations

import time

from bot.storage.deliveries import MAX_SHOWN_CHARS
from bot.storage.sqlite.part import Part
from bot.storage.values import Delivery


class SQLiteDeliveries(Part):
    async def begin_delivery(
        self,
        platform: str,
        chat_key: str,
        chat_id: str,
        thread_id: str | None,
        reply_to: str | None,
    ) -> int:
        now = time.time()
        async with self._db.writing() as conn:
            row = await conn.execute_insert(
                "INSERT INTO deliveries (owner, platform, chat_key, chat_id, thread_id, reply_to,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (self.owner, platform, chat_key, chat_id, thread_id, reply_to, now, now),
            )
        assert row is not None, "an INSERT returns its rowid"
        return int(row[0])

    async def update_delivery(
        self,
        delivery_id: int,
        *,
        message_id: str | None = None,
        shown: str | None = None,
        turn_id: int | None = None,
    ) -> None:
        async with self._db.writing() as conn:
            await conn.execute(
                "UPDATE deliveries SET message_id = coalesce(?, message_id),"
                " shown = coalesce(?, shown), turn_id = coalesce(?, turn_id), updated_at = ?"
                " WHERE id = ?",
                (
                    message_id,
                    None if shown is None else shown[:MAX_SHOWN_CHARS],
                    turn_id,
                    time.time(),
                    delivery_id,
                ),
            )

    async def end_delivery(self, delivery_id: int) -> None:
        async with self._db.writing() as conn:
            await conn.execute("DELETE FROM deliveries WHERE id = ?", (delivery_id,))

    async def deliveries(self, platform: str) -> list[Delivery]:
        rows = await self._db.reader.execute_fetchall(
            "SELECT id, owner, platform, chat_key, chat_id, thread_id, reply_to, message_id,"
            " shown, turn_id, created_at FROM deliveries WHERE platform = ? ORDER BY id",
            (platform,),
        )
        return [
            Delivery(
                delivery_id=int(row[0]),
                owner=str(row[1]),
                platform=str(row[2]),
                chat_key=str(row[3]),
                chat_id=str(row[4]),
                thread_id=None if row[5] is None else str(row[5]),
                reply_to=None if row[6] is None else str(row[6]),
                message_id=None if row[7] is None else str(row[7]),
                shown=str(row[8]),
                turn_id=None if row[9] is None else int(row[9]),
                created_at=float(row[10]),
            )
            for row in rows
        ]
