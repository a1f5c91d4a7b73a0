"""A circuit breaker per endpoint: a provider that is down is skipped, not waited for.

Without it, everyone queued behind one conversation's lock (a group shares one) or arriving
while the provider is down waits a full ``llm.deadline`` of retries each, one after the other.
After a call to an endpoint fails for good on the endpoint's side (connection refused,
timeouts, 5xx, 408, its share of the deadline), the endpoint is skipped for ``cooldown``
seconds: the client goes to the next fallback, and with none left the user is told at once.
After the cooldown one call probes it (the others keep being told) and closes the breaker if it
answers. Only those provider-side failures open it: anyone can send a message, so anything one
message's content can cause -- a 4xx about the request (400, 404, 413, 422, ...), an error
raised on our side before anything was sent (text that cannot be encoded) -- must cost that
message alone, never everyone's service. Busy (429) and quota errors leave it shut too.

Replicas sharing a database (``shared``) share each endpoint's breaker: a failure one of them
sees opens it for all (:class:`bot.storage.coordination.SharedLimits`). Each learns the shared
state with a read (:meth:`CircuitBreaker.refresh`) reused for ``REFRESH_EVERY`` seconds while its
breaker is closed: a burst of turns costs one read a second per endpoint, not one per turn (with
two replicas on PostgreSQL that read was one of a turn's ten statements). So an endpoint another
replica found down gets at most that second's requests from this one before it is skipped here
too -- as requests already in flight when a breaker opens do. While open, the read is made per
request, so a probe another replica saw answer closes it here at once. After a shared cooldown
each replica sends its own one probe.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from bot.errors import LLMError, LLMUnavailableError
from bot.storage.coordination import SharedLimits
from bot.values import BreakerState

log = logging.getLogger(__name__)

REFRESH_EVERY = 1.0  # seconds a shared state read is reused while the breaker is closed


def counts_as_down(error: LLMError) -> bool:
    """Whether a failed call says the endpoint is down: no connection, a timeout, a broken
    stream (no status), a 5xx or a 408. Errors raised before sending are never
    ``LLMUnavailableError`` (see :func:`bot.llm.retry.classify`)."""
    if not isinstance(error, LLMUnavailableError):
        return False
    return error.status is None or error.status >= 500 or error.status == 408


class CircuitBreaker:
    """``shared``: the database's breaker of the same ``name``, when replicas share one."""

    def __init__(
        self,
        cooldown: float,
        name: str = "LLM",
        *,
        clock: Callable[[], float] = time.monotonic,
        shared: SharedLimits | None = None,
    ) -> None:
        self.cooldown = cooldown
        self.name = name
        self.clock = clock
        self.shared = shared if cooldown > 0 else None
        self._open_until = 0.0
        self._probing = False
        self._read_at: float | None = None  # when the shared state was last read
        self._shared_open = False  # the last shared state read or written was not closed

    def current(self, *, force: bool = False) -> bool:
        """Whether :meth:`refresh` would read nothing: alone, or read less than
        ``REFRESH_EVERY`` seconds ago (and not ``force``)."""
        if self.shared is None:
            return True
        at = self._read_at
        return not force and at is not None and self.clock() - at < REFRESH_EVERY

    async def refresh(self, *, force: bool = False) -> None:
        """Learn what the other replicas saw (one read; reused for ``REFRESH_EVERY`` seconds
        unless ``force``). Without ``shared`` there is nothing to learn."""
        if self.shared is None or self.current(force=force):
            return
        self._read_at = self.clock()
        self._adopt(await self.shared.breaker_state(self._key))

    @property
    def is_open(self) -> bool:
        return self.clock() < self._open_until

    def admits(self) -> bool:
        """Whether a call may go to the endpoint now (closed, or the first after cooldown)."""
        return not self.is_open and not (self._open_until and self._probing)

    @contextmanager
    def attempt(self) -> Iterator[None]:
        """Around one call: raises at once while the endpoint is known to be down; after the
        cooldown, only one caller at a time probes it."""
        if not self.admits():
            left = max(0.0, self._open_until - self.clock())
            raise LLMUnavailableError(f"{self.name}: down, failing fast for another {left:.0f}s")
        probe = bool(self._open_until)
        self._probing = self._probing or probe
        try:
            yield
        finally:
            if probe:
                self._probing = False

    async def failed(self) -> None:
        if self.cooldown <= 0:
            return
        if not self._open_until:
            log.warning("%s unavailable: skipping it for %.0fs", self.name, self.cooldown)
        self._open_until = self.clock() + self.cooldown
        if self.shared is not None:  # threshold 1: like this process's own, the first opens it
            self._adopt(await self.shared.breaker_failure(self._key, 1, self.cooldown))

    async def judge(self, error: LLMError) -> None:
        """After a call failed with ``error``: open on the endpoint's own failures, close on any
        other answer from it, and ignore an error that never reached it (no status)."""
        if counts_as_down(error):
            await self.failed()
        elif error.status is not None:
            await self.succeeded()  # it answered, if only to say no

    async def succeeded(self) -> None:
        if self._open_until:
            log.info("%s answering again", self.name)
        self._open_until = 0.0
        if self.shared is not None and self._shared_open:  # no write while all is well
            self._shared_open = False
            await self.shared.breaker_success(self._key)

    @property
    def _key(self) -> str:
        return f"llm:{self.name}"

    def _adopt(self, state: BreakerState) -> None:
        """Take the shared state as ours: open (for as long as the database says), cooled
        down (the next call probes), or closed."""
        now = self.clock()
        self._shared_open = bool(state.open_until or state.failures)
        if state.open_for > 0:
            self._open_until = now + state.open_for
        elif state.open_until:
            self._open_until = min(self._open_until, now) or now  # cooled down: probe
        elif self._open_until:
            log.info("%s answering again (another replica saw it)", self.name)
            self._open_until = 0.0
