"""The chat directory in PostgreSQL: :class:`bot.storage.sql.directory.Directory` with the notes
of concurrent turns written as one statement (:mod:`.batch`): a burst of new chats noted them
one upsert each, one of a turn's few statements."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.storage.postgres.batch import Batch, columns
from bot.storage.postgres.connection import Database, PostgresSeam
from bot.storage.sql.directory import Directory
from bot.values import ChatEntry

__all__ = ["PostgresDirectory"]

# ON CONFLICT may not touch a row twice in one statement: the caller passes each chat once.
_NOTE_CHATS = (
    "INSERT INTO chats (platform, chat_id, chat_key, chat_type, title, updated_at)"
    " SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],"
    " $6::float8[]) ON CONFLICT (platform, chat_id) DO UPDATE SET"
    " chat_type = excluded.chat_type, title = excluded.title,"
    " updated_at = excluded.updated_at"
)


class PostgresDirectory(Directory):
    def __init__(self, db: Database) -> None:
        super().__init__(PostgresSeam(db))
        self._notes: Batch[ChatEntry, None] = Batch(self._note_many, super().note_chat)

    async def note_chat(self, entry: ChatEntry) -> None:
        await self._notes.run(entry)

    async def _note_many(self, entries: Sequence[ChatEntry]) -> list[None]:
        text = self._db.dialect.text
        now = time.time()
        latest = {(e.platform, e.chat_id): e for e in entries}  # the last note of a chat wins
        rows = [
            (e.platform, text(e.chat_id), text(f"{e.platform}:{e.chat_id}"), e.chat_type,
             text(e.title), now)
            for e in latest.values()
        ]  # fmt: skip
        await self._db.execute(_NOTE_CHATS, *columns(rows))
        return [None] * len(entries)
