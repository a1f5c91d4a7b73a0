"""Inbox puts of one webhook burst in one statement (issue 31).

Telegram posts up to 40 updates at once, and each must be stored before its 200. Stored one
statement each, they hold up to 40 pooled connections and 40 commits (a WAL flush each) where
one multi-row ``INSERT`` does: a put joins the batch that is gathering; the first put to find
no batch being written leads: it writes batches until its own is written, and puts arriving
meanwhile gather for the next batch, led by a task once the leader has its answer. A quiet
bot's put is a batch of one: one statement, as before.

Each caller learns what its own statement would have told it: True when its row was stored,
False for a redelivery (also one repeated within the batch: the first of the two is stored).
One statement is atomic, so a batch that fails stored nothing; its puts are then written one by
one, so one update the database refuses cannot fail the others with it (each is told its own
error, and its webhook answers 500: Telegram delivers it again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg

__all__ = ["InboxBatch", "Put"]

Put = Callable[[str, int, str, str, "str | None"], Awaitable[bool]]  # the one-row put

# The rows in the order given (ORDINALITY): ids are handed out in arrival order, as one by one.
_PUT_MANY = """
WITH clock AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS now)
INSERT INTO inbox (source, update_id, lane, payload, subject, created_at)
SELECT r.source, r.update_id, r.lane, r.payload, r.subject, clock.now
FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[])
    WITH ORDINALITY AS r(source, update_id, lane, payload, subject, n), clock
ORDER BY r.n
ON CONFLICT (source, update_id) DO NOTHING
RETURNING source, update_id
"""


@dataclass(frozen=True, slots=True)
class _Put:
    source: str
    update_id: int
    lane: str
    payload: str
    subject: str | None
    future: asyncio.Future[bool]


class InboxBatch:
    """``inbox_put`` batched (see the module's docstring); ``one`` writes a single put."""

    def __init__(self, pool: Callable[[], asyncpg.Pool], one: Put) -> None:
        self._pool, self._one = pool, one
        self._queued: list[_Put] = []
        self._leading = False
        self._next: asyncio.Task[None] | None = None  # who leads once a leader is done

    async def put(
        self, source: str, update_id: int, lane: str, payload: str, subject: str | None
    ) -> bool:
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._queued.append(_Put(source, update_id, lane, payload, subject, future))
        if not self._leading:
            await self._lead(until=future)
        return await future

    async def _lead(self, until: asyncio.Future[bool] | None) -> None:
        """Write batches until ``until`` is answered (None: until nothing is queued)."""
        self._leading = True
        try:
            while self._queued and (until is None or not until.done()):
                batch, self._queued = self._queued, []
                # Shielded: a leader cancelled (its client gone) leaves the batch written and
                # every other put in it answered.
                await asyncio.shield(asyncio.ensure_future(self._write(batch)))
        finally:
            self._leading = False
            if self._queued:  # arrived after this leader's own batch: the next one's leader
                self._next = asyncio.create_task(self._lead(until=None))

    async def _write(self, batch: list[_Put]) -> None:
        first: dict[tuple[str, int], _Put] = {}
        for put in batch:
            first.setdefault((put.source, put.update_id), put)
        rows = list(first.values())
        try:
            if len(rows) == 1:
                (put,) = rows
                stored = {(put.source, put.update_id)} if await self._single(put) else set()
            else:
                stored = await self._many(rows)
        except Exception as exc:
            if len(rows) > 1:
                await asyncio.gather(*(self._alone(put) for put in batch))
            else:
                for put in batch:
                    _answer(put.future, exc)
            return
        except BaseException:  # the loop is closing: nobody is told stored
            for put in batch:
                put.future.cancel()
            raise
        for put in batch:
            key = (put.source, put.update_id)
            _answer(put.future, key in stored and first[key] is put)

    async def _many(self, rows: list[_Put]) -> set[tuple[str, int]]:
        found = await self._pool().fetch(
            _PUT_MANY,
            [put.source for put in rows],
            [put.update_id for put in rows],
            [put.lane for put in rows],
            [put.payload for put in rows],
            [put.subject for put in rows],
        )
        return {(str(source), int(update_id)) for source, update_id in found}

    async def _single(self, put: _Put) -> bool:
        return await self._one(put.source, put.update_id, put.lane, put.payload, put.subject)

    async def _alone(self, put: _Put) -> None:
        """After a failed batch: this put on its own, its own answer or error."""
        try:
            _answer(put.future, await self._single(put))
        except Exception as exc:
            _answer(put.future, exc)


def _answer(future: asyncio.Future[bool], outcome: bool | BaseException) -> None:
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
