"""Vectors for what was stored before embeddings were on (or under another model): every
memory, then every conversation's old messages, in one pass with progress.

Recall works without them (full text), and a conversation's messages also get their vectors
when recall first runs there (:mod:`bot.memory.turn_vectors`); this pass does all of it up
front. The bot runs it in the background at start, reporting with :class:`LoggedProgress`;
``python -m bot memory embed`` runs it in the foreground with a progress bar. Per conversation
it fills the newest :data:`~bot.memory.turn_vectors.MAX_FILLED` messages, the most a search
scores. Safe to stop at any point and to run again: it starts where the vectors end.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.memory.store import MemoryStore
from bot.memory.turn_vectors import MAX_FILLED

__all__ = ["BackfillCounts", "BackfillProgress", "LoggedProgress", "backfill"]

log = logging.getLogger(__name__)

LOG_EVERY = 30.0  # seconds between progress lines in a bot's log


class BackfillProgress(Protocol):
    """Told as the pass goes (``bot.cli.progress.TerminalProgress`` is one)."""

    def start(self, table: str, total: int) -> None: ...

    def advance(self, rows: int) -> None: ...

    def finish(self) -> None: ...


@dataclass(frozen=True, slots=True)
class BackfillCounts:
    memories: int  # memories given a vector
    messages: int  # old messages looked at (each has a vector after)
    conversations: int


class LoggedProgress:
    """Progress as INFO lines, one per :data:`LOG_EVERY` seconds and one at the end."""

    def __init__(self) -> None:
        self._what, self._total, self._done, self._said_at = "", 0, 0, 0.0

    def start(self, table: str, total: int) -> None:
        self._what, self._total, self._done = table, total, 0
        self._said_at = time.monotonic()

    def advance(self, rows: int) -> None:
        self._done += rows
        if time.monotonic() - self._said_at >= LOG_EVERY:
            self._say()

    def finish(self) -> None:
        if self._total:
            self._say()

    def _say(self) -> None:
        self._said_at = time.monotonic()
        share = min(self._done / self._total, 1.0) if self._total else 1.0
        log.info(
            "embedding %s: %d of about %d (%.0f%%)",
            self._what,
            self._done,
            self._total,
            100 * share,
        )


async def backfill(
    memories: MemoryStore,
    conversations: Sequence[tuple[str, int]],
    progress: BackfillProgress,
) -> BackfillCounts:
    """Embed the memories, then each of ``conversations`` (key, turn count: the storage's
    ``conversations()``) that lacks vectors of the current model. Raises the endpoint's
    ``LLMError`` (what was filled until then stays)."""
    filled = await memories.backfill_vectors()
    total = sum(min(turns, MAX_FILLED) for _, turns in conversations)
    progress.start("old messages", total)
    looked_at = 0
    try:
        for key, turns in conversations:
            seen = await memories.fill_turn_vectors(key, progress.advance)
            looked_at += seen
            progress.advance(max(0, min(turns, MAX_FILLED) - seen))  # skipped: cleared, reset
    finally:
        progress.finish()
    return BackfillCounts(filled, looked_at, len(conversations))
