"""The embedded default store: SQLite in WAL mode through aiosqlite.

A turn is one row: the user's text, and once answered the whole answer (assistant messages,
tool calls, tool results) as a JSON array, so every turn write is a single atomic statement and
one trip to aiosqlite's thread. Two connections: one writer, used by one coroutine at a time (an
asyncio lock; coroutines sharing one aiosqlite connection would otherwise share, and commit, each
other's transaction), and one reader that only ever sees committed data. Loading the context
window walks the ``(conv_key, id)`` index backwards in one query, so it costs O(window) however
long the history is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from bot.context import Scope
from bot.errors import StoreError
from bot.history import owners
from bot.history.migrations import MIGRATIONS, SCHEMA_VERSION
from bot.history.scopes import RESCOPE_MEMORIES, RESCOPE_TURNS
from bot.history.store import (
    NO_USAGE,
    ChatPreferences,
    ClearResult,
    DailyUsage,
    HistoryStats,
    NewTurn,
    Overheard,
    StoredTurn,
    TurnStatus,
    Usage,
)
from bot.history.window_cache import WindowCache

log = logging.getLogger(__name__)

_PRAGMAS = (
    "PRAGMA busy_timeout=10000",  # first: the others may wait for another process's lock
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
)
# A turn still pending this long after it began belongs to a process that died mid-answer.
STALE_PENDING_SECONDS = 900.0


class SQLiteStore:
    """History and chat preferences in one SQLite file. Use as ``async with SQLiteStore(path)``."""

    def __init__(self, path: str | Path, *, cache_windows: bool = True) -> None:
        self.path = Path(path)
        self.cache_windows = cache_windows
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()
        self._windows = WindowCache()
        self.owner = owners.new_owner()  # this instance, on every turn it begins

    async def __aenter__(self) -> SQLiteStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        owners.register(self.owner)
        try:
            self._writer = await self._connect()
            await self._migrate(self._writer)
            await self._close_interrupted_turns(self._writer)
            self._reader = await self._connect()
        except sqlite3.DatabaseError as exc:
            await self.close()
            raise StoreError(f"cannot open history database {self.path}: {exc}") from exc
        except BaseException:
            await self.close()
            raise

    async def _connect(self) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        try:
            for pragma in _PRAGMAS:
                await conn.execute(pragma)
        except BaseException:
            await conn.close()  # its thread would otherwise keep the process alive at exit
            raise
        return conn

    async def close(self) -> None:
        owners.unregister(self.owner)
        self._windows.clear()
        for conn in (self._reader, self._writer):
            if conn is not None:
                await conn.close()
        self._reader = self._writer = None

    async def _migrate(self, conn: aiosqlite.Connection) -> None:
        for number in range(SCHEMA_VERSION):
            await conn.execute("BEGIN IMMEDIATE")  # read the version under the write lock:
            rows = await conn.execute_fetchall("PRAGMA user_version")  # two processes may race
            version = int(next(iter(rows))[0])
            if version > number:
                await conn.execute("ROLLBACK")
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path} has schema version {version}, newer than this Parlour "
                        f"understands ({SCHEMA_VERSION}); upgrade Parlour"
                    )
                continue
            try:
                for statement in _statements(MIGRATIONS[number]):
                    await conn.execute(statement)
                await conn.execute(f"PRAGMA user_version = {number + 1}")
                await conn.execute("COMMIT")
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            log.info("history schema migrated to version %d path=%s", number + 1, self.path)

    async def close_interrupted_turns(self) -> int:
        """Mark turns left pending by a process that died (kill -9, power loss) unanswered,
        with error ``interrupted``.

        A turn whose owner process is certainly gone (:mod:`bot.history.owners`) is closed at
        once; any other only when older than ``STALE_PENDING_SECONDS``: another live process
        (the console next to the bot) may share the file, and no live turn runs that long. Run
        at open and by the App's housekeeping job.
        """
        async with self._writing() as conn:
            closed = await self._close_interrupted_turns(conn)
        if closed:
            self._windows.clear()
        return closed

    async def _close_interrupted_turns(self, conn: aiosqlite.Connection) -> int:
        rows = await conn.execute_fetchall(
            "SELECT DISTINCT owner FROM turns WHERE status = 'pending' AND owner IS NOT NULL"
        )
        dead = [str(owner) for (owner,) in rows if owners.is_dead(str(owner))]
        gone = f" OR owner IN ({','.join('?' * len(dead))})" if dead else ""
        cursor = await conn.execute(
            "UPDATE turns SET status = 'unanswered', error = 'interrupted', completed_at = ?"
            f" WHERE status = 'pending' AND (created_at < ?{gone})",
            (time.time(), time.time() - STALE_PENDING_SECONDS, *dead),
        )
        if cursor.rowcount:
            log.warning(
                "marked %d interrupted turns unanswered path=%s", cursor.rowcount, self.path
            )
        return cursor.rowcount

    @property
    def _read(self) -> aiosqlite.Connection:
        if self._reader is None:
            raise StoreError("the history store is not open")
        return self._reader

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[aiosqlite.Connection]:
        """Exclusive use of the writer connection.

        Most writes are one autocommit statement (one trip to aiosqlite's thread); the lock
        keeps them out of a multi-statement transaction another coroutine has open.
        """
        if self._writer is None:
            raise StoreError("the history store is not open")
        async with self._write_lock:
            yield self._writer

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._writing() as conn:
            try:
                await conn.execute("BEGIN IMMEDIATE")
                yield conn
            except BaseException:
                # Even when cancelled, the BEGIN may already sit in aiosqlite's queue; a ROLLBACK
                # queued behind it always closes the transaction before the next writer's work.
                with contextlib.suppress(sqlite3.OperationalError):
                    await asyncio.shield(conn.execute("ROLLBACK"))
                raise
            await asyncio.shield(conn.execute("COMMIT"))

    # -- turns -----------------------------------------------------------------------------

    async def begin_turn(self, turn: NewTurn) -> int:
        if turn.overheard:
            return await self._begin_with_overheard(turn)
        async with self._writing() as conn:
            row = await conn.execute_insert(_INSERT_TURN, (*_turn_row(turn), self.owner))
        if row is None:
            raise StoreError("the database returned no id for a new turn")
        turn_id = int(row[0])
        user = {"role": "user", "content": turn.text}
        stored = StoredTurn(turn_id, turn.user_id, turn.user_name, TurnStatus.PENDING, (user,))
        self._windows.began(turn.conversation_key, stored)
        return turn_id

    async def _begin_with_overheard(self, turn: NewTurn) -> int:
        """Move the chosen overheard messages in as context rows, then the user's turn."""
        marks = ",".join("?" * len(turn.overheard))
        async with self._transaction() as conn:
            await conn.execute(
                "INSERT INTO turns (conv_key, chat_key, user_id, user_name, platform_message_id,"
                " user_text, status, created_at, completed_at) SELECT conv_key, chat_key, user_id,"
                " user_name, platform_message_id, text, 'context', created_at, created_at"
                f" FROM overheard WHERE conv_key = ? AND id IN ({marks}) ORDER BY id",
                (turn.conversation_key, *turn.overheard),
            )
            # The rest is older than the chosen ones or superseded: the turn answers the chatter.
            await conn.execute(
                "DELETE FROM overheard WHERE conv_key = ? AND id <= ?",
                (turn.conversation_key, max(turn.overheard)),
            )
            row = await conn.execute_insert(_INSERT_TURN, (*_turn_row(turn), self.owner))
        if row is None:
            raise StoreError("the database returned no id for a new turn")
        self._windows.forget(turn.conversation_key)
        return int(row[0])

    async def record_overheard(self, message: NewTurn, keep: int) -> None:
        async with self._transaction() as conn:
            await conn.execute(
                "INSERT INTO overheard (conv_key, chat_key, user_id, user_name,"
                " platform_message_id, text, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                _turn_row(message),
            )
            await conn.execute(
                "DELETE FROM overheard WHERE conv_key = ? AND id NOT IN"
                " (SELECT id FROM overheard WHERE conv_key = ? ORDER BY id DESC LIMIT ?)",
                (message.conversation_key, message.conversation_key, max(keep, 0)),
            )

    async def load_overheard(self, conversation_key: str, since: float) -> list[Overheard]:
        rows = await self._read.execute_fetchall(
            "SELECT id, user_id, user_name, text, created_at FROM overheard"
            " WHERE conv_key = ? AND created_at >= ? ORDER BY id",
            (conversation_key, since),
        )
        return [
            Overheard(int(i), str(user), str(name), str(text), float(at))
            for i, user, name, text, at in rows
        ]

    async def complete_turn(
        self, turn_id: int, messages: Sequence[Mapping[str, Any]], usage: Usage, model: str
    ) -> None:
        # The whole answer lands in one UPDATE: atomic without a multi-statement transaction.
        plain = [_plain(m) for m in messages]
        answer = json.dumps(plain, ensure_ascii=False)
        async with self._writing() as conn:
            await conn.execute(
                "UPDATE turns SET status = 'answered', answer = ?, model = ?, prompt_tokens = ?,"
                " completion_tokens = ?, completed_at = ? WHERE id = ?",
                (answer, model, usage.prompt_tokens, usage.completion_tokens, time.time(), turn_id),
            )
        self._windows.completed(turn_id, plain)

    async def fail_turn(self, turn_id: int, reason: str, usage: Usage = NO_USAGE) -> None:
        async with self._writing() as conn:
            await conn.execute(
                "UPDATE turns SET status = 'unanswered', error = ?, completed_at = ?,"
                " prompt_tokens = ?, completion_tokens = ? WHERE id = ? AND status = 'pending'",
                (
                    reason[:500],
                    time.time(),
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    turn_id,
                ),
            )
        self._windows.failed(turn_id)

    async def mark_undelivered(self, turn_id: int, reason: str) -> bool:
        async with self._writing() as conn:
            rows = await conn.execute_fetchall(
                "UPDATE turns SET status = 'undelivered', error = ? WHERE id = ?"
                " AND status = 'answered' RETURNING conv_key",
                (reason[:500], turn_id),
            )
        marked = [str(key) for (key,) in rows]
        for key in marked:
            self._windows.forget(key)
        return bool(marked)

    async def load_window(self, conversation_key: str, max_turns: int) -> list[StoredTurn]:
        epoch = self._windows.epoch
        version = await self._external_version() if self.cache_windows else -1
        cached = self._windows.get(conversation_key, max_turns, version)
        if cached is not None:
            return cached
        rows = list(
            await self._read.execute_fetchall(_WINDOW, (conversation_key,) * 3 + (max_turns,))
        )
        turns = [
            StoredTurn(
                turn_id=int(turn_id),
                user_id=str(user_id),
                user_name=str(user_name),
                status=TurnStatus(status),
                messages=_turn_messages(user_text, answer),
            )
            for turn_id, user_id, user_name, status, user_text, answer, _ in reversed(rows)
        ]
        if rows and self.cache_windows:
            self._windows.put(
                conversation_key,
                str(rows[0][6]),
                turns,
                capacity=max_turns,
                version=version,
                epoch=epoch,
            )
        return list(turns)

    async def _external_version(self) -> int:
        """Changes whenever another connection (another process) commits to the database."""
        if self._writer is None:
            raise StoreError("the history store is not open")
        rows = await self._writer.execute_fetchall("PRAGMA data_version")
        return int(next(iter(rows))[0])

    # -- resets, clears, stats, export -----------------------------------------------------

    async def reset(self, conversation_key: str, chat_key: str, by_user: str) -> None:
        async with self._transaction() as conn:
            # Chatter overheard before the reset, and the summary, are forgotten with the rest.
            await conn.execute("DELETE FROM overheard WHERE conv_key = ?", (conversation_key,))
            await conn.execute("DELETE FROM summaries WHERE conv_key = ?", (conversation_key,))
            await conn.execute(
                "INSERT INTO resets (conv_key, chat_key, after_turn_id, by_user, at)"
                " VALUES (?, ?, (SELECT coalesce(max(id), 0) FROM turns), ?, ?)"
                " ON CONFLICT (conv_key) DO UPDATE SET after_turn_id = excluded.after_turn_id,"
                " by_user = excluded.by_user, at = excluded.at",
                (conversation_key, chat_key, by_user, time.time()),
            )
        self._windows.forget(conversation_key)

    async def clear_chat(self, chat_key: str, actor_id: str, actor_name: str) -> ClearResult:
        async with self._transaction() as conn:
            rows = await conn.execute_fetchall(
                "SELECT count(*), coalesce(sum(1 + coalesce(json_array_length(answer), 0)), 0)"
                " FROM turns WHERE chat_key = ?",
                (chat_key,),
            )
            turns, messages = (int(v) for v in next(iter(rows)))
            await conn.execute("DELETE FROM turns WHERE chat_key = ?", (chat_key,))
            await conn.execute("DELETE FROM resets WHERE chat_key = ?", (chat_key,))
            await conn.execute("DELETE FROM overheard WHERE chat_key = ?", (chat_key,))
            await conn.execute("DELETE FROM deliveries WHERE chat_key = ?", (chat_key,))
            await conn.execute("DELETE FROM memories WHERE chat_key = ?", (chat_key,))
            await conn.execute("DELETE FROM summaries WHERE chat_key = ?", (chat_key,))
            await conn.execute(
                "INSERT INTO clear_audit (chat_key, actor_id, actor_name, at, deleted_turns,"
                " deleted_messages) VALUES (?, ?, ?, ?, ?, ?)",
                (chat_key, actor_id, actor_name, time.time(), turns, messages),
            )
        self._windows.forget_chat(chat_key)
        log.info("chat cleared chat=%s actor=%s turns=%d", chat_key, actor_id, turns)
        return ClearResult(turns=turns, messages=messages)

    async def clear_audit(self, chat_key: str) -> list[dict[str, Any]]:
        rows = await self._read.execute_fetchall(
            "SELECT actor_id, actor_name, at, deleted_turns, deleted_messages FROM clear_audit"
            " WHERE chat_key = ? ORDER BY id",
            (chat_key,),
        )
        keys = ("actor_id", "actor_name", "at", "deleted_turns", "deleted_messages")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    async def stats(self, conversation_key: str) -> HistoryStats:
        rows = await self._read.execute_fetchall(
            "SELECT count(*), coalesce(sum(id > coalesce("
            "   (SELECT after_turn_id FROM resets WHERE conv_key = ?), 0)), 0),"
            " coalesce(sum(status = 'unanswered'), 0), coalesce(sum(prompt_tokens), 0),"
            " coalesce(sum(completion_tokens), 0), coalesce(sum(status = 'undelivered'), 0)"
            " FROM turns WHERE conv_key = ? AND status != 'context'",
            (conversation_key, conversation_key),
        )
        total, in_context, unanswered, prompt, completion, undelivered = next(iter(rows))
        return HistoryStats(
            turns_in_context=int(in_context),
            turns_stored=int(total),
            unanswered=int(unanswered),
            prompt_tokens=int(prompt),
            completion_tokens=int(completion),
            undelivered=int(undelivered),
        )

    async def export(self, conversation_key: str) -> AsyncGenerator[dict[str, Any], None]:
        async with self._read.execute(
            "SELECT id, user_id, user_name, status, user_text, answer, created_at, completed_at"
            " FROM turns WHERE conv_key = ? ORDER BY id",
            (conversation_key,),
        ) as cursor:
            async for row in cursor:
                turn_id, user_id, user_name, status, user_text, answer, created, completed = row
                for seq, message in enumerate(_turn_messages(user_text, answer)):
                    record: dict[str, Any] = {
                        "turn": turn_id,
                        "seq": seq,
                        **message,
                        "status": status,
                        "created_at": created if seq == 0 else completed,
                    }
                    if seq == 0:
                        record["user_id"] = user_id
                        record["user_name"] = user_name
                    yield record

    async def migrate_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """Re-key every row of the old chat; the conversation keys keep their suffixes."""
        start = len(old_chat_key) + 1
        async with self._transaction() as conn:
            cursor = await conn.execute(
                "UPDATE turns SET chat_key = ?, conv_key = ? || substr(conv_key, ?)"
                " WHERE chat_key = ?",
                (new_chat_key, new_chat_key, start, old_chat_key),
            )
            moved = cursor.rowcount
            for table in ("resets", "overheard", "summaries"):
                # OR REPLACE: the new chat may already have its own (newer) row for a key.
                await conn.execute(
                    f"UPDATE OR REPLACE {table} SET chat_key = ?,"
                    " conv_key = ? || substr(conv_key, ?) WHERE chat_key = ?",
                    (new_chat_key, new_chat_key, start, old_chat_key),
                )
            await conn.execute(
                "UPDATE OR IGNORE chat_preferences SET chat_key = ? WHERE chat_key = ?",
                (new_chat_key, old_chat_key),
            )
            # Today's spending follows the chat, so a migration does not refill its budget.
            await conn.execute(
                "INSERT INTO usage_daily SELECT day, ?, user_id, user_name, turns, prompt_tokens,"
                " completion_tokens FROM usage_daily WHERE chat_key = ? ON CONFLICT"
                " (day, chat_key, user_id) DO UPDATE SET turns = turns + excluded.turns,"
                " prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = completion_tokens + excluded.completion_tokens",
                (new_chat_key, old_chat_key),
            )
            await conn.execute("DELETE FROM usage_daily WHERE chat_key = ?", (old_chat_key,))
            await conn.execute(
                "UPDATE clear_audit SET chat_key = ? WHERE chat_key = ?",
                (new_chat_key, old_chat_key),
            )
            await conn.execute(  # a memory keeps the conversation it was said in
                "UPDATE memories SET chat_key = ?, conv_key = ? || substr(conv_key, ?)"
                " WHERE chat_key = ?",
                (new_chat_key, new_chat_key, start, old_chat_key),
            )
            # The full-text indexes name each row's chat and conversation (bot.memory.store).
            for statement in (*RESCOPE_MEMORIES, *RESCOPE_TURNS):
                await conn.execute(statement, (new_chat_key,))
        self._windows.forget_chat(old_chat_key)
        self._windows.forget_chat(new_chat_key)
        log.info("chat migrated old=%s new=%s turns=%d", old_chat_key, new_chat_key, moved)
        return moved

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
        rows = await self._read.execute_fetchall(sql, args)
        return int(next(iter(rows))[0])

    async def user_tokens_on(self, day: str, platform: str, user_id: str) -> int:
        prefix = f"{platform}:"
        rows = await self._read.execute_fetchall(
            "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM usage_daily"
            " WHERE day = ? AND user_id = ? AND substr(chat_key, 1, ?) = ?",
            (day, user_id, len(prefix), prefix),
        )
        return int(next(iter(rows))[0])

    async def book_usage(self, chat_key: str, user_id: str, user_name: str, usage: Usage) -> None:
        async with self._writing() as conn:
            await conn.execute(
                "INSERT INTO usage_daily (day, chat_key, user_id, user_name, prompt_tokens,"
                " completion_tokens) VALUES (date('now'), ?, ?, ?, ?, ?) ON CONFLICT"
                " (day, chat_key, user_id) DO UPDATE SET"
                " prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = completion_tokens + excluded.completion_tokens",
                (chat_key, user_id, user_name, usage.prompt_tokens, usage.completion_tokens),
            )

    async def daily_usage(self, since_day: str, chat_key: str | None = None) -> list[DailyUsage]:
        sql = (
            "SELECT day, chat_key, user_id, user_name, turns, prompt_tokens, completion_tokens"
            " FROM usage_daily WHERE day >= ?"
        )
        args = [since_day]
        if chat_key is not None:
            sql += " AND chat_key = ?"
            args.append(chat_key)
        rows = await self._read.execute_fetchall(sql + " ORDER BY day, chat_key, user_id", args)
        return [
            DailyUsage(day, chat, user, name, turns, Usage(prompt, completion))
            for day, chat, user, name, turns, prompt, completion in rows
        ]

    async def conversations(self) -> list[tuple[str, int]]:
        """Every conversation key with its turn count (for ``history export`` discovery)."""
        rows = await self._read.execute_fetchall(
            "SELECT conv_key, count(*) FROM turns GROUP BY conv_key ORDER BY conv_key"
        )
        return [(str(k), int(n)) for k, n in rows]

    # -- plugin key-value store and retention ------------------------------------------------

    async def kv_get(self, plugin: str, key: str) -> Any:
        rows = await self._read.execute_fetchall(
            "SELECT value FROM plugin_kv WHERE plugin = ? AND key = ?", (plugin, key)
        )
        row = next(iter(rows), None)
        return None if row is None else json.loads(row[0])

    async def kv_set(self, plugin: str, key: str, value: Any) -> None:
        data = json.dumps(value, ensure_ascii=False)
        async with self._writing() as conn:
            await conn.execute(
                "INSERT INTO plugin_kv (plugin, key, value, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value,"
                " updated_at = excluded.updated_at",
                (plugin, key, data, time.time()),
            )

    async def kv_increment(self, plugin: str, key: str) -> int:
        """Add one to an integer value (missing: 0) and return it, atomically."""
        async with self._writing() as conn:
            rows = await conn.execute_fetchall(
                "INSERT INTO plugin_kv (plugin, key, value, updated_at) VALUES (?, ?, '1', ?)"
                " ON CONFLICT (plugin, key) DO UPDATE SET"
                " value = CAST(value AS INTEGER) + 1, updated_at = excluded.updated_at"
                " RETURNING value",
                (plugin, key, time.time()),
            )
        return int(json.loads(next(iter(rows))[0]))

    async def kv_delete(self, plugin: str, key: str) -> bool:
        async with self._writing() as conn:
            cursor = await conn.execute(
                "DELETE FROM plugin_kv WHERE plugin = ? AND key = ?", (plugin, key)
            )
        return cursor.rowcount > 0

    async def kv_items(self, plugin: str, prefix: str = "") -> list[tuple[str, Any]]:
        rows = await self._read.execute_fetchall(
            "SELECT key, value FROM plugin_kv WHERE plugin = ? AND substr(key, 1, ?) = ?"
            " ORDER BY key",
            (plugin, len(prefix), prefix),
        )
        return [(str(key), json.loads(value)) for key, value in rows]

    async def delete_older_than(self, seconds: float) -> int:
        """History retention: drop turns (and overheard messages) older than ``seconds``."""
        cutoff = time.time() - seconds
        async with self._transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM turns WHERE created_at < ? AND status != 'pending'", (cutoff,)
            )
            deleted = cursor.rowcount
            await conn.execute("DELETE FROM overheard WHERE created_at < ?", (cutoff,))
            await conn.execute("DELETE FROM deliveries WHERE created_at < ?", (cutoff,))
            await conn.execute("DELETE FROM summaries WHERE updated_at < ?", (cutoff,))
        if deleted:
            self._windows.clear()
            log.info("retention: deleted %d turns older than %.0f days", deleted, seconds / 86400)
        return deleted

    # -- chat preferences ------------------------------------------------------------------

    async def load_preferences(self) -> dict[str, ChatPreferences]:
        rows = await self._read.execute_fetchall(
            "SELECT chat_key, scope, system_prompt FROM chat_preferences"
        )
        return {
            str(key): ChatPreferences(scope=Scope(scope) if scope else None, system_prompt=prompt)
            for key, scope, prompt in rows
        }

    async def save_preferences(self, chat_key: str, prefs: ChatPreferences) -> None:
        async with self._writing() as conn:  # one upsert: atomic on its own
            await conn.execute(
                "INSERT INTO chat_preferences (chat_key, scope, system_prompt, updated_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (chat_key) DO UPDATE SET scope = excluded.scope,"
                " system_prompt = excluded.system_prompt, updated_at = excluded.updated_at",
                (
                    chat_key,
                    prefs.scope.value if prefs.scope else None,
                    prefs.system_prompt,
                    time.time(),
                ),
            )


# The newest N turns after the last reset, with the overheard context rows among them (those do
# not count toward N). Walks the (conv_key, id) index backwards: O(window), whatever the size.
_WINDOW = """
WITH after AS (
    SELECT coalesce((SELECT after_turn_id FROM resets WHERE conv_key = ?1), 0) AS id
),
oldest AS (
    SELECT coalesce(
        (SELECT id FROM turns WHERE conv_key = ?2 AND id > (SELECT id FROM after)
            AND status != 'context' ORDER BY id DESC LIMIT 1 OFFSET ?4 - 1),
        (SELECT id FROM after) + 1
    ) AS id
)
SELECT id, user_id, user_name, status, user_text, answer, chat_key FROM turns
WHERE conv_key = ?3 AND id >= (SELECT id FROM oldest) AND id > (SELECT id FROM after)
ORDER BY id DESC
"""

_INSERT_TURN = (
    "INSERT INTO turns (conv_key, chat_key, user_id, user_name, platform_message_id,"
    " user_text, status, created_at, owner) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)"
)


def _turn_row(turn: NewTurn) -> tuple[str, str, str, str, str | None, str, float]:
    return (
        turn.conversation_key,
        turn.chat_key,
        turn.user_id,
        turn.user_name,
        turn.platform_message_id,
        turn.text,
        time.time(),
    )


def _statements(script: str) -> list[str]:
    """Split a migration at the ``;`` that end statements, not those inside one.

    A trigger body (``BEGIN ...; END;``), a string literal or a comment may hold a ``;``:
    pieces are joined until SQLite itself calls the text a complete statement. (Not
    ``executescript``: it commits, and a step must run inside the runner's transaction.)
    """
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\r\n;"):
                statements.append(pending.strip()[:-1].strip())
            pending = ""
    if pending.strip(" \t\r\n;"):  # a last statement without its ';'
        statements.append(pending.strip()[:-1].strip())
    return statements


def _plain(message: Mapping[str, Any]) -> dict[str, Any]:
    """Only the fields the API accepts back; drops None-valued extras."""
    keep = ("role", "content", "tool_calls", "tool_call_id", "name")
    return {k: message[k] for k in keep if k in message and (k == "content" or message[k])}


def _turn_messages(user_text: str, answer: str | None) -> tuple[dict[str, Any], ...]:
    user: dict[str, Any] = {"role": "user", "content": user_text}
    if not answer:
        return (user,)
    return (user, *json.loads(answer))
