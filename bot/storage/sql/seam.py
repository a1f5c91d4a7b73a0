"""The seam each backend provides, and the few expressions it spells its own way.

:class:`Database` is five primitives (the way ``encode/databases``' ``interfaces.py`` or
aiogram's ``BaseStorage`` draw theirs): ``fetch`` reads committed rows, ``execute`` runs one
autocommit write and says how many rows it touched, ``write`` runs one that returns rows
(``RETURNING``), ``executemany``, and ``transaction()`` hands out a :class:`Tx` that does the
same inside ``BEGIN`` ... ``COMMIT`` (``ROLLBACK`` on any error). Rows are positional (SQLite's
tuples, asyncpg's records): unpack them, or index them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

__all__ = ["Database", "Dialect", "NoWindows", "Row", "Tx", "Windows", "fetchval", "via"]

Row = Any  # a tuple (SQLite) or an asyncpg Record: both index and unpack


class Dialect(Protocol):
    """The expressions the two backends spell differently: one place per backend
    (``bot.storage.<backend>.dialect``)."""

    today: str  # the UTC day as 'YYYY-MM-DD', by the database's clock
    now: str  # seconds since the epoch, by the database's clock
    bytewise: str  # a COLLATE clause ordering text by its bytes ('' where that is the default)
    for_update: str  # row locks for a read inside a transaction ('' where the file is locked)

    def text(self, value: str) -> str:
        """``value`` as a text column can hold it."""
        ...

    def starts_with(self, text: str, prefix: str) -> str: ...

    def contains(self, text: str, part: str) -> str: ...

    def lower(self, text: str) -> str:
        """Unicode lower case."""
        ...

    def json_length(self, column: str) -> str: ...

    def int_of(self, text: str) -> str:
        """A text column's integer (0 when it holds none)."""
        ...

    def in_array(self, column: str, param: str, kind: str) -> str:
        """``column`` is one of the values (of SQL type ``kind``) of array parameter ``param``
        (:meth:`array`)."""
        ...

    def array(self, values: Iterable[int | str]) -> object:
        """The parameter :meth:`in_array` takes."""
        ...

    def conversation_page(
        self, columns: str, *, limit: int, after: str, before: str, newest_first: bool = False
    ) -> str:
        """Up to ``limit`` rows of conversation ``$1`` with ``after < id < before``, in id order
        (``newest_first``: reversed), costing O(page) whatever the table's size."""
        ...


class Tx(Protocol):
    """One connection inside a transaction."""

    async def fetch(self, sql: str, *args: object) -> list[Row]: ...

    async def execute(self, sql: str, *args: object) -> int: ...

    async def executemany(self, sql: str, args: Sequence[Sequence[object]]) -> None: ...

    async def lock(self, purpose: str) -> None:
        """Until the transaction ends, no other writer holds ``purpose`` (PostgreSQL: an
        advisory lock; SQLite: its write lock, held since ``BEGIN IMMEDIATE``, already is)."""
        ...


class Database(Protocol):
    @property
    def dialect(self) -> Dialect: ...

    async def fetch(self, sql: str, *args: object) -> list[Row]: ...

    async def execute(self, sql: str, *args: object) -> int: ...

    async def write(self, sql: str, *args: object) -> list[Row]: ...

    async def executemany(self, sql: str, args: Sequence[Sequence[object]]) -> None: ...

    def transaction(self) -> AbstractAsyncContextManager[Tx]: ...


class Windows(Protocol):
    """The recent windows a backend keeps in memory (SQLite), told what our writes changed.
    Here each call changes nothing: :class:`NoWindows`."""

    def completed(self, turn_id: int, answer: Sequence[Mapping[str, Any]]) -> None:
        return None

    def failed(self, turn_id: int) -> None:
        return None

    def forget(self, key: str) -> None:
        return None

    def forget_chat(self, chat_key: str) -> None:
        return None

    def clear(self) -> None:
        return None


class NoWindows(Windows):
    """A backend that keeps no windows in memory (PostgreSQL: replicas write at any time)."""


async def fetchval(db: Database | Tx, sql: str, *args: object) -> Any:
    """The first column of the first row (None without one)."""
    rows = await db.fetch(sql, *args)
    return rows[0][0] if rows else None


P = ParamSpec("P")
R = TypeVar("R")


class via(Generic[P, R]):
    """A storage method that one of the store's parts implements: ``begin_delivery =
    via("deliveries", DeliveryRecords.begin_delivery)`` reads ``self.deliveries.begin_delivery``,
    typed as the part's method (so mypy holds the store to every protocol)."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.part, self.name = part, method.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    @overload
    def __get__(self, obj: None, owner: type) -> via[P, R]: ...

    @overload
    def __get__(self, obj: object, owner: type) -> Callable[P, R]: ...

    def __get__(self, obj: object, owner: type) -> Any:
        if obj is None:
            return self
        # Kept on the store as functools.cached_property does (a store's parts stay put).
        bound = obj.__dict__[self.attribute] = getattr(getattr(obj, self.part), self.name)
        return bound
