"""What the conversation service asks of storage: one protocol, the union of the storage
seams it uses (every backend in :mod:`bot.storage` provides them)."""

from __future__ import annotations

from typing import Protocol

from bot.storage.maintenance import Maintenance
from bot.storage.resets import Resets
from bot.storage.turns import TurnArchive, Turns
from bot.storage.usage import UsageLedger

__all__ = ["HistoryStore"]


class HistoryStore(Turns, TurnArchive, Resets, UsageLedger, Maintenance, Protocol):
    """Turns, their archive, resets and clears, the usage ledger and maintenance."""
