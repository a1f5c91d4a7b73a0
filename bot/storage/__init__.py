"""Storage: the protocols a backend implements, one module per idea (the imports below are
the map), :class:`Storage` composing them all, and :func:`open_storage`, the one place that
picks a backend (``storage.url``, else the SQLite file ``storage.path``).

Everything outside the backends' packages holds these protocols only. The conformance suite
(``tests/conformance/``) holds every backend to the behaviour their docstrings state. How the
folders divide the work: docs/architecture.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bot.config.storage_url import StorageURL, parse_storage_url
from bot.storage.audit import AuditTrail
from bot.storage.chat_settings import ChatSettingsStore
from bot.storage.coordination import Inbox, Leases, SharedLimits
from bot.storage.deliveries import Deliveries
from bot.storage.directory import ChatDirectory
from bot.storage.erasure import Erasure
from bot.storage.knowledge import KnowledgeBindings, KnowledgeDocuments, KnowledgeVectors
from bot.storage.kv import KeyValueStore
from bot.storage.maintenance import Maintenance
from bot.storage.memories import MemoryRecords, MemorySearch, MemoryVectors
from bot.storage.overheard import OverheardStore
from bot.storage.prompt_windows import PromptWindows
from bot.storage.resets import Resets
from bot.storage.summaries import Summaries
from bot.storage.transcript import Transcripts
from bot.storage.turns import TurnArchive, Turns
from bot.storage.usage import UsageLedger

if TYPE_CHECKING:
    from bot.config import Settings

__all__ = [
    "AuditTrail",
    "ChatDirectory",
    "ChatSettingsStore",
    "Deliveries",
    "Erasure",
    "Inbox",
    "KeyValueStore",
    "KnowledgeBindings",
    "KnowledgeDocuments",
    "KnowledgeVectors",
    "Leases",
    "Maintenance",
    "MemoryRecords",
    "MemorySearch",
    "MemoryVectors",
    "OverheardStore",
    "PromptWindows",
    "Resets",
    "SharedLimits",
    "Storage",
    "Summaries",
    "Transcripts",
    "TurnArchive",
    "Turns",
    "UsageLedger",
    "missing_storage",
    "open_storage",
    "open_storage_url",
]


class Storage(
    Turns,
    TurnArchive,
    OverheardStore,
    Transcripts,
    Resets,
    AuditTrail,
    ChatDirectory,
    Erasure,
    ChatSettingsStore,
    UsageLedger,
    KeyValueStore,
    KnowledgeDocuments,
    KnowledgeVectors,
    KnowledgeBindings,
    MemoryRecords,
    MemorySearch,
    MemoryVectors,
    Summaries,
    PromptWindows,
    Deliveries,
    Maintenance,
    Inbox,
    Leases,
    SharedLimits,
    Protocol,
):
    """Every storage protocol in one object, with its lifecycle.

    ``open`` creates or upgrades the schema and closes turns a dead process left pending;
    ``close`` releases every connection. Use ``async with open_storage(settings)``. One
    instance is safe to use from many coroutines at once.

    ``replicas`` is True for a backend meant to be shared by several processes (PostgreSQL):
    the app then keeps limits and locks in the database (:mod:`bot.storage.coordination`)
    rather than in process memory. ``url`` is the database, fit for logs (no password).
    ``schema_version`` says which migrations the open database has had.
    """

    @property
    def replicas(self) -> bool: ...

    @property
    def url(self) -> str: ...

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def schema_version(self) -> str:
        """Where the open database's schema stands, for an operator (``doctor``): ``v21`` for
        SQLite, ``core v5, memories v3`` for PostgreSQL's components. The same after a reopen."""
        ...

    async def __aenter__(self) -> Storage: ...

    async def __aexit__(self, *exc: object) -> None: ...


def open_storage(settings: Settings, *, cache_windows: bool = True) -> Storage:
    """The configured backend, not yet opened (``async with`` it, or ``await .open()``).

    The one place that picks a backend: ``storage.url`` (else the SQLite file ``storage.path``).
    """
    return open_storage_url(settings.storage.effective_url, cache_windows=cache_windows)


def open_storage_url(url: StorageURL | str, *, cache_windows: bool = True) -> Storage:
    """The backend at ``url`` (a parsed or a raw ``storage.url``), not yet opened."""
    parsed = parse_storage_url(url) if isinstance(url, str) else url
    if parsed.is_postgresql:
        from bot.storage.postgres import PostgresStore  # asyncpg loads only when used

        assert parsed.dsn is not None
        return PostgresStore(parsed.dsn, schema=parsed.schema, cache_windows=cache_windows)
    from bot.storage.sqlite import SQLiteStore  # the backend's driver loads only when used

    assert parsed.path is not None
    return SQLiteStore(parsed.path, cache_windows=cache_windows)


def missing_storage(settings: Settings) -> str | None:
    """Why reports (``history``, ``usage``) would find no database, or None: a typo'd path
    must not create an empty one. (A PostgreSQL server says so itself when asked.)"""
    url = settings.storage.effective_url
    if url.is_postgresql:
        return None
    path = Path(url.path or "")
    if str(path) == ":memory:" or path.exists():
        return None
    return f"no history database at {path} (check storage.path and the working directory)"
