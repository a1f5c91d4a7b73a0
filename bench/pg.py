"""PostgreSQL for the bench: a fresh schema per run (dropped after), seeded fast on the server.

The schema is created by the real store (``open_storage_url``), so it is exactly the one the bot
uses. Rows are the same as :mod:`bench.seed` writes for SQLite (every odd turn is the measured
conversation's, the others spread over 1,000 private chats), generated on the server by one
``INSERT ... SELECT ... FROM generate_series`` per chunk. The secondary indexes of ``turns`` are
dropped first and rebuilt after from their own definitions (``pg_indexes``), which is much
faster than maintaining them row by row and leaves the same indexes behind.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.seed import MEASURED_CHAT_KEY, MEASURED_KEY, MEASURED_USER, MODEL, OTHER_CONVERSATIONS
from bot.storage import open_storage_url

if TYPE_CHECKING:
    import asyncpg

PG_URL_ENV = "PARLOUR_TEST_PG_URL"  # the same server the tests use, when no --pg-url is given
POOL_SIZE = 4  # connections per store in the bench (several stores are open at once)
_CHUNK_TURNS = 500_000
_BASE_TIME = 1_700_000_000

_OTHER_USER = f"(10000 + (g / 2) % {OTHER_CONVERSATIONS})::text"
_TEXT = "'seeded turn ' || g || ': what do you think about topic ' || (g % 97) || ' today?'"
_SEED_SQL = f"""
INSERT INTO turns (id, conv_key, chat_key, user_id, user_name, user_text, answer, status, model,
                   prompt_tokens, completion_tokens, created_at, completed_at)
SELECT g,
       CASE WHEN g % 2 = 1 THEN $3 ELSE 'telegram:' || {_OTHER_USER} || ':u:' || {_OTHER_USER} END,
       CASE WHEN g % 2 = 1 THEN $4 ELSE 'telegram:' || {_OTHER_USER} END,
       CASE WHEN g % 2 = 1 THEN $5 ELSE {_OTHER_USER} END,
       'user' || CASE WHEN g % 2 = 1 THEN $5 ELSE {_OTHER_USER} END,
       {_TEXT},
       json_build_array(json_build_object('role', 'assistant', 'content', 'echo: ' || {_TEXT}))
           ::text,
       'answered', $6, 20, 20, {_BASE_TIME} + g, {_BASE_TIME} + g
FROM generate_series($1::bigint, $2::bigint) AS g
"""


@dataclass(frozen=True, slots=True)
class BenchSchema:
    """One schema of the server at ``base_url`` (a postgresql:// URL without ``schema``)."""

    base_url: str
    schema: str
    pool_size: int = POOL_SIZE

    @property
    def url(self) -> str:
        """The ``storage.url`` of the bot's store in this schema."""
        joiner = "&" if "?" in self.base_url else "?"
        return f"{self.base_url}{joiner}schema={self.schema}&pool_size={self.pool_size}"

    async def connect(self) -> asyncpg.Connection:
        """A plain connection with ``search_path`` set to the schema."""
        import asyncpg

        return await asyncpg.connect(self.base_url, server_settings={"search_path": self.schema})


async def drop_schema(schema: BenchSchema) -> None:
    conn = await schema.connect()
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema.schema}" CASCADE')
    finally:
        await conn.close()


@asynccontextmanager
async def bench_schema(base_url: str, label: str) -> AsyncIterator[BenchSchema]:
    """A fresh schema (``bench_<label>_<random>``), created by the real store, dropped after."""
    schema = BenchSchema(base_url, f"bench_{label}_{secrets.token_hex(4)}")
    store = open_storage_url(schema.url)
    await store.open()
    await store.close()
    try:
        yield schema
    finally:
        await drop_schema(schema)


async def seed_postgres(schema: BenchSchema, messages: int) -> float:
    """Fill the (fresh, empty) ``schema`` with ``messages`` messages; returns the seconds taken."""
    started = time.perf_counter()
    turns = messages // 2
    conn = await schema.connect()
    try:
        indexes = await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1"
            " AND tablename = 'turns' AND indexname <> 'turns_pkey'",
            schema.schema,
        )
        for row in indexes:
            await conn.execute(f'DROP INDEX "{row["indexname"]}"')
        for first in range(1, turns + 1, _CHUNK_TURNS):
            last = min(turns, first + _CHUNK_TURNS - 1)
            await conn.execute(
                _SEED_SQL, first, last, MEASURED_KEY, MEASURED_CHAT_KEY, MEASURED_USER, MODEL
            )
        for row in indexes:
            await conn.execute(row["indexdef"])
        await conn.execute("SELECT setval(pg_get_serial_sequence('turns', 'id'), $1)", turns)
        await conn.execute("ANALYZE turns")
    finally:
        await conn.close()
    return time.perf_counter() - started


async def window_buffers(schema: BenchSchema, conversation_key: str, max_turns: int) -> int:
    """Shared buffers the window query touches (hit or read), by ``EXPLAIN (ANALYZE, BUFFERS)``:
    a figure for "flat" that a busy machine's timing noise cannot blur."""
    from bot.storage.postgres.turns import LAST_ID, window_page

    conn = await schema.connect()
    try:  # the first page of the walk load_window does: one page unless chatter sits inside
        await conn.execute(f"PREPARE bench_window(text, bigint) AS {window_page(max_turns)}")
        key = conversation_key.replace("'", "''")
        plan = await conn.fetchval(
            f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE bench_window('{key}', {LAST_ID})"
        )
    finally:
        await conn.close()
    top = json.loads(plan)[0]["Plan"]
    return int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"])
