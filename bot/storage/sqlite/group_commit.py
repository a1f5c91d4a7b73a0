"""Group commit: the single-statement writes of concurrent turns go in one transaction (issue 31).

A turn makes about seven one-statement writes (its message, its delivery record, the answer, the
chat directory ...). Written one at a time, each waits for the writer lock, makes its own trip to
aiosqlite's thread and back and commits alone, so a burst of 200 turns queues some 1,400 of them
in series, each costing an event-loop round. Here a write joins the batch that is gathering; the
first writer to find no batch being written writes it (the leader: no task for a lone write), in
one trip to the thread inside one ``BEGIN IMMEDIATE`` ... ``COMMIT``. Writes that arrive
meanwhile gather for the next batch. A quiet bot's write is a batch of one: one trip, one
autocommit statement, as before.

Each caller learns what an autocommit statement would have told it: its rows or row count once
its batch is committed, or its own error. A constraint error undoes that statement alone
(SQLite's ABORT: the transaction stays open); any other error (disk full, I/O) rolls back the
statements written since the last commit and each of them is told that error: none of them was
acknowledged, so nothing acknowledged is lost. The thread answers the callers itself
(``call_soon_threadsafe``), so a leader cancelled while its batch is written leaves no caller
waiting.

aiosqlite has no public call to run a function in its thread: ``Connection._execute`` (there since
its first releases) does it; the conformance suite runs every write through it on every change.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiosqlite

__all__ = ["GroupCommit"]

Outcome = int | list[Any] | BaseException


@dataclass(frozen=True, slots=True)
class _Write:
    sql: str  # as SQLite reads it (``?1``)
    args: Sequence[object]
    rows: bool  # the statement's rows (RETURNING), else how many rows it touched
    future: asyncio.Future[Any]


class GroupCommit:
    """The writer connection's one-statement writes, batched (see the module's docstring)."""

    def __init__(self, lock: asyncio.Lock) -> None:
        self._lock = lock  # the writer's lock: transactions take it too
        self._queued: list[_Write] = []
        self._leading = False
        self._next: asyncio.Task[None] | None = None  # who leads once a leader is done

    async def run(
        self, writer: aiosqlite.Connection, sql: str, args: Sequence[object], *, rows: bool
    ) -> Any:
        """Write one statement; its rows (``rows``) or its row count once committed."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queued.append(_Write(sql, args, rows, future))
        if not self._leading:
            await self._lead(writer, until=future)
        return await future

    async def _lead(self, writer: aiosqlite.Connection, until: asyncio.Future[Any] | None) -> None:
        """Write batches until ``until`` is answered (None: until nothing is queued)."""
        self._leading = True
        try:
            while self._queued and (until is None or not until.done()):
                async with self._lock:
                    batch = [write for write in self._queued if not write.future.cancelled()]
                    self._queued = []
                    if batch:
                        loop = asyncio.get_running_loop()
                        await writer._execute(_apply, writer, batch, loop)  # type: ignore[no-untyped-call]
        finally:
            self._leading = False
            if self._queued:  # arrived after this leader's own write: the next batch's leader
                self._next = asyncio.create_task(self._lead(writer, until=None))


def _apply(
    writer: aiosqlite.Connection, batch: list[_Write], loop: asyncio.AbstractEventLoop
) -> None:
    """In aiosqlite's thread: write ``batch``, then answer its callers on the loop."""
    outcomes: list[Outcome] = [0] * len(batch)
    try:
        _write(writer._conn, batch, outcomes)
    except BaseException as exc:  # a BEGIN refused (another process's lock): all told
        outcomes = [exc] * len(batch)
    finally:
        loop.call_soon_threadsafe(_answer, batch, outcomes)


def _write(conn: sqlite3.Connection, batch: list[_Write], outcomes: list[Outcome]) -> None:
    alone = len(batch) == 1  # autocommit: no BEGIN/COMMIT around one statement
    since = 0  # the first statement of the open transaction
    if not alone:
        conn.execute("BEGIN IMMEDIATE")
    for index, write in enumerate(batch):
        try:
            cursor = conn.execute(write.sql, write.args)
            outcomes[index] = cursor.fetchall() if write.rows else max(cursor.rowcount, 0)
        except sqlite3.IntegrityError as exc:
            if alone or conn.in_transaction:
                outcomes[index] = exc  # undone alone; the others stand
                continue
            _undone(outcomes, since, index, exc)
            since = _begin_again(conn, index, len(batch))
        except Exception as exc:
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


def _answer(batch: list[_Write], outcomes: list[Outcome]) -> None:
    for write, outcome in zip(batch, outcomes, strict=True):
        if write.future.done():
            continue  # its caller gave up; the statement was written all the same
        if isinstance(outcome, BaseException):
            write.future.set_exception(outcome)
        else:
            write.future.set_result(outcome)
