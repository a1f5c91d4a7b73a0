"""The usage ledger (``usage_daily``, booked by trigger ``turns_usage``) and plugin key-value
data (``plugin_kv``): :mod:`bot.storage.usage`, :mod:`bot.storage.kv`."""

from __future__ import annotations

import json
import time
from typing import Any

from bot.storage.sql.seam import Database, fetchval
from bot.values import DailyUsage, Usage

_SUM = "coalesce(sum(prompt_tokens + completion_tokens), 0)"


class UsageBook:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def tokens_on(
        self, day: str, chat_key: str | None = None, user_id: str | None = None
    ) -> int:
        sql, args = f"SELECT {_SUM} FROM usage_daily WHERE day = $1", [day]
        if chat_key is not None:  # conditions only for what is given: the key's index serves
            args.append(chat_key)
            sql += f" AND chat_key = ${len(args)}"
        if user_id is not None:
            assert chat_key is not None, "usage is per user per chat"
            args.append(user_id)
            sql += f" AND user_id = ${len(args)}"
        return int(await fetchval(self._db, sql, *args))

    async def user_tokens_on(self, day: str, platform: str, user_id: str) -> int:
        total = await fetchval(
            self._db,
            f"SELECT {_SUM} FROM usage_daily WHERE day = $1 AND user_id = $2"
            f" AND {self._db.dialect.starts_with('chat_key', '$3')}",
            day,
            user_id,
            f"{platform}:",
        )
        return int(total)

    async def budget_figures(
        self, day: str, chat_key: str, platform: str, user_id: str
    ) -> tuple[int, int, int]:
        mine = self._db.dialect.starts_with("chat_key", "$4")
        ((total, chat, user),) = await self._db.fetch(
            f"SELECT (SELECT {_SUM} FROM usage_daily WHERE day = $1),"
            f" (SELECT {_SUM} FROM usage_daily WHERE day = $1 AND chat_key = $2),"
            f" (SELECT {_SUM} FROM usage_daily WHERE day = $1 AND user_id = $3 AND {mine})",
            day,
            chat_key,
            user_id,
            f"{platform}:",
        )
        return int(total), int(chat), int(user)

    async def user_usage_on(self, day: str, platform: str, user_id: str) -> Usage:
        ((prompt, completion, cached),) = await self._db.fetch(
            "SELECT coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),"
            " coalesce(sum(cached_tokens), 0) FROM usage_daily WHERE day = $1 AND user_id = $2"
            f" AND {self._db.dialect.starts_with('chat_key', '$3')}",
            day,
            user_id,
            f"{platform}:",
        )
        return Usage(int(prompt), int(completion), int(cached))

    async def book_usage(self, chat_key: str, user_id: str, user_name: str, usage: Usage) -> None:
        await self._db.execute(
            "INSERT INTO usage_daily AS u (day, chat_key, user_id, user_name, prompt_tokens,"
            f" completion_tokens, cached_tokens) VALUES ({self._db.dialect.today}, $1, $2, $3,"
            " $4, $5, $6) ON CONFLICT (day, chat_key, user_id) DO UPDATE SET"
            " prompt_tokens = u.prompt_tokens + excluded.prompt_tokens,"
            " completion_tokens = u.completion_tokens + excluded.completion_tokens,"
            " cached_tokens = u.cached_tokens + excluded.cached_tokens",
            chat_key, user_id, user_name,
            usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens,
        )  # fmt: skip

    async def daily_usage(self, since_day: str, chat_key: str | None = None) -> list[DailyUsage]:
        b = self._db.dialect.bytewise
        sql, args = (
            "SELECT day, chat_key, user_id, user_name, turns, prompt_tokens, completion_tokens,"
            " cached_tokens FROM usage_daily WHERE day >= $1",
            [since_day],
        )
        if chat_key is not None:
            sql += " AND chat_key = $2"
            args.append(chat_key)
        rows = await self._db.fetch(f"{sql} ORDER BY day{b}, chat_key{b}, user_id{b}", *args)
        return [
            DailyUsage(day, chat, user, name, int(turns), Usage(int(p), int(c), int(cached)))
            for day, chat, user, name, turns, p, c, cached in rows
        ]


class PluginData:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def kv_get(self, plugin: str, key: str) -> Any:
        value = await fetchval(
            self._db, "SELECT value FROM plugin_kv WHERE plugin = $1 AND key = $2", plugin, key
        )
        return None if value is None else json.loads(value)

    async def kv_set(self, plugin: str, key: str, value: Any) -> None:
        await self._db.execute(
            "INSERT INTO plugin_kv (plugin, key, value, updated_at) VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at",
            plugin,
            key,
            json.dumps(value, ensure_ascii=False),
            time.time(),
        )

    async def kv_increment(self, plugin: str, key: str) -> int:
        """Add one to an integer value (missing: 0) and return it, atomically: one upsert, so
        concurrent callers in any process queue on the row."""
        rows = await self._db.write(
            "INSERT INTO plugin_kv AS kv (plugin, key, value, updated_at)"
            " VALUES ($1, $2, '1', $3) ON CONFLICT (plugin, key) DO UPDATE SET"
            f" value = CAST({self._db.dialect.int_of('kv.value')} + 1 AS TEXT),"
            " updated_at = excluded.updated_at RETURNING value",
            plugin,
            key,
            time.time(),
        )
        return int(json.loads(rows[0][0]))

    async def kv_delete(self, plugin: str, key: str) -> bool:
        gone = await self._db.execute(
            "DELETE FROM plugin_kv WHERE plugin = $1 AND key = $2", plugin, key
        )
        return gone > 0

    async def kv_items(self, plugin: str, prefix: str = "") -> list[tuple[str, Any]]:
        d = self._db.dialect
        rows = await self._db.fetch(
            f"SELECT key, value FROM plugin_kv WHERE plugin = $1 AND {d.starts_with('key', '$2')}"
            f" ORDER BY key{d.bytewise}",
            plugin,
            prefix,
        )
        return [(str(key), json.loads(value)) for key, value in rows]
