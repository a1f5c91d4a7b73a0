"""Replies on their way to a chat platform, recorded so a crash cannot leave them silent.

A reply's record is written when the adapter starts on it (where it goes and which user message
it answers), updated whenever its streamed preview changes (which message, what it shows), and
deleted once the reply is delivered or the user was told it failed. A record that survives is a
reply its process could not finish: after a kill -9 or power loss, or when the platform refused
even the "[interrupted]" mark. The next start of that platform's adapter takes the records of
processes that are gone (:mod:`bot.history.owners`) and edits each preview (or answers the
question) to say so, once.

Platform-neutral: ids are stored as text; each adapter knows what its own mean. Shares
:class:`~bot.history.sqlite.SQLiteStore`'s connections and writer lock, as ``MemoryStore`` does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bot.history import owners
from bot.history.sqlite import SQLiteStore

MAX_SHOWN_CHARS = 8000  # a preview message is far shorter; a bound on what one row holds


@dataclass(frozen=True, slots=True)
class Delivery:
    """One reply being delivered: where, in answer to what, and what its preview shows."""

    delivery_id: int
    owner: str
    platform: str
    chat_key: str
    chat_id: str
    thread_id: str | None
    reply_to: str | None  # the user's message, for a notice when no preview was shown
    message_id: str | None  # the preview message currently being edited, if any
    shown: str  # what that message shows (plain text)
    turn_id: int | None  # set once the answer is stored
    created_at: float


class DeliveryLog:
    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    async def begin(
        self,
        platform: str,
        chat_key: str,
        chat_id: str,
        thread_id: str | None = None,
        reply_to: str | None = None,
    ) -> int:
        now = time.time()
        async with self._store._writing() as conn:
            row = await conn.execute_insert(
                "INSERT INTO deliveries (owner, platform, chat_key, chat_id, thread_id, reply_to,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (self._store.owner, platform, chat_key, chat_id, thread_id, reply_to, now, now),
            )
        assert row is not None, "an INSERT returns its rowid"
        return int(row[0])

    async def showing(self, delivery_id: int, message_id: str, shown: str) -> None:
        """The preview is now ``message_id`` and shows ``shown``."""
        async with self._store._writing() as conn:
            await conn.execute(
                "UPDATE deliveries SET message_id = ?, shown = ?, updated_at = ? WHERE id = ?",
                (message_id, shown[:MAX_SHOWN_CHARS], time.time(), delivery_id),
            )

    async def answered(self, delivery_id: int, turn_id: int) -> None:
        """The answer is stored: a crash from here on leaves an answered turn undelivered."""
        async with self._store._writing() as conn:
            await conn.execute(
                "UPDATE deliveries SET turn_id = ?, updated_at = ? WHERE id = ?",
                (turn_id, time.time(), delivery_id),
            )

    async def undelivered(self, turn_id: int, reason: str) -> bool:
        """The turn's answer never reached the chat (see ``SQLiteStore.mark_undelivered``)."""
        return await self._store.mark_undelivered(turn_id, reason)

    async def done(self, delivery_id: int) -> None:
        async with self._store._writing() as conn:
            await conn.execute("DELETE FROM deliveries WHERE id = ?", (delivery_id,))

    async def orphans(self, platform: str, limit: int = 200) -> list[Delivery]:
        """Records of ``platform`` whose process is gone, oldest first (at most ``limit``)."""
        rows = await self._store._read.execute_fetchall(
            "SELECT id, owner, platform, chat_key, chat_id, thread_id, reply_to, message_id,"
            " shown, turn_id, created_at FROM deliveries WHERE platform = ? ORDER BY id",
            (platform,),
        )
        found: list[Delivery] = []
        for row in rows:
            record = Delivery(
                delivery_id=int(row[0]),
                owner=str(row[1]),
                platform=str(row[2]),
                chat_key=str(row[3]),
                chat_id=str(row[4]),
                thread_id=None if row[5] is None else str(row[5]),
                reply_to=None if row[6] is None else str(row[6]),
                message_id=None if row[7] is None else str(row[7]),
                shown=str(row[8]),
                turn_id=None if row[9] is None else int(row[9]),
                created_at=float(row[10]),
            )
            if owners.is_dead(record.owner):
                found.append(record)
                if len(found) >= limit:
                    break
        return found
