"""The usage ledger (``usage_daily``, booked by trigger ``turns_usage``) and plugin key-value
data (``plugin_kv``), in PostgreSQL."""

from __future__ import annotations

import json
import time
from typing import Any

from bot.storage.postgres.part import Part
from bot.storage.values import DailyUsage, Usage

_TODAY_SQL = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD')"  # the server's clock, as SQLite


class PostgresUsage(Part):
    async def tokens_on(
        self, day: str, chat_key: str | None = None, user_id: str | None = None
    ) -> int:
        if user_id is not None:
            assert chat_key is not None, "usage is per user per chat"
        async with self._db.acquire() as conn:
            total = await conn.fetchval(
                "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM usage_daily"
                " WHERE day = $1 AND ($2::text IS NULL OR chat_key = $2)"
                " AND ($3::text IS NULL OR user_id = $3)",
                day,
                chat_key,
                user_id,
            )
        return int(total)

    async def user_tokens_on(self, day: str, platform: str, user_id: str) -> int:
        async with self._db.acquire() as conn:
            total = await conn.fetchval(
                "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM usage_daily"
                " WHERE day = $1 AND user_id = $2 AND starts_with(chat_key, $3)",
                day,
                user_id,
                f"{platform}:",
            )
        return int(total)

    async def user_usage_on(self, day: str, platform: str, user_id: str) -> Usage:
        async with self._db.acquire() as conn:
            row = await conn.fetchrow(
                "SELECT coalesce(sum(prompt_tokens), 0) AS prompt,"
                " coalesce(sum(completion_tokens), 0) AS completion,"
                " coalesce(sum(cached_tokens), 0) AS cached FROM usage_daily"
                " WHERE day = $1 AND user_id = $2 AND starts_with(chat_key, $3)",
                day,
                user_id,
                f"{platform}:",
            )
        assert row is not None  # an aggregate always has its row
        return Usage(int(row["prompt"]), int(row["completion"]), int(row["cached"]))

    async def book_usage(self, chat_key: str, user_id: str, user_name: str, usage: Usage) -> None:
        async with self._db.acquire() as conn:
            await conn.execute(
                "INSERT INTO usage_daily AS u (day, chat_key, user_id, user_name, prompt_tokens,"
                f" completion_tokens, cached_tokens) VALUES ({_TODAY_SQL}, $1, $2, $3, $4, $5,"
                " $6) ON CONFLICT (day, chat_key, user_id) DO UPDATE SET"
                " prompt_tokens = u.prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = u.completion_tokens + excluded.completion_tokens,"
                " cached_tokens = u.cached_tokens + excluded.cached_tokens",
                chat_key,
                user_id,
                user_name,
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.cached_tokens,
            )

    async def daily_usage(self, since_day: str, chat_key: str | None = None) -> list[DailyUsage]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                "SELECT day, chat_key, user_id, user_name, turns, prompt_tokens,"
                " completion_tokens, cached_tokens FROM usage_daily"
                " WHERE day >= $1 AND ($2::text IS NULL OR chat_key = $2)"
                ' ORDER BY day COLLATE "C", chat_key COLLATE "C", user_id COLLATE "C"',
                since_day,
                chat_key,
            )
        return [
            DailyUsage(
                r["day"],
                r["chat_key"],
                r["user_id"],
                r["user_name"],
                int(r["turns"]),
                Usage(
                    int(r["prompt_tokens"]), int(r["completion_tokens"]), int(r["cached_tokens"])
                ),
            )
            for r in rows
        ]


class PostgresKeyValue(Part):
    async def kv_get(self, plugin: str, key: str) -> Any:
        async with self._db.acquire() as conn:
            value = await conn.fetchval(
                "SELECT value FROM plugin_kv WHERE plugin = $1 AND key = $2", plugin, key
            )
        return None if value is None else json.loads(value)

    async def kv_set(self, plugin: str, key: str, value: Any) -> None:
        data = json.dumps(value, ensure_ascii=False)
        async with self._db.acquire() as conn:
            await conn.execute(
                "INSERT INTO plugin_kv (plugin, key, value, updated_at) VALUES ($1, $2, $3, $4)"
                " ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value,"
                " updated_at = excluded.updated_at",
                plugin,
                key,
                data,
                time.time(),
            )

    async def kv_increment(self, plugin: str, key: str) -> int:
        """Add one to an integer value (missing: 0) and return it, atomically: the upsert
        holds the row lock, so concurrent callers in any process queue on it."""
        async with self._db.acquire() as conn:
            value = await conn.fetchval(
                "INSERT INTO plugin_kv AS kv (plugin, key, value, updated_at)"
                " VALUES ($1, $2, '1', $3) ON CONFLICT (plugin, key) DO UPDATE SET"
                " value = (CASE WHEN kv.value ~ '^-?[0-9]{1,18}$' THEN kv.value::bigint"
                " ELSE 0 END + 1)::text, updated_at = excluded.updated_at RETURNING value",
                plugin,
                key,
                time.time(),
            )
        return int(json.loads(value))

    async def kv_delete(self, plugin: str, key: str) -> bool:
        async with self._db.acquire() as conn:
            gone = await conn.fetchval(
                "DELETE FROM plugin_kv WHERE plugin = $1 AND key = $2 RETURNING 1", plugin, key
            )
        return gone is not None

    async def kv_items(self, plugin: str, prefix: str = "") -> list[tuple[str, Any]]:
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                "SELECT key, value FROM plugin_kv WHERE plugin = $1 AND starts_with(key, $2)"
                ' ORDER BY key COLLATE "C"',
                plugin,
                prefix,
            )
        return [(row["key"], json.loads(row["value"])) for row in rows]
