"""The window marks and the overheard rows in SQLite, read from memory while nothing changed
(:mod:`bot.storage.sqlite.row_cache` says when that is). The SQL is the shared one."""

from __future__ import annotations

from bot.storage.sql.overheard import OverheardRows
from bot.storage.sql.summaries import SummaryRows
from bot.storage.sqlite.connection import SQLiteSeam
from bot.storage.sqlite.row_cache import RowCache, VersionProbe
from bot.storage.sqlite.window_cache import WindowCache
from bot.values import NewTurn, Overheard, WindowMark

__all__ = ["ConversationCache", "SQLiteOverheard", "SQLiteSummaries"]


def _mark_size(mark: WindowMark | None) -> int:
    return 0 if mark is None else len(mark.summary)


def _overheard_size(rows: list[Overheard]) -> int:
    return sum(200 + len(row.text) + len(row.user_name) for row in rows)


class ConversationCache(WindowCache):
    """The windows, plus each conversation's mark and overheard rows, forgotten together:
    every write the shared code reports (a reset, a clear, an erasure, a migration, retention)
    drops all three. The marks and rows do not know their chat: a chat's clear drops them all."""

    def __init__(self) -> None:
        super().__init__()
        self.marks: RowCache[WindowMark | None] = RowCache(_mark_size)
        self.overheard: RowCache[list[Overheard]] = RowCache(_overheard_size)

    def forget(self, key: str) -> None:
        super().forget(key)
        self.marks.forget(key)
        self.overheard.forget(key)

    def forget_chat(self, chat_key: str) -> None:
        super().forget_chat(chat_key)
        self.marks.clear()
        self.overheard.clear()

    def clear(self) -> None:
        super().clear()
        self.marks.clear()
        self.overheard.clear()


class SQLiteSummaries(SummaryRows):
    """:class:`SummaryRows` with the window mark kept in memory (the summary itself is read
    once per compaction: not worth it)."""

    def __init__(
        self, db: SQLiteSeam, marks: RowCache[WindowMark | None], probe: VersionProbe | None
    ) -> None:
        super().__init__(db)
        self._marks, self._probe = marks, probe

    async def load_window_mark(self, conversation_key: str) -> WindowMark | None:
        if self._probe is None:
            return await super().load_window_mark(conversation_key)
        epoch = self._marks.epoch
        version = await self._probe.version()
        held = self._marks.get(conversation_key, version)
        if held is not None:
            return held.value
        mark = await super().load_window_mark(conversation_key)
        self._marks.put(conversation_key, mark, version=version, epoch=epoch)
        return mark

    async def save_window_mark(
        self, conversation_key: str, chat_key: str, mark: WindowMark
    ) -> None:
        try:
            await super().save_window_mark(conversation_key, chat_key, mark)
        finally:
            self._marks.forget(conversation_key)


class SQLiteOverheard(OverheardRows):
    """:class:`OverheardRows` with each conversation's rows kept in memory, all of them: the
    age cut is made here, as the query makes it (``created_at >= since``)."""

    def __init__(
        self, db: SQLiteSeam, rows: RowCache[list[Overheard]], probe: VersionProbe | None
    ) -> None:
        super().__init__(db)
        self._rows, self._probe = rows, probe

    async def load_overheard(self, conversation_key: str, since: float) -> list[Overheard]:
        if self._probe is None:
            return await super().load_overheard(conversation_key, since)
        epoch = self._rows.epoch
        version = await self._probe.version()
        held = self._rows.get(conversation_key, version)
        if held is not None:
            every = held.value
        else:
            every = await super().load_overheard(conversation_key, float("-inf"))
            self._rows.put(conversation_key, every, version=version, epoch=epoch)
        return [row for row in every if row.created_at >= since]

    async def record_overheard(self, message: NewTurn, keep: int, retain: int = 0) -> None:
        try:
            await super().record_overheard(message, keep, retain)
        finally:
            self._rows.forget(message.conversation_key)

    async def replace_overheard(
        self, conversation_key: str, platform_message_id: str, text: str
    ) -> bool:
        try:
            return await super().replace_overheard(conversation_key, platform_message_id, text)
        finally:
            self._rows.forget(conversation_key)
