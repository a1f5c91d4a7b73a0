"""The per-user limits behind one small seam: in process memory, or in the shared database.

One process on a SQLite file keeps its token buckets and requests in flight in memory
(:mod:`bot.guardrails.rate_limit`). Replicas sharing a PostgreSQL database (``store.replicas``)
must agree on them, or a flood spread over N replicas would cost N bursts: there they live in
the database (:class:`bot.storage.coordination.SharedLimits`), one statement per check. Both
say the same things to the user: the first refusal of a burst out loud, the rest quiet; while
one request is in flight up to ``max_queued`` more may wait, one beyond that is refused, told
once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from bot.guardrails.rate_limit import (
    InFlight,
    MessageRateLimiter,
    Place,
    StillAnsweringError,
    rate_limited,
)
from bot.storage import owners
from bot.storage.coordination import SharedLimits

__all__ = ["FLIGHT_MARGIN", "LocalUserLimits", "SharedUserLimits", "UserLimits"]

log = logging.getLogger(__name__)

# A flight outlives the model's deadline by this much before another replica may assume that
# the one holding it died.
FLIGHT_MARGIN = 30.0
_PRUNE_EVERY = 1024  # checks between sweeps of refilled buckets and expired flights


class UserLimits(Protocol):
    async def take(self, key: str) -> None:
        """Spend one message of ``key``'s allowance or raise ``RateLimitedError``."""
        ...

    def hold(self, key: str) -> AbstractAsyncContextManager[Place]:
        """While a request of ``key`` is answered or waits; entering raises
        ``StillAnsweringError`` when all of its places are taken. The place may be given back
        early (``Place.release``): a message a burst took into another's turn."""
        ...


class LocalUserLimits:
    """This process's memory (one process per database). Nothing awaits inside, so checks
    happen in arrival order."""

    def __init__(self, rate: MessageRateLimiter, in_flight: InFlight) -> None:
        self.rate = rate
        self.in_flight = in_flight

    async def take(self, key: str) -> None:
        self.rate.take(key)

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[Place]:
        with self.in_flight.hold(key) as place:
            yield place


class SharedUserLimits:
    """The database's buckets and flights, shared by every replica.

    A flight is claimed under an owner of its own (this instance plus a counter) and released
    on every way out of the request, cancellation included; if the replica dies it expires
    after ``flight_seconds``.
    """

    def __init__(
        self,
        limits: SharedLimits,
        per_minute: float | None,
        burst: int,
        *,
        one_in_flight: bool,
        flight_seconds: float,
        max_queued: int = 0,
    ) -> None:
        self.limits = limits
        self.per_minute = per_minute
        self.burst = max(1, burst)
        self.one_in_flight = one_in_flight
        self.flight_seconds = flight_seconds
        self.max_queued = max(0, max_queued)
        self._owner = owners.new_owner()
        self._claims = itertools.count(1)
        self._checks = 0

    async def take(self, key: str) -> None:
        if self.per_minute is None:
            return
        await self._maybe_prune()
        decision = await self.limits.take_token(f"rate:{key}", self.per_minute, self.burst)
        if not decision.allowed:
            wait = max(1, math.ceil(decision.retry_after))
            raise rate_limited(key, self.per_minute, wait, first=decision.first_refusal)

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[Place]:
        if not self.one_in_flight:
            yield Place(None)
            return
        owner = f"{self._owner}#{next(self._claims)}"
        flight = await self._claim(key, owner)
        place = _SharedPlace(self.limits, flight, owner)
        try:
            yield place
        finally:
            await place.release()

    async def _claim(self, key: str, owner: str) -> str:
        """One of ``key``'s places: the answer's (``flight:KEY``), else a waiting one
        (``flight:KEY#1`` ...), tried in order; none free raises ``StillAnsweringError``."""
        first = False
        for place in range(self.max_queued + 1):
            flight = f"flight:{key}" if place == 0 else f"flight:{key}#{place}"
            claimed, first = await self.limits.claim_flight(flight, owner, self.flight_seconds)
            if claimed:
                return flight
        raise StillAnsweringError(f"still answering key={key}", notify=first)

    async def _maybe_prune(self) -> None:
        self._checks += 1
        if self._checks % _PRUNE_EVERY == 0:
            gone = await self.limits.prune_limits()
            log.debug("shared limits pruned rows=%d", gone)


class _SharedPlace(Place):
    """A claimed flight row, released once (shielded: a cancelled request still gives its
    claim back rather than leaving the user refused until it expires)."""

    __slots__ = ("_claim",)

    def __init__(self, limits: SharedLimits, flight: str, owner: str) -> None:
        super().__init__(None)
        self._claim: tuple[SharedLimits, str, str] | None = (limits, flight, owner)

    async def release(self) -> None:
        claim, self._claim = self._claim, None
        if claim is not None:
            limits, flight, owner = claim
            await asyncio.shield(limits.release_flight(flight, owner))
