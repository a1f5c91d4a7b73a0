"""One replica's share of the inbox: claim lane heads, run them, finish them, keep the leases.

A platform adapter stores each update it is pushed (:meth:`~bot.storage.coordination.Inbox.
inbox_put`) before acknowledging it, then :meth:`InboxWorker.wake`\\ s this worker. The worker
claims lane heads (a lane is a chat: the store hands out only its oldest unfinished update, to
one owner at a time), runs each on its own task, so different lanes run concurrently and one
lane runs in ``update_id`` order, and calls ``inbox_done`` once the handler returned: the turn
stored *and* the reply delivered. Leases are renewed every third of their length while anything
runs; a replica that dies stops renewing, and another replica claims its updates once the
leases ran out (it polls every ``poll_seconds`` for exactly that, and for updates another
replica stored).

An update claimed more than :data:`~bot.storage.coordination.INBOX_MAX_ATTEMPTS` times (it
killed or hung every replica that ran it) is given up: logged by id, never by content, and
finished with the error, so it cannot block its chat. A handler that raises is finished with
the error too (the adapter has already told the user what it could); retrying it would repeat
whatever it had sent. Done rows are pruned hourly once older than ``keep_done_seconds``, long
after the platform stopped redelivering them.

Clean shutdown (:meth:`InboxWorker.stop`): no new claims, what runs finishes (its leases still
renewed), and every other lease goes back at once for the other replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from bot.storage.coordination import INBOX_MAX_ATTEMPTS, Inbox
from bot.storage.owners import new_owner
from bot.values import InboxItem

__all__ = ["InboxHandler", "InboxWorker"]

log = logging.getLogger(__name__)

InboxHandler = Callable[[InboxItem], Awaitable[None]]

KEEP_DONE_SECONDS = 48 * 3600.0  # Telegram redelivers for up to ~24 h: keep twice that
PRUNE_EVERY_SECONDS = 3600.0
_ERROR_BACKOFF_MAX = 10.0


class InboxWorker:
    """Runs ``source``'s updates from ``inbox`` through ``handle``, at most ``concurrency`` at
    once (each in its own lane)."""

    def __init__(
        self,
        inbox: Inbox,
        source: str,
        handle: InboxHandler,
        *,
        lease_seconds: float = 10.0,
        poll_seconds: float = 0.5,
        concurrency: int = 64,
        keep_done_seconds: float = KEEP_DONE_SECONDS,
        owner: str | None = None,
    ) -> None:
        self.inbox = inbox
        self.source = source
        self.handle = handle
        self.lease_seconds = lease_seconds
        self.poll_seconds = poll_seconds
        self.concurrency = concurrency
        self.keep_done_seconds = keep_done_seconds
        self.owner = owner or new_owner()
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._running: dict[int, asyncio.Task[None]] = {}
        self._finishing: set[int] = set()  # running, but being marked done (renewals skip it)
        self._loop: asyncio.Task[None] | None = None
        self._renewer: asyncio.Task[None] | None = None
        self._pruned_at = 0.0
        self.finished = 0  # updates this worker ran to the end (done), for logs and tests
        self.given_up = 0

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.create_task(self._claim_loop(), name=f"inbox-{self.source}")
        self._renewer = asyncio.create_task(self._renew_loop(), name=f"inbox-renew-{self.source}")

    def wake(self) -> None:
        """Something was stored (by this replica): claim now rather than at the next poll."""
        self._wake.set()

    async def stop(self) -> None:
        """Claim nothing more, let what runs finish, give every other lease back."""
        self._stopping.set()
        self._wake.set()
        if self._loop is not None:
            await asyncio.gather(self._loop, return_exceptions=True)
        if self._running:
            await asyncio.gather(*self._running.values(), return_exceptions=True)
        if self._renewer is not None:
            self._renewer.cancel()
            await asyncio.gather(self._renewer, return_exceptions=True)
        try:
            released = await self.inbox.inbox_release(self.owner)
        except Exception:
            log.exception("inbox %s: leases not released (they expire on their own)", self.source)
        else:
            if released:
                log.info("inbox %s: %d leases given back at shutdown", self.source, released)

    @property
    def running(self) -> int:
        return len(self._running)

    # -- claiming ----------------------------------------------------------------------------

    async def _claim_loop(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                claimed = await self._claim()
                await self._prune_now_and_then()
                failures = 0
            except Exception:
                failures += 1
                delay = min(self.poll_seconds * 2**failures, _ERROR_BACKOFF_MAX)
                log.exception("inbox %s: claim failed, retrying in %.1fs", self.source, delay)
                await self._sleep(delay)
                continue
            if claimed and len(self._running) < self.concurrency:
                continue  # there may be more heads waiting
            await self._sleep(self.poll_seconds)

    async def _claim(self) -> int:
        free = self.concurrency - len(self._running)
        if free <= 0:
            return 0
        items = await self.inbox.inbox_claim(self.source, self.owner, self.lease_seconds, free)
        for item in items:
            if item.id in self._running:  # cannot happen: we hold its lease already
                continue
            task = asyncio.create_task(self._run(item), name=f"inbox-{item.update_id}")
            self._running[item.id] = task
        return len(items)

    async def _sleep(self, seconds: float) -> None:
        """Until woken (a put, a finished item, stop) or ``seconds`` passed."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def _prune_now_and_then(self) -> None:
        now = time.monotonic()
        if self._pruned_at and now - self._pruned_at < PRUNE_EVERY_SECONDS:
            return
        self._pruned_at = now
        pruned = await self.inbox.inbox_prune(self.keep_done_seconds)
        if pruned:
            log.info("inbox %s: pruned %d finished updates", self.source, pruned)

    # -- one item ----------------------------------------------------------------------------

    async def _run(self, item: InboxItem) -> None:
        try:
            error: str | None = None
            if item.attempts > INBOX_MAX_ATTEMPTS:
                error = f"given up after {INBOX_MAX_ATTEMPTS} attempts"
                log.error(
                    "inbox %s: update %d (lane %s) %s; skipped so its chat can go on",
                    self.source,
                    item.update_id,
                    item.lane,
                    error,
                )
                self.given_up += 1
            else:
                if item.attempts > 1:
                    log.warning(
                        "inbox %s: update %d taken over (attempt %d)",
                        self.source,
                        item.update_id,
                        item.attempts,
                    )
                try:
                    await self.handle(item)
                except Exception as exc:
                    error = f"handler failed: {type(exc).__name__}"
                    log.exception(
                        "inbox %s: update %d failed; finished with the error",
                        self.source,
                        item.update_id,
                    )
            self._finishing.add(item.id)
            await self._finish(item, error)
        finally:
            self._finishing.discard(item.id)
            self._running.pop(item.id, None)
            self._wake.set()  # the lane's next update is a head now

    async def _finish(self, item: InboxItem, error: str | None) -> None:
        try:
            held = await self.inbox.inbox_done(item.id, self.owner, error)
        except Exception:
            # The lease runs out and another replica runs the update again: a duplicate
            # answer is possible, a lost one is not.
            log.exception("inbox %s: update %d not marked done", self.source, item.update_id)
            return
        if held:
            self.finished += error is None
        else:
            log.warning(
                "inbox %s: update %d finished after its lease was lost (another replica may "
                "have run it too); raise the lease if handlers stall that long",
                self.source,
                item.update_id,
            )

    def _unfinished(self) -> set[int]:
        return set(self._running) - self._finishing

    async def _renew_loop(self) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            if not self._running:
                continue
            before = self._unfinished()
            try:
                held = await self.inbox.inbox_renew(self.owner, self.lease_seconds)
            except Exception:
                log.exception("inbox %s: leases not renewed", self.source)
                continue
            # Held throughout and not being marked done: each was renewed unless its lease was
            # lost (an item marked done meanwhile may or may not be in ``held``).
            throughout = len(before & self._unfinished())
            if held < throughout:
                log.warning(
                    "inbox %s: %d of %d leases were lost (this replica stalled longer than "
                    "the lease)",
                    self.source,
                    throughout - held,
                    throughout,
                )
