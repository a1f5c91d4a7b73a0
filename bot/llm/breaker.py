"""A circuit breaker per endpoint: a provider that is down is skipped, not waited for.

Without it, everyone queued behind one conversation's lock (a group shares one) or arriving
while the provider is down waits a full ``llm.deadline`` of retries each, one after the other.
After a call to an endpoint fails for good with it unavailable (connection refused, timeouts,
5xx, its share of the deadline), the endpoint is skipped for ``cooldown`` seconds: the client
goes to the next fallback, and with none left the user is told at once. After the cooldown one
call probes it (the others keep being told) and closes the breaker if it answers. Busy (429),
quota and bad-request errors say nothing about the endpoint being down and leave it shut.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from bot.errors import LLMUnavailableError

log = logging.getLogger(__name__)


class CircuitBreaker:
    def __init__(
        self, cooldown: float, name: str = "LLM", *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.cooldown = cooldown
        self.name = name
        self.clock = clock
        self._open_until = 0.0
        self._probing = False

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

    def failed(self) -> None:
        if self.cooldown <= 0:
            return
        if not self._open_until:
            log.warning("%s unavailable: skipping it for %.0fs", self.name, self.cooldown)
        self._open_until = self.clock() + self.cooldown

    def succeeded(self) -> None:
        if self._open_until:
            log.info("%s answering again", self.name)
        self._open_until = 0.0
