"""A circuit breaker for a provider that is down: fail at once instead of waiting in line.

Without it, everyone queued behind one conversation's lock (a group shares one) or arriving
while the provider is down waits a full ``llm.deadline`` of retries each, one after the other.
After a call fails for good with the provider unavailable (connection refused, timeouts, 5xx,
the deadline), calls for the next ``cooldown`` seconds fail at once with the same chat-safe text;
the first call after that tries again (and re-opens it if the provider is still down). Busy
(429), quota and bad-request errors say nothing about the provider being down and leave it shut.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from bot.errors import LLMUnavailableError

log = logging.getLogger(__name__)


class CircuitBreaker:
    def __init__(self, cooldown: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.cooldown = cooldown
        self.clock = clock
        self._open_until = 0.0

    @property
    def is_open(self) -> bool:
        return self.clock() < self._open_until

    def check(self) -> None:
        """Raise at once while the provider is known to be down."""
        if self.is_open:
            left = self._open_until - self.clock()
            raise LLMUnavailableError(f"provider down, failing fast for another {left:.0f}s")

    def failed(self) -> None:
        if self.cooldown <= 0:
            return
        if not self.is_open:
            log.warning("LLM provider unavailable: failing fast for %.0fs", self.cooldown)
        self._open_until = self.clock() + self.cooldown

    def succeeded(self) -> None:
        if self._open_until:
            log.info("LLM provider answering again")
        self._open_until = 0.0
