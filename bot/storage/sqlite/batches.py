"""Batched trips to aiosqlite's threads: concurrent turns' reads share a trip, their one-statement
writes a trip and a commit (issue 31).

A turn reads about six times (its budgets, window and the window cache's check, overheard
messages, summary mark) and writes about seven single statements (its message, its delivery
record, the answer, the chat directory ...). Each on its own is a trip to a connection's thread
and back: a future, a queue, a wake-up of the loop, a hand-over of the GIL; and a write also
waits for the writer lock and commits alone. A burst of 200 turns made some 2,700 such trips,
the writes in series; now about 90 (bench section 13). Here a statement that finds nothing on
its way to its connection goes alone, as aiosqlite sends it (a quiet bot's statements cost what
they did); statements that arrive meanwhile gather, and a task sends them as one batch, in one
trip, as soon as the connection is free, and again while more arrive.

Writes (:class:`GroupCommit`): a batch of several runs inside one ``BEGIN IMMEDIATE`` ...
``COMMIT``. Each caller learns what an autocommit statement would have told it: its rows or row
count once its batch is committed, or its own error. A constraint error undoes that statement
alone (SQLite's ABORT: the transaction stays open), as does a value the driver cannot bind or a
bad statement; an error that ends the transaction (disk full, I/O) rolls back the statements
written since the last commit and each of them is told that error: none of them was
acknowledged, so nothing acknowledged is lost. Reads (:class:`ReadBatches`) run one after
the other on the read connection, each seeing what was committed when it ran.

The thread answers a batch's callers itself (``call_soon_threadsafe``), so a sending task
cancelled while its batch is on its way leaves no caller waiting. aiosqlite has no public call
to run a function in its thread: ``Connection._execute`` (there since its first releases) does
it; the conformance suite runs every statement through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiosqlite

from bot.storage.sqlite.inline import LOCKED, InlineStatements

__all__ = ["GroupCommit", "ReadBatches"]

Outcome = int | list[Any] | BaseException


@dataclass(frozen=True, slots=True)
class _Statement:
    sql: str  # as SQLite reads it (``?1``)
    args: Sequence[object]
    rows: bool  # the statement's rows, else how many rows it touched
    future: asyncio.Future[Any]


_Apply = Callable[[sqlite3.Connection, list[_Statement], list[Outcome]], None]


class _Batches:
    """One connection's statements, a batch per trip (see the module's docstring)."""

    _write = False

    def __init__(self, inline: InlineStatements, lock: asyncio.Lock | None = None) -> None:
        self._inline = inline  # cheap lone statements run on the loop's thread (inline.py)
        self._lock = lock  # the writer's lock: multi-statement transactions take it too
        self._queued: list[_Statement] = []
        self._leading = False
        self._next: asyncio.Task[None] | None = None  # who leads once a leader is done

    async def run(
        self, conn: aiosqlite.Connection, sql: str, args: Sequence[object], *, rows: bool
    ) -> Any:
        """Run one statement; its rows (``rows``) or its row count."""
        if not self._leading:  # nothing on its way: this one goes alone, as aiosqlite sends it
            return await self._alone(conn, sql, args, rows=rows)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queued.append(_Statement(sql, args, rows, future))
        return await future

    def _apply(self) -> _Apply:
        raise NotImplementedError

    def _held(self) -> contextlib.AbstractAsyncContextManager[object]:
        return self._lock if self._lock is not None else contextlib.nullcontext()

    async def _alone(
        self, conn: aiosqlite.Connection, sql: str, args: Sequence[object], *, rows: bool
    ) -> Any:
        """A lone statement: here if it is cheap and nothing else uses the connection, else sent
        as it is; what arrives meanwhile waits for the next trip."""
        inline = self._inline
        if inline.may(conn, sql) and not (self._lock is not None and self._lock.locked()):
            outcome = inline.run(conn, sql, args, rows=rows, write=self._write)
            if outcome is not LOCKED:
                return outcome
        self._leading = True
        try:
            async with self._held():
                return await conn._execute(_timed, conn, inline, sql, args, rows)  # type: ignore[no-untyped-call]
        finally:
            self._leading = False
            if self._queued:
                self._next = asyncio.create_task(self._lead(conn))

    async def _lead(self, conn: aiosqlite.Connection) -> None:
        """Send batches until nothing is queued."""
        self._leading = True
        try:
            while self._queued:
                async with self._held():
                    batch = [each for each in self._queued if not each.future.cancelled()]
                    self._queued = []
                    if batch:
                        loop = asyncio.get_running_loop()
                        trip = _trip(self._apply(), conn, batch, loop)
                        try:
                            await conn._execute(trip)  # type: ignore[no-untyped-call]
                        except Exception as exc:  # not sent (the store closed): none ran
                            _answer(batch, [exc] * len(batch))
        finally:
            self._leading = False
            if self._queued:  # the leader was cancelled: the next one takes over
                self._next = asyncio.create_task(self._lead(conn))


class ReadBatches(_Batches):
    """The read connection's statements, one trip per batch."""

    def _apply(self) -> _Apply:
        return _read


class GroupCommit(_Batches):
    """The writer's one-statement writes, one trip and one commit per batch."""

    _write = True

    def __init__(self, inline: InlineStatements, lock: asyncio.Lock) -> None:
        super().__init__(inline, lock)

    def _apply(self) -> _Apply:
        return _write


def _trip(
    apply: _Apply,
    conn: aiosqlite.Connection,
    batch: list[_Statement],
    loop: asyncio.AbstractEventLoop,
) -> Callable[[], None]:
    def in_thread() -> None:
        """In aiosqlite's thread: run ``batch``, then answer its callers on the loop."""
        outcomes: list[Outcome] = [0] * len(batch)
        try:
            apply(conn._conn, batch, outcomes)
        except BaseException as exc:  # a BEGIN refused (another process's lock): all told
            outcomes = [exc] * len(batch)
        finally:
            loop.call_soon_threadsafe(_answer, batch, outcomes)

    return in_thread


def _timed(
    conn: aiosqlite.Connection,
    inline: InlineStatements,
    sql: str,
    args: Sequence[object],
    rows: bool,
) -> Outcome:
    """In the connection's thread: one autocommit statement, its cost noted (inline.py)."""
    started = time.thread_time()
    try:
        cursor = conn._conn.execute(sql, args)
        return cursor.fetchall() if rows else max(cursor.rowcount, 0)
    finally:
        inline.noted(sql, time.thread_time() - started, here=False)


def _run(conn: sqlite3.Connection, statement: _Statement) -> Outcome:
    cursor = conn.execute(statement.sql, statement.args)
    return cursor.fetchall() if statement.rows else max(cursor.rowcount, 0)


def _read(conn: sqlite3.Connection, batch: list[_Statement], outcomes: list[Outcome]) -> None:
    for index, statement in enumerate(batch):
        try:
            outcomes[index] = _run(conn, statement)
        except Exception as exc:
            outcomes[index] = exc


def _write(conn: sqlite3.Connection, batch: list[_Statement], outcomes: list[Outcome]) -> None:
    alone = len(batch) == 1  # autocommit: no BEGIN/COMMIT around one statement
    since = 0  # the first statement of the open transaction
    if not alone:
        conn.execute("BEGIN IMMEDIATE")
    for index, statement in enumerate(batch):
        try:
            outcomes[index] = _run(conn, statement)
        except Exception as exc:
            if alone or not _ends_transaction(conn, exc):
                outcomes[index] = exc  # undone alone (or never run); the others stand
                continue
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            _undone(outcomes, since, index, exc)
            since = _begin_again(conn, index, len(batch))
    if conn.in_transaction:
        try:
            conn.execute("COMMIT")
        except Exception as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            _undone(outcomes, since, len(batch) - 1, exc)


# The errors after which SQLite may have rolled the transaction back, or asks for a ROLLBACK
# (https://www.sqlite.org/lang_transaction.html, "Response To Errors Within A Transaction").
_FATAL = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_BUSY", "SQLITE_NOMEM", "SQLITE_CORRUPT")


def _ends_transaction(conn: sqlite3.Connection, exc: Exception) -> bool:
    """Whether ``exc`` took the open transaction with it. A constraint (SQLite's ABORT undoes the
    statement alone), a value the driver cannot bind (never sent) or a bad statement leave it."""
    if not conn.in_transaction:
        return True
    return str(getattr(exc, "sqlite_errorname", "")).startswith(_FATAL)


def _undone(outcomes: list[Outcome], first: int, last: int, exc: BaseException) -> None:
    """Statements ``first``..``last`` were rolled back: each is told ``exc`` (unless it failed
    on its own already)."""
    for index in range(first, last + 1):
        if not isinstance(outcomes[index], BaseException):
            outcomes[index] = exc


def _begin_again(conn: sqlite3.Connection, failed: int, size: int) -> int:
    if failed + 1 < size:
        conn.execute("BEGIN IMMEDIATE")
    return failed + 1


def _answer(batch: list[_Statement], outcomes: list[Outcome]) -> None:
    for statement, outcome in zip(batch, outcomes, strict=True):
        if statement.future.done():
            continue  # its caller gave up; the statement ran all the same
        if isinstance(outcome, BaseException):
            statement.future.set_exception(outcome)
        else:
            statement.future.set_result(outcome)
