"""Old home of the storage seam, kept importable: the protocols and values live in
:mod:`bot.storage` now (one module per idea) and the SQLite backend in :mod:`bot.storage.sqlite`.

:class:`HistoryStore` is the union the conversation service has always asked for.
"""

from __future__ import annotations

from typing import Protocol

from bot.storage.chat_settings import ChatSettingsStore
from bot.storage.maintenance import Maintenance
from bot.storage.overheard import OverheardStore
from bot.storage.resets import Resets
from bot.storage.turns import TurnArchive, Turns
from bot.storage.usage import UsageLedger
from bot.storage.values import (
    BOT_USER,
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

__all__ = [
    "BOT_USER",
    "NO_USAGE",
    "ChatPreferences",
    "ChatSettingsStore",
    "ClearResult",
    "DailyUsage",
    "HistoryStats",
    "HistoryStore",
    "NewTurn",
    "Overheard",
    "OverheardStore",
    "StoredTurn",
    "TurnStatus",
    "Usage",
]


class HistoryStore(Turns, TurnArchive, Resets, UsageLedger, Maintenance, Protocol):
    """Turns, their archive, resets and clears, the usage ledger and maintenance."""
