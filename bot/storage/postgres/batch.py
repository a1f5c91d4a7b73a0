"""One statement for the like writes of concurrent callers (issue 31).

In a burst every turn makes the same few one-row writes at about the same moment: Telegram posts
up to 40 updates at once, each stored in the inbox before its 200, and each turn inserts its row
under the turn-order lock. Written one statement each, they take a pooled connection and a
commit (a WAL flush) apiece, and the turn inserts queue for the lock while holding their
connections. Here a write joins the batch that is gathering; the first write to find no batch
being written leads: it writes batches until its own is written, and writes arriving meanwhile
gather for the next batch, led by a task once the leader has its answer. A quiet bot's write is
a batch of one: its one-row statement, as before. Reads of concurrent turns batch the same way
(the budget figures: :mod:`.usage`); each is still made after its caller asked.

Each caller learns what its own statement would have told it. One statement is atomic, so a
batch the server refuses stored nothing; its writes are then made one by one, so one row the
database refuses cannot fail the others with it: each caller gets its own result or error. A
batch that fails otherwise (the connection lost: it may have committed) is not written again;
every caller in it gets that error, as a lone statement's caller would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import asyncpg

__all__ = ["Batch", "columns"]

T = TypeVar("T")
R = TypeVar("R")


class Batch(Generic[T, R]):
    """``many`` writes several items in one statement (a result per item, in order); ``one``
    writes a single item."""

    def __init__(
        self,
        many: Callable[[Sequence[T]], Awaitable[Sequence[R]]],
        one: Callable[[T], Awaitable[R]],
    ) -> None:
        self._many, self._one = many, one
        self._queued: list[tuple[T, asyncio.Future[R]]] = []
        self._leading = False
        self._next: asyncio.Task[None] | None = None  # who leads once a leader is done

    async def run(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queued.append((item, future))
        if not self._leading:
            await self._lead(until=future)
        return await future

    async def _lead(self, until: asyncio.Future[R] | None) -> None:
        """Write batches until ``until`` is answered (None: until nothing is queued)."""
        self._leading = True
        try:
            while self._queued and (until is None or not until.done()):
                batch, self._queued = self._queued, []
                # Shielded: a leader cancelled (its client gone) leaves the batch written and
                # every other caller in it answered.
                await asyncio.shield(asyncio.ensure_future(self._write(batch)))
        finally:
            self._leading = False
            if self._queued:  # arrived after this leader's own batch: the next one's leader
                self._next = asyncio.create_task(self._lead(until=None))

    async def _write(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            if len(batch) == 1:
                results = [await self._one(batch[0][0])]
            else:
                results = list(await self._many([item for item, _ in batch]))
                if len(results) != len(batch):
                    raise RuntimeError(f"{len(results)} results for a batch of {len(batch)}")
        except Exception as exc:
            if len(batch) > 1 and _refused(exc):
                # The server refused it: nothing of it is stored, so each goes on its own. Any
                # other failure (the connection lost) may come after the commit: all are told.
                await asyncio.gather(*(self._alone(item, future) for item, future in batch))
            else:
                for _, future in batch:
                    _answer(future, exc)
            return
        except BaseException:  # the loop is closing: nobody is told stored
            for _, future in batch:
                future.cancel()
            raise
        for (_, future), result in zip(batch, results, strict=True):
            _answer(future, result)

    async def _alone(self, item: T, future: asyncio.Future[R]) -> None:
        try:
            _answer(future, await self._one(item))
        except Exception as exc:
            _answer(future, exc)


def _refused(exc: Exception) -> bool:
    """The batch surely stored nothing: the server refused it, or asyncpg could not encode an
    argument (nothing was sent). A lost connection may have lost only the answer."""
    if isinstance(exc, asyncpg.PostgresConnectionError):
        return False
    if isinstance(exc, asyncpg.InterfaceError):
        return isinstance(exc, ValueError)  # asyncpg's DataError: an argument it cannot encode
    return isinstance(exc, asyncpg.PostgresError)


def _answer(future: asyncio.Future[R], outcome: R | Exception) -> None:
    if future.done():
        return
    if isinstance(outcome, Exception):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def columns(rows: Sequence[Sequence[object]]) -> list[list[object]]:
    """Rows as one list per column: the arrays ``unnest`` turns back into rows."""
    return [list(column) for column in zip(*rows, strict=True)]
