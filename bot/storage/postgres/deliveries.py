"""Delivery records in PostgreSQL: concurrent replies' records written together (issue 31).

Each reply begins a record before its first message, updates it twice and deletes it once
delivered (:class:`bot.storage.sql.deliveries.DeliveryRecords`); in a burst every turn does so
at about the same moment. Here each of the three is batched (:mod:`.batch`): the same rows, one
statement for the writes that meet.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

from bot.storage.deliveries import MAX_SHOWN_CHARS
from bot.storage.postgres.batch import Batch, columns
from bot.storage.postgres.connection import Database, PostgresSeam
from bot.storage.sql.deliveries import DeliveryRecords

__all__ = ["PostgresDeliveries"]

_BEGIN_MANY = (
    "INSERT INTO deliveries (owner, platform, chat_key, chat_id, thread_id, reply_to,"
    " created_at, updated_at) SELECT $1, r.platform, r.chat_key, r.chat_id, r.thread_id,"
    " r.reply_to, r.at, r.at FROM unnest($2::text[], $3::text[], $4::text[], $5::text[],"
    " $6::text[], $7::float8[]) WITH ORDINALITY"
    " AS r(platform, chat_key, chat_id, thread_id, reply_to, at, n) ORDER BY r.n RETURNING id"
)

_UPDATE_MANY = (
    "UPDATE deliveries AS d SET message_id = coalesce(r.message_id, d.message_id),"
    " shown = coalesce(r.shown, d.shown), turn_id = coalesce(r.turn_id, d.turn_id),"
    " updated_at = r.at FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[],"
    " $5::float8[]) AS r(id, message_id, shown, turn_id, at) WHERE d.id = r.id"
)


class _Begin(NamedTuple):
    platform: str
    chat_key: str
    chat_id: str
    thread_id: str | None
    reply_to: str | None


class _Update(NamedTuple):
    delivery_id: int
    message_id: str | None
    shown: str | None
    turn_id: int | None


class PostgresDeliveries(DeliveryRecords):
    def __init__(self, db: Database, owner: str) -> None:
        super().__init__(PostgresSeam(db), owner)
        self._database = db
        self._begins: Batch[_Begin, int] = Batch(self._begin_many, self._begin_one)
        self._updates: Batch[_Update, None] = Batch(self._update_many, self._update_one)
        self._ends: Batch[int, None] = Batch(self._end_many, super().end_delivery)

    async def begin_delivery(
        self,
        platform: str,
        chat_key: str,
        chat_id: str,
        thread_id: str | None,
        reply_to: str | None,
    ) -> int:
        return await self._begins.run(_Begin(platform, chat_key, chat_id, thread_id, reply_to))

    async def update_delivery(
        self,
        delivery_id: int,
        *,
        message_id: str | None = None,
        shown: str | None = None,
        turn_id: int | None = None,
    ) -> None:
        await self._updates.run(_Update(delivery_id, message_id, shown, turn_id))

    async def end_delivery(self, delivery_id: int) -> None:
        await self._ends.run(delivery_id)

    async def _begin_one(self, begin: _Begin) -> int:
        return await super().begin_delivery(*begin)

    async def _begin_many(self, begins: Sequence[_Begin]) -> list[int]:
        now = time.time()
        rows = [(*begin, now) for begin in begins]
        found = await self._database.pool.fetch(_BEGIN_MANY, self.owner, *columns(rows))
        return sorted(int(row[0]) for row in found)  # one statement: ascending in row order

    async def _update_one(self, update: _Update) -> None:
        delivery_id, message_id, shown, turn_id = update
        await super().update_delivery(
            delivery_id, message_id=message_id, shown=shown, turn_id=turn_id
        )

    async def _update_many(self, updates: Sequence[_Update]) -> list[None]:
        if len({update.delivery_id for update in updates}) < len(updates):
            for update in updates:  # one record twice: in the order given
                await self._update_one(update)
        else:
            rows = [
                (i, message, None if shown is None else _shown(shown), turn, time.time())
                for i, message, shown, turn in updates
            ]
            await self._database.pool.execute(_UPDATE_MANY, *columns(rows))
        return [None] * len(updates)

    async def _end_many(self, ids: Sequence[int]) -> list[None]:
        await self._database.pool.execute(
            "DELETE FROM deliveries WHERE id = any($1::bigint[])", ids
        )
        return [None] * len(ids)


def _shown(text: str) -> str:
    return PostgresSeam.dialect.text(text[:MAX_SHOWN_CHARS])
