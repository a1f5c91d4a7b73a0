"""The usage ledger (``usage_daily``, booked by trigger ``turns_usage``) and plugin key-value
data (``plugin_kv``), in SQLite."""

from __future__ import annotations

import json
import time
from typing import Any

from bot.storage.sqlite.part import Part
from bot.storage.values import DailyUsage, Usage


class SQLiteUsage(Part):
    async def tokens_on(
        self, day: str, chat_key: str | None = None, user_id: str | None = None
    ) -> int:
        sql = (
            "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM usage_daily"
            " WHERE day = ?"
        )
        args = [day]
        if chat_key is not None:
            sql += " AND chat_key = ?"
            args.append(chat_key)
        if user_id is not None:
            assert chat_key is not None, "usage is per user per chat"
            sql += " AND user_id = ?"
            args.append(user_id)
        rows = await self._db.reader.execute_fetchall(sql, args)
        return int(next(iter(rows))[0])

    async def user_tokens_on(self, day: str, platform: str, user_id: str) -> int:
        prefix = f"{platform}:"
        rows = await self._db.reader.execute_fetchall(
            "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM usage_daily"
            " WHERE day = ? AND user_id = ? AND substr(chat_key, 1, ?) = ?",
            (day, user_id, len(prefix), prefix),
        )
        return int(next(iter(rows))[0])

    async def user_usage_on(self, day: str, platform: str, user_id: str) -> Usage:
        prefix = f"{platform}:"
        rows = await self._db.reader.execute_fetchall(
            "SELECT coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),"
            " coalesce(sum(cached_tokens), 0) FROM usage_daily"
            " WHERE day = ? AND user_id = ? AND substr(chat_key, 1, ?) = ?",
            (day, user_id, len(prefix), prefix),
        )
        prompt, completion, cached = next(iter(rows))
        return Usage(int(prompt), int(completion), int(cached))

    async def book_usage(self, chat_key: str, user_id: str, user_name: str, usage: Usage) -> None:
        async with self._db.writing() as conn:
            await conn.execute(
                "INSERT INTO usage_daily (day, chat_key, user_id, user_name, prompt_tokens,"
                " completion_tokens, cached_tokens) VALUES (date('now'), ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (day, chat_key, user_id) DO UPDATE SET"
                " prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = completion_tokens + excluded.completion_tokens,"
                " cached_tokens = cached_tokens + excluded.cached_tokens",
                (
                    chat_key,
                    user_id,
                    user_name,
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    usage.cached_tokens,
                ),
            )

    async def daily_usage(self, since_day: str, chat_key: str | None = None) -> list[DailyUsage]:
        sql = (
            "SELECT day, chat_key, user_id, user_name, turns, prompt_tokens, completion_tokens,"
            " cached_tokens FROM usage_daily WHERE day >= ?"
        )
        args = [since_day]
        if chat_key is not None:
            sql += " AND chat_key = ?"
            args.append(chat_key)
        rows = await self._db.reader.execute_fetchall(
            sql + " ORDER BY day, chat_key, user_id", args
        )
        return [
            DailyUsage(day, chat, user, name, turns, Usage(prompt, completion, cached))
            for day, chat, user, name, turns, prompt, completion, cached in rows
        ]


class SQLiteKeyValue(Part):
    async def kv_get(self, plugin: str, key: str) -> Any:
        rows = await self._db.reader.execute_fetchall(
            "SELECT value FROM plugin_kv WHERE plugin = ? AND key = ?", (plugin, key)
        )
        row = next(iter(rows), None)
        return None if row is None else json.loads(row[0])

    async def kv_set(self, plugin: str, key: str, value: Any) -> None:
        data = json.dumps(value, ensure_ascii=False)
        async with self._db.writing() as conn:
            await conn.execute(
                "INSERT INTO plugin_kv (plugin, key, value, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value,"
                " updated_at = excluded.updated_at",
                (plugin, key, data, time.time()),
            )

    async def kv_increment(self, plugin: str, key: str) -> int:
        """Add one to an integer value (missing: 0) and return it, atomically."""
        async with self._db.writing() as conn:
            rows = await conn.execute_fetchall(
                "INSERT INTO plugin_kv (plugin, key, value, updated_at) VALUES (?, ?, '1', ?)"
                " ON CONFLICT (plugin, key) DO UPDATE SET"
                " value = CAST(value AS INTEGER) + 1, updated_at = excluded.updated_at"
                " RETURNING value",
                (plugin, key, time.time()),
            )
        return int(json.loads(next(iter(rows))[0]))

    async def kv_delete(self, plugin: str, key: str) -> bool:
        async with self._db.writing() as conn:
            cursor = await conn.execute(
                "DELETE FROM plugin_kv WHERE plugin = ? AND key = ?", (plugin, key)
            )
        return cursor.rowcount > 0

    async def kv_items(self, plugin: str, prefix: str = "") -> list[tuple[str, Any]]:
        rows = await self._db.reader.execute_fetchall(
            "SELECT key, value FROM plugin_kv WHERE plugin = ? AND substr(key, 1, ?) = ?"
            " ORDER BY key",
            (plugin, len(prefix), prefix),
        )
        return [(str(key), json.loads(value)) for key, value in rows]
