"""One scheduler leader at a time, on a named lease in the shared database.

Every ``renew_seconds`` (a fifth of the lease) each replica calls ``acquire_lease``: the holder
extends it, a follower takes it when it is free or ran out. The leader trusts its lease only until
``sent + lease_seconds - margin``, measured on its own monotonic clock from *before* the request
was sent: the database started the lease after that instant, so this replica stops trusting it
before the database lets anyone else take it, whatever the two wall clocks say. The margin (a
third of the lease) covers a round of firing that starts just before the limit.

A failed or refused renewal ends the trust at once. A leader that dies (kill -9) stops renewing;
its lease runs out after at most ``lease_seconds`` and the next follower tick takes over. A leader
that stops cleanly releases the lease, so a follower takes over on its next tick.
"""

from __future__ import annotations

import asyncio
import logging
import time

from bot.storage.coordination import Leases

__all__ = ["DEFAULT_LEASE_SECONDS", "Leadership"]

log = logging.getLogger("bot.scheduling.scheduler")

DEFAULT_LEASE_SECONDS = 15.0


class Leadership:
    """Whether this replica may fire jobs now, kept up to date by :meth:`renew`."""

    def __init__(
        self,
        leases: Leases,
        owner: str,
        *,
        name: str = "scheduler",
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be positive, not {lease_seconds}")
        self.leases = leases
        self.owner = owner
        self.name = name
        self.lease_seconds = lease_seconds
        self.renew_seconds = lease_seconds / 5
        self._margin = lease_seconds / 3
        self._trusted_until = 0.0  # time.monotonic()

    def may_fire(self) -> bool:
        """True while this replica holds the lease with the margin to spare."""
        return time.monotonic() < self._trusted_until

    async def renew(self) -> bool:
        """Take or extend the lease; True when this replica leads now. Never raises."""
        sent = time.monotonic()
        try:
            async with asyncio.timeout(self.renew_seconds):
                held = await self.leases.acquire_lease(self.name, self.owner, self.lease_seconds)
        except Exception as exc:  # a database error or a hung request: not the leader
            log.warning(
                "scheduler lease %r: renewal failed (%s); not firing jobs until it succeeds",
                self.name,
                type(exc).__name__,
            )
            held = False
        self._trusted_until = sent + self.lease_seconds - self._margin if held else 0.0
        return self.may_fire()

    async def release(self) -> None:
        """Give the lease up (a clean stop), so a follower takes over on its next tick."""
        self._trusted_until = 0.0
        try:
            async with asyncio.timeout(self.renew_seconds):
                await self.leases.release_lease(self.name, self.owner)
        except Exception as exc:  # it runs out on its own
            log.warning("scheduler lease %r: not released (%s)", self.name, type(exc).__name__)
