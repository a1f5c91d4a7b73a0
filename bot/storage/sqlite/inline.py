"""Cheap statements run on the event loop's own thread when the connection's thread is idle
(issue 31).

A trip to aiosqlite's thread is a future, a queue, a wake-up of the loop and two hand-overs of
the GIL: 100-300 µs of the loop's time on a 2-core machine, while the statements a turn sends
(a ``data_version`` probe, one row inserted, one updated) take SQLite 10-200 µs. A console turn
spent more of its own time waiting on those trips than on anything else (docs/performance.md).
So a statement runs right here, synchronously, when all of this holds:

* the connection's thread has nothing queued or running (:class:`TrackedConnection` counts what
  it was given and what it finished), so one thread at a time uses the ``sqlite3`` connection;
* no transaction is open on it (a statement would join it) and, for the writer, nobody holds
  its lock (a multi-statement transaction may be between two of its statements);
* the statement is known to be cheap: each SQL text's recent cost, measured wherever it ran, is
  under :data:`CHEAP`. A text seen for the first time, or costly lately, goes to the thread;
  one that stopped the loop here anyway (a wait for the disk looks cheap on the thread) goes
  back there for longer each time (:meth:`InlineStatements.noted`);
* SQLite would not have to wait: the busy timeout is 0 for the attempt, and a lock held by
  another process (``SQLITE_BUSY``) sends the statement to the thread, where it waits as before.
  An autocommit statement refused with ``SQLITE_BUSY`` changed nothing.

The writer's WAL checkpoints are not left to a commit on this thread (a checkpoint writes and
syncs the database file): :class:`Checkpoints` runs them on the writer's thread instead.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import aiosqlite

__all__ = [
    "CHEAP",
    "LOCKED",
    "STALL",
    "Checkpoints",
    "InlineStatements",
    "TrackedConnection",
    "connect",
]

CHEAP = 0.0003  # seconds: about what a trip to the thread costs the loop (2-core machines)
STALL = 0.002  # seconds: a run here this long stopped every chat for it
_DECAY = 0.8  # one costly run keeps its text on the thread for a dozen runs or so
_AWAY = 32  # runs on the thread after the first slow run here, doubled for each further one
_TEXTS = 4096  # statement texts whose cost is kept
LOCKED = object()  # what :meth:`InlineStatements.run` returns for a statement that would wait
_BUSY_TIMEOUT_MS = 10_000  # the connection's own setting (connection.py), restored after
_QUICK, _PATIENT = "PRAGMA busy_timeout=0", f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}"
_NO_AUTOCHECKPOINT = "PRAGMA wal_autocheckpoint=0"
_AUTOCHECKPOINT = "PRAGMA wal_autocheckpoint=1000"


class TrackedConnection(aiosqlite.Connection):
    """An aiosqlite connection that knows whether its thread is using the ``sqlite3`` one."""

    def __init__(self, connector: Callable[[], sqlite3.Connection]) -> None:
        super().__init__(connector, 64)
        self.given = 0  # functions queued for the thread, counted on the loop
        self.finished = 0  # of those, finished: counted by the thread, after the function

    @property
    def idle(self) -> bool:
        """Nothing queued or running on the thread, and the connection open."""
        return self.given == self.finished and self._running and self._connection is not None

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._running or not self._connection:
            raise ValueError("Connection closed")

        def counted() -> Any:
            try:
                return fn(*args, **kwargs)
            finally:
                self.finished += 1  # only this thread writes it

        self.given += 1
        return await super()._execute(counted)  # type: ignore[no-untyped-call]


def connect(path: str | Path, **kwargs: Any) -> TrackedConnection:
    """:func:`aiosqlite.connect`, tracked (await it, as aiosqlite's)."""
    return TrackedConnection(lambda: sqlite3.connect(str(path), check_same_thread=False, **kwargs))


class InlineStatements:
    """Which statements run on the loop's thread, and running them (see the module)."""

    def __init__(self) -> None:
        self._cost: dict[str, float] = {}  # SQL text -> recent cost, seconds (decaying max)
        self._away: dict[str, int] = {}  # SQL text -> runs left on the thread after a slow one
        self._strikes: dict[str, int] = {}  # SQL text -> slow runs here so far
        self._checkpoints = Checkpoints()

    def noted(self, sql: str, seconds: float, *, here: bool) -> None:
        """A run's cost: its wall time here, the thread's CPU time there (its wall time would
        count the waits for the GIL the loop holds). A statement that waited for the disk looks
        cheap on the thread: its first run here that stops the loop (:data:`STALL`) sends it
        back there for 32 runs, the next for 64, then 128 ..."""
        if len(self._cost) >= _TEXTS:
            self._cost.clear()  # statement texts are few; a bound all the same
        known = self._cost.get(sql)
        self._cost[sql] = seconds if known is None else max(seconds, known * _DECAY)
        if here and seconds >= STALL:
            strikes = self._strikes[sql] = self._strikes.get(sql, 0) + 1
            self._away[sql] = _AWAY << min(strikes - 1, 10)

    def may(self, conn: aiosqlite.Connection, sql: str) -> bool:
        if not isinstance(conn, TrackedConnection) or not conn.idle:
            return False
        away = self._away.get(sql)
        if away:
            self._away[sql] = away - 1
            return False
        cost = self._cost.get(sql)
        return cost is not None and cost < CHEAP and not conn._conn.in_transaction

    def run(
        self,
        conn: aiosqlite.Connection,
        sql: str,
        args: Sequence[object],
        *,
        rows: bool,
        write: bool,
    ) -> Any:
        """Run one autocommit statement here: its outcome, or :data:`LOCKED` when SQLite would
        have waited for another connection's lock (send it to the thread)."""
        raw = conn._conn
        raw.execute(_QUICK)
        if write:
            raw.execute(_NO_AUTOCHECKPOINT)
        started = time.perf_counter()
        try:
            cursor = raw.execute(sql, args)
            result = cursor.fetchall() if rows else max(cursor.rowcount, 0)
        except sqlite3.OperationalError as exc:
            if str(getattr(exc, "sqlite_errorname", "")).startswith("SQLITE_BUSY"):
                return LOCKED
            raise
        finally:
            self.noted(sql, time.perf_counter() - started, here=True)
            raw.execute(_PATIENT)
            if write:
                raw.execute(_AUTOCHECKPOINT)
        if write:
            self._checkpoints.committed(conn)
        return result


class Checkpoints:
    """The writer's WAL checkpoints, on its thread (its commits on the loop's thread do none).

    SQLite checkpoints at a commit once the WAL holds ``wal_autocheckpoint`` pages (1,000 by
    default), in the committing thread: the loop's, for a statement run there. So those
    statements run with it off (``PRAGMA wal_autocheckpoint=0``, set back after each), and
    every ``every`` of them (a turn's statement changes a handful of pages: about SQLite's
    1,000) a passive checkpoint goes to the writer's thread, one at a time. Statements and
    transactions run on the thread checkpoint as before.
    """

    def __init__(self, every: int = 200) -> None:
        self._every, self._since = every, 0
        self._running: asyncio.Task[None] | None = None

    def committed(self, conn: aiosqlite.Connection, changes: int = 1) -> None:
        self._since += max(changes, 1)
        if self._since >= self._every and self._running is None:
            self._since = 0
            self._running = asyncio.get_running_loop().create_task(self._checkpoint(conn))

    async def _checkpoint(self, conn: aiosqlite.Connection) -> None:
        try:
            # its row read on the thread: a cursor left open until this task resumes would keep
            # a batch queued behind it from committing ("SQL statements in progress")
            await conn.execute_fetchall("PRAGMA wal_checkpoint(PASSIVE)")
        except (sqlite3.Error, ValueError):
            pass  # closed, or busy: the next one will do; SQLite checkpoints at close too
        finally:
            self._running = None
