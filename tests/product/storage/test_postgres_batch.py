"""PostgreSQL's batched writes (bot/storage/postgres/batch.py), as logic: a batch the server
refuses is written again item by item; one whose connection was lost (it may have committed) is
not written again, every caller is told."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import asyncpg

from bot.storage.postgres.batch import Batch


def _batch(failure: Exception, alone: list[int]) -> Batch[int, int]:
    async def many(items: Sequence[int]) -> Sequence[int]:
        raise failure

    async def one(item: int) -> int:
        alone.append(item)
        return item * 10

    return Batch(many, one)


async def _three(batch: Batch[int, int]) -> list[int | BaseException]:
    first = asyncio.ensure_future(batch.run(1))  # leads alone
    await asyncio.sleep(0)
    rest = await asyncio.gather(batch.run(2), batch.run(3), return_exceptions=True)
    return [await first, *rest]


async def test_a_refused_batch_is_written_item_by_item() -> None:
    alone: list[int] = []
    outcomes = await _three(_batch(asyncpg.UniqueViolationError("duplicate"), alone))
    assert outcomes == [10, 20, 30]
    assert alone == [1, 2, 3]


async def test_a_lost_connection_is_not_written_again() -> None:
    alone: list[int] = []
    lost = asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation")
    outcomes = await _three(_batch(lost, alone))
    assert outcomes[0] == 10  # the leader's lone write went through ``one``
    assert outcomes[1] is lost and outcomes[2] is lost
    assert alone == [1]
