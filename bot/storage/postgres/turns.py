"""Turns and the context window, in PostgreSQL.

A turn is one row, as in SQLite (:mod:`bot.storage.sqlite.turns`): the user's text, and once
answered the whole answer as a JSON array, so each step is one autocommit statement.

**Arrival order.** An identity hands out ids when a row is inserted, not when it commits: two
replicas may commit ids 11 then 10, and a reset reading ``max(id)`` between the two would put
its cut above a turn that became visible only after it. So every statement that adds turns
takes the transaction-level advisory lock ``turn-order`` of this schema, as does a reset: ids
become visible in the order they were handed out, and a reset's cut is exactly the newest turn
stored when it ran. The lock is held for one INSERT and its commit.

**No window cache.** Another replica may write at any moment, so a cached window would need a
validation round trip per load (0.05 ms) and a per-conversation version kept up by every turn
write; all it could save is parsing and fetching 50 turns -- ``load_window`` takes about 0.6 ms
end to end at 10^6 and 10^7 rows (docs/scaling.md), next to seconds for the model. Every
``load_window`` reads the database; ``cache_windows`` is accepted and has no effect here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg

from bot.storage.answers import answer_json, api_messages
from bot.storage.postgres.batch import Batch, columns
from bot.storage.postgres.connection import Database, PostgresDialect, PostgresSeam
from bot.storage.sql.history import TURN_ORDER_LOCK
from bot.storage.sql.seam import NoWindows
from bot.storage.sql.summaries import LAST_ID, TURN_COLUMNS, stored_turn
from bot.storage.sql.turns import TurnRows, turn_row
from bot.values import (
    NewTurn,
    Overheard,
    PromptRows,
    StoredTurn,
    TurnStatus,
    Usage,
    WindowMark,
)

__all__ = ["LAST_ID", "PostgresTurns", "prompt_rows_sql", "window_page"]

_AFTER_RESET = "coalesce((SELECT after_turn_id FROM resets WHERE conv_key = $1), 0)"


def window_page(max_turns: int) -> str:
    """One page of the window walk: turns after the last reset and before ``$2``, newest
    first (:meth:`PostgresDialect.conversation_page`: O(page) whatever the table's size)."""
    return PostgresDialect().conversation_page(
        TURN_COLUMNS, limit=max_turns, after=_AFTER_RESET, before="$2", newest_first=True
    )


# One statement: the lock (CTE) is taken before the identity hands out the id, and held until
# the statement's own commit.
_INSERT_TURN = (
    "WITH ordered AS (SELECT pg_advisory_xact_lock($1))"
    " INSERT INTO turns (conv_key, chat_key, user_id, user_name, platform_message_id,"
    " user_text, status, created_at, owner)"
    " SELECT $2, $3, $4, $5, $6, $7, 'pending', $8, $9 FROM ordered RETURNING id"
)


# Several turns in one statement, under one taking of the lock: ids in the order given.
_INSERT_TURNS = (
    "WITH ordered AS (SELECT pg_advisory_xact_lock($1))"
    " INSERT INTO turns (conv_key, chat_key, user_id, user_name, platform_message_id,"
    " user_text, status, created_at, owner)"
    " SELECT r.conv_key, r.chat_key, r.user_id, r.user_name, r.message_id, r.user_text,"
    " 'pending', r.created_at, $9 FROM ordered, unnest($2::text[], $3::text[], $4::text[],"
    " $5::text[], $6::text[], $7::text[], $8::float8[]) WITH ORDINALITY"
    " AS r(conv_key, chat_key, user_id, user_name, message_id, user_text, created_at, n)"
    " ORDER BY r.n RETURNING id"
)


# Several answers in one statement (trigger turns_usage books each row's tokens, as for one).
_COMPLETE_TURNS = (
    "UPDATE turns AS t SET status = 'answered', answer = r.answer, model = r.model,"
    " prompt_tokens = r.prompt, completion_tokens = r.completion, cached_tokens = r.cached,"
    " completed_at = r.at FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[],"
    " $5::bigint[], $6::bigint[], $7::float8[])"
    " AS r(id, answer, model, prompt, completion, cached, at) WHERE t.id = r.id"
)

_Completion = tuple[int, Sequence[Mapping[str, Any]], Usage, str]


class PostgresTurns(TurnRows):
    """:class:`TurnRows` plus the locked insert and the answers' update (concurrent turns' in
    one statement each: :mod:`.batch`) and the paged window walk."""

    def __init__(self, db: Database, owner: str) -> None:
        super().__init__(PostgresSeam(db), NoWindows(), owner)
        self._db = db
        self._begins: Batch[NewTurn, int] = Batch(self._begin_many, self._begin_one)
        self._completes: Batch[_Completion, None] = Batch(self._complete_many, self._complete_one)

    async def complete_turn(
        self, turn_id: int, messages: Sequence[Mapping[str, Any]], usage: Usage, model: str
    ) -> None:
        await self._completes.run((turn_id, messages, usage, model))

    async def _complete_one(self, item: _Completion) -> None:
        await super().complete_turn(*item)

    async def _complete_many(self, items: Sequence[_Completion]) -> list[None]:
        rows = [
            (turn_id, answer_json(api_messages(messages)), model, usage.prompt_tokens,
             usage.completion_tokens, usage.cached_tokens, time.time())
            for turn_id, messages, usage, model in items
        ]  # fmt: skip
        await self.db.execute(_COMPLETE_TURNS, *columns(rows))
        return [None] * len(items)

    async def begin_turn(self, turn: NewTurn) -> int:
        if turn.overheard or turn.burst:
            return await self.begin_with_overheard(turn)
        return await self._begins.run(turn)

    async def _begin_one(self, turn: NewTurn) -> int:
        lock = self._db.lock_key(TURN_ORDER_LOCK)
        return self.new_id(
            await self.db.write(_INSERT_TURN, lock, *turn_row(turn, self.db), self.owner)
        )

    async def _begin_many(self, turns: Sequence[NewTurn]) -> list[int]:
        rows = [turn_row(turn, self.db) for turn in turns]
        lock = self._db.lock_key(TURN_ORDER_LOCK)
        found = await self.db.write(_INSERT_TURNS, lock, *columns(rows), self.owner)
        # One statement under the lock hands out ascending ids in row order.
        return sorted(int(row[0]) for row in found)

    async def load_window(self, conversation_key: str, max_turns: int) -> list[StoredTurn]:
        """Newest first, a page of ``max_turns`` rows at a time, until ``max_turns`` turns that
        are not context rows are in (one page unless overheard chatter sits among them)."""
        if max_turns <= 0:
            return []
        async with self._db.acquire() as conn:
            return await self._walk(conn, conversation_key, max_turns, None)

    async def load_prompt_rows(
        self, conversation_key: str, max_turns: int, overheard_since: float | None
    ) -> PromptRows:
        """The window's first page, the overheard rows and the mark in one statement (a turn's
        three reads were three round trips); further pages, when chatter fills the first, as
        :meth:`load_window` walks them."""
        since = float("inf") if overheard_since is None else overheard_since
        async with self._db.acquire() as conn:
            rows = await conn.fetch(
                prompt_rows_sql(max(max_turns, 0)), conversation_key, LAST_ID, since
            )
            page = sorted((tuple(r)[1:7] for r in rows if r[0] == 0), key=_newest_first)
            window = (
                await self._walk(conn, conversation_key, max_turns, page) if max_turns > 0 else []
            )
        overheard = sorted(
            (Overheard(int(r[1]), str(r[2]), str(r[3]), str(r[5]), float(r[7]))
             for r in rows if r[0] == 1),
            key=lambda o: o.overheard_id,
        )  # fmt: skip
        marks = [WindowMark(int(r[1]), str(r[5])) for r in rows if r[0] == 2]
        return PromptRows(window, overheard, marks[0] if marks else None)

    async def _walk(
        self,
        conn: asyncpg.Connection,
        conversation_key: str,
        max_turns: int,
        first: Sequence[Sequence[Any]] | None,
    ) -> list[StoredTurn]:
        """The window from its newest page down (``first``, when already read)."""
        window: list[StoredTurn] = []
        counted = 0
        before = LAST_ID
        sql = window_page(max_turns)
        rows = first
        while True:
            if rows is None:
                rows = list(await conn.fetch(sql, conversation_key, before))
            for row in rows:
                turn = stored_turn(row)
                window.append(turn)
                counted += turn.status is not TurnStatus.CONTEXT
                if counted == max_turns:
                    return window[::-1]
            if len(rows) < max_turns:
                return window[::-1]
            before = int(rows[-1][0])
            rows = None


def _newest_first(row: Sequence[Any]) -> int:
    return -int(row[0])


def prompt_rows_sql(max_turns: int) -> str:
    """The window's newest page (part 0), the overheard rows since ``$3`` (part 1) and the
    window mark (part 2) of conversation ``$1``, in one statement; rows in no set order."""
    return (
        "SELECT 0 AS part, id, user_id, user_name, status, user_text, answer,"
        f" NULL::float8 AS created_at FROM ({window_page(max_turns)}) AS page"
        " UNION ALL SELECT 1, id, user_id, user_name, NULL, text, NULL, created_at"
        " FROM overheard WHERE conv_key = $1 AND created_at >= $3 AND passed = 0"
        " UNION ALL SELECT 2, window_start, NULL, NULL, NULL, summary_shown, NULL, NULL"
        " FROM summaries WHERE conv_key = $1 AND window_start IS NOT NULL"
    )
