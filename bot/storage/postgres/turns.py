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

from bot.errors import StoreError
from bot.storage.answers import answer_json
from bot.storage.bounds import storable_text
from bot.storage.postgres.connection import Database
from bot.storage.postgres.seam import PostgresDialect
from bot.storage.sql.history import TURN_ORDER_LOCK
from bot.storage.sql.summaries import LAST_ID, TURN_COLUMNS, stored_turn
from bot.storage.values import NO_USAGE, NewTurn, StoredTurn, TurnStatus, Usage

__all__ = ["LAST_ID", "PostgresTurns", "window_page"]

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


class PostgresTurns:
    def __init__(self, db: Database, owner: str) -> None:
        self._db, self.owner = db, owner

    async def begin_turn(self, turn: NewTurn) -> int:
        if turn.overheard:
            return await self._begin_with_overheard(turn)
        async with self._db.acquire() as conn:
            turn_id = await conn.fetchval(
                _INSERT_TURN, self._db.lock_key(TURN_ORDER_LOCK), *_turn_row(turn), self.owner
            )
        if turn_id is None:
            raise StoreError("the database returned no id for a new turn")
        return int(turn_id)

    async def _begin_with_overheard(self, turn: NewTurn) -> int:
        """Move the chosen overheard messages in as context rows, then the user's turn."""
        async with self._db.transaction() as conn:
            # First, as a reset does: a lock taken after the row locks below could deadlock.
            await conn.execute(
                "SELECT pg_advisory_xact_lock($1)", self._db.lock_key(TURN_ORDER_LOCK)
            )
            await conn.execute(
                "INSERT INTO turns (conv_key, chat_key, user_id, user_name, platform_message_id,"
                " user_text, status, created_at, completed_at) SELECT conv_key, chat_key, user_id,"
                " user_name, platform_message_id, text, 'context', created_at, created_at"
                " FROM overheard WHERE conv_key = $1 AND id = any($2::bigint[]) ORDER BY id",
                turn.conversation_key,
                list(turn.overheard),
            )
            # The rest is older than the chosen ones or superseded: the turn answers the chatter.
            await conn.execute(
                "DELETE FROM overheard WHERE conv_key = $1 AND id <= $2",
                turn.conversation_key,
                max(turn.overheard),
            )
            turn_id = await conn.fetchval(
                "INSERT INTO turns (conv_key, chat_key, user_id, user_name, platform_message_id,"
                " user_text, status, created_at, owner)"
                " VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8) RETURNING id",
                *_turn_row(turn),
                self.owner,
            )
        if turn_id is None:
            raise StoreError("the database returned no id for a new turn")
        return int(turn_id)

    async def complete_turn(
        self, turn_id: int, messages: Sequence[Mapping[str, Any]], usage: Usage, model: str
    ) -> None:
        # The whole answer lands in one UPDATE; trigger turns_usage books the tokens in it.
        answer = answer_json(messages)
        async with self._db.acquire() as conn:
            await conn.execute(
                "UPDATE turns SET status = 'answered', answer = $1, model = $2,"
                " prompt_tokens = $3, completion_tokens = $4, cached_tokens = $5, completed_at = $6"
                " WHERE id = $7",
                answer,
                model,
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.cached_tokens,
                time.time(),
                turn_id,
            )

    async def fail_turn(self, turn_id: int, reason: str, usage: Usage = NO_USAGE) -> None:
        async with self._db.acquire() as conn:
            await conn.execute(
                "UPDATE turns SET status = 'unanswered', error = $1, completed_at = $2,"
                " prompt_tokens = $3, completion_tokens = $4, cached_tokens = $5"
                " WHERE id = $6 AND status = 'pending'",
                storable_text(reason[:500]),
                time.time(),
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.cached_tokens,
                turn_id,
            )

    async def mark_undelivered(self, turn_id: int, reason: str) -> bool:
        async with self._db.acquire() as conn:
            marked = await conn.fetchval(
                "UPDATE turns SET status = 'undelivered', error = $1 WHERE id = $2"
                " AND status = 'answered' RETURNING id",
                storable_text(reason[:500]),
                turn_id,
            )
        return marked is not None

    async def load_window(self, conversation_key: str, max_turns: int) -> list[StoredTurn]:
        """Newest first, a page of ``max_turns`` rows at a time, until ``max_turns`` turns that
        are not context rows are in (one page unless overheard chatter sits among them)."""
        if max_turns <= 0:
            return []
        window: list[StoredTurn] = []
        counted = 0
        before = LAST_ID
        sql = window_page(max_turns)
        async with self._db.acquire() as conn:
            while True:
                rows = await conn.fetch(sql, conversation_key, before)
                for row in rows:
                    turn = stored_turn(row)
                    window.append(turn)
                    counted += turn.status is not TurnStatus.CONTEXT
                    if counted == max_turns:
                        return window[::-1]
                if len(rows) < max_turns:
                    return window[::-1]
                before = int(rows[-1]["id"])


def _turn_row(turn: NewTurn) -> tuple[str, str, str, str, str | None, str, float]:
    return (
        turn.conversation_key,
        turn.chat_key,
        turn.user_id,
        storable_text(turn.user_name),
        turn.platform_message_id,
        storable_text(turn.text),
        time.time(),
    )
