"""The embedded default backend: every storage protocol over one SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.config.storage_url import sqlite_url
from bot.errors import StoreError
from bot.storage import owners
from bot.storage.sql.seam import Tx
from bot.storage.sql.store import SQLStore
from bot.storage.sqlite.cached_rows import ConversationCache, SQLiteOverheard, SQLiteSummaries
from bot.storage.sqlite.connection import Database, SQLiteSeam
from bot.storage.sqlite.coordination import SQLiteCoordination
from bot.storage.sqlite.knowledge import SQLiteKnowledge
from bot.storage.sqlite.memories import SQLiteMemories
from bot.storage.sqlite.row_cache import VersionProbe
from bot.storage.sqlite.scopes import RESCOPE_MEMORIES, RESCOPE_TURNS
from bot.storage.sqlite.turns import SQLiteTurns
from bot.values import PromptRows


async def _rescope(tx: Tx, new_chat_key: str) -> None:
    """The full-text indexes name each row's chat and conversation (scopes.py)."""
    for statement in (*RESCOPE_MEMORIES, *RESCOPE_TURNS):
        await tx.execute(statement, new_chat_key)


class SQLiteStore(SQLStore):
    """:class:`bot.storage.Storage` in one SQLite file. Use as ``async with SQLiteStore(path)``
    (or :func:`bot.storage.open_storage`)."""

    reads_wait = False  # from memory, or a statement on the loop's thread (inline.py)

    def __init__(self, path: str | Path, *, cache_windows: bool = True) -> None:
        self.database, self.windows = Database(path), ConversationCache()
        self.cache_windows = cache_windows
        seam = SQLiteSeam(self.database)
        self._compose(seam, self.windows, owners.new_owner(), _rescope)
        # One data_version probe for a turn's window, mark and overheard reads (row_cache.py).
        probe = VersionProbe(self.database) if cache_windows else None
        self.turns = SQLiteTurns(self.database, self.windows, self.owner, probe)
        self.summaries = SQLiteSummaries(seam, self.windows.marks, probe)
        self.overheard = SQLiteOverheard(seam, self.windows.overheard, probe)
        self.memories = SQLiteMemories(self.seam)
        self.knowledge = SQLiteKnowledge(self.seam)
        self.coordination = SQLiteCoordination(self.seam)

    @property
    def path(self) -> Path:
        return self.database.path

    @property
    def replicas(self) -> bool:
        """One host's file: limits and locks stay in process memory (see bot.storage)."""
        return False

    @property
    def url(self) -> str:
        return sqlite_url(self.database.path)

    async def load_prompt_rows(
        self, conversation_key: str, max_turns: int, overheard_since: float | None
    ) -> PromptRows:
        """The three reads one after the other: each is answered from memory, or by a statement
        run on the loop's thread (``inline.py``), without waiting; three tasks to run them
        together cost more than the reads."""
        window = await self.load_window(conversation_key, max_turns)
        overheard = (
            [] if overheard_since is None
            else await self.load_overheard(conversation_key, overheard_since)
        )  # fmt: skip
        mark = await self.load_window_mark(conversation_key)
        return PromptRows(window, overheard, mark)

    async def schema_version(self) -> str:
        rows = await self.database.reader.execute_fetchall("PRAGMA user_version")
        return f"v{int(next(iter(rows))[0])}"

    async def open(self) -> None:
        try:
            await super().open()
        except sqlite3.DatabaseError as exc:  # closed already
            raise StoreError(f"cannot open history database {self.path}: {exc}") from exc

    async def _connect(self) -> None:
        await self.database.open()

    async def _disconnect(self) -> None:
        self.windows.clear()
        await self.database.close()
