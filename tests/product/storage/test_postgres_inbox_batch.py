"""PostgreSQL's batched inbox puts (bot/storage/postgres/inbox_batch.py): a webhook burst's
puts share one statement, and one the database refuses does not take the others with it."""

from __future__ import annotations

import asyncio

import pytest

from bot.config.storage_url import parse_storage_url
from bot.storage.postgres import PostgresStore
from tests import postgres_support

pytestmark = pytest.mark.skipif(
    postgres_support.pg_base_url() is None, reason=postgres_support.HOW_TO_RUN
)


async def test_a_put_the_database_refuses_fails_alone_in_its_burst() -> None:
    parsed = parse_storage_url(postgres_support.fresh_pg_url())
    assert parsed.dsn is not None
    async with PostgresStore(parsed.dsn, schema=parsed.schema) as store:
        ids = [1, 2**63, 2, 1]  # too big for the bigint column; a repeat
        results = await asyncio.gather(
            *(store.inbox_put("telegram", n, f"lane{n}", "{}") for n in ids),
            return_exceptions=True,
        )
        assert isinstance(results[1], Exception)  # its webhook answers 500: sent again
        assert results[2] is True
        assert sorted([results[0], results[3]]) == [False, True]
        assert await store.inbox_pending("telegram") == 2
