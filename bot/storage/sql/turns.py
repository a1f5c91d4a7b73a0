"""Turn writes both backends run alike (:class:`bot.storage.turns.Turns`).

A turn is one row: the user's text, and once answered the whole answer as a JSON array, so each
step is one statement (beginning with overheard context: one transaction). Beginning a plain
turn (PostgreSQL takes the turn-order lock in the same statement) and loading the window
(SQLite's cache, PostgreSQL's paged walk) stay in ``bot.storage.<backend>.turns``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from bot.errors import StoreError
from bot.storage.answers import answer_json, api_messages
from bot.storage.sql.history import TURN_ORDER_LOCK
from bot.storage.sql.overheard import turn_row
from bot.storage.sql.seam import Database, Row, Windows
from bot.values import NO_USAGE, NewTurn, Usage

__all__ = ["INSERT_TURN", "TurnRows", "turn_row"]

INSERT_TURN = (
    "INSERT INTO turns (conv_key, chat_key, user_id, user_name, platform_message_id,"
    " user_text, status, created_at, owner)"
    " VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8) RETURNING id"
)


class TurnRows:
    def __init__(self, db: Database, windows: Windows, owner: str) -> None:
        self.db, self.windows, self.owner = db, windows, owner

    @staticmethod
    def new_id(rows: list[Row]) -> int:
        if not rows or rows[0][0] is None:
            raise StoreError("the database returned no id for a new turn")
        return int(rows[0][0])

    async def begin_with_overheard(self, turn: NewTurn) -> int:
        """Move the chosen overheard messages in as context rows, then the sender's earlier
        messages of a burst (context rows too, each as itself), then the user's turn: one
        transaction, so a crash leaves all of them or none."""
        dialect = self.db.dialect
        async with self.db.transaction() as tx:
            # First, as a reset does: a lock taken after the row locks below could deadlock.
            await tx.lock(TURN_ORDER_LOCK)
            if turn.overheard:
                await tx.execute(
                    "INSERT INTO turns (conv_key, chat_key, user_id, user_name,"
                    " platform_message_id, user_text, status, created_at, completed_at)"
                    " SELECT conv_key, chat_key, user_id, user_name, platform_message_id, text,"
                    " 'context', created_at, created_at FROM overheard WHERE conv_key = $1"
                    f" AND {dialect.in_array('id', '$2', 'bigint')} ORDER BY id",
                    turn.conversation_key,
                    dialect.array(turn.overheard),
                )
                # The moved ones are context rows now. The rest up to them is older than the
                # chosen ones: passed over, never in a prompt again, kept for /catchup (bounded
                # like all chatter, bot.conversation.overheard).
                await tx.execute(
                    "DELETE FROM overheard WHERE conv_key = $1"
                    f" AND {dialect.in_array('id', '$2', 'bigint')}",
                    turn.conversation_key,
                    dialect.array(turn.overheard),
                )
                await tx.execute(
                    "UPDATE overheard SET passed = 1 WHERE conv_key = $1 AND id <= $2",
                    turn.conversation_key,
                    max(turn.overheard),
                )
            for earlier in turn.burst:  # a handful at most (chat.burst_max_messages)
                await tx.execute(
                    "INSERT INTO turns (conv_key, chat_key, user_id, user_name,"
                    " platform_message_id, user_text, status, created_at, completed_at)"
                    " VALUES ($1, $2, $3, $4, $5, $6, 'context', $7, $7)",
                    turn.conversation_key,
                    turn.chat_key,
                    turn.user_id,
                    dialect.text(turn.user_name),
                    earlier.platform_message_id,
                    dialect.text(earlier.text),
                    earlier.created_at,
                )
            rows = await tx.fetch(INSERT_TURN, *turn_row(turn, self.db), self.owner)
        self.windows.forget(turn.conversation_key)
        return self.new_id(rows)

    async def complete_turn(
        self, turn_id: int, messages: Sequence[Mapping[str, Any]], usage: Usage, model: str
    ) -> None:
        # The whole answer lands in one UPDATE: atomic without a multi-statement transaction.
        # Trigger turns_usage books the tokens in the same statement.
        plain = api_messages(messages)
        await self.db.execute(
            "UPDATE turns SET status = 'answered', answer = $1, model = $2,"
            " prompt_tokens = $3, completion_tokens = $4, cached_tokens = $5, completed_at = $6"
            " WHERE id = $7",
            answer_json(plain),
            model,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens,
            time.time(),
            turn_id,
        )
        self.windows.completed(turn_id, plain)

    async def fail_turn(self, turn_id: int, reason: str, usage: Usage = NO_USAGE) -> None:
        await self.db.execute(
            "UPDATE turns SET status = 'unanswered', error = $1, completed_at = $2,"
            " prompt_tokens = $3, completion_tokens = $4, cached_tokens = $5"
            " WHERE id = $6 AND status = 'pending'",
            self.db.dialect.text(reason[:500]),
            time.time(),
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens,
            turn_id,
        )
        self.windows.failed(turn_id)

    async def mark_undelivered(self, turn_id: int, reason: str) -> bool:
        rows = await self.db.write(
            "UPDATE turns SET status = 'undelivered', error = $1 WHERE id = $2"
            " AND status = 'answered' RETURNING conv_key",
            self.db.dialect.text(reason[:500]),
            turn_id,
        )
        for (key,) in rows:
            self.windows.forget(str(key))
        return bool(rows)
