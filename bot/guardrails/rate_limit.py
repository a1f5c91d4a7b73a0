"""Per-user message limits: a token bucket per user per chat, one request in flight per user per
conversation (a few more may wait behind it), and ``Once`` for refusals said once in a while.

Both are checked before a message is stored or queued for the model, so a flooding user costs
neither tokens nor history rows. The first refusal of a burst is said out loud; the rest of the
same burst are refused quietly (a reply per spam message would itself be spam, and the platform's
own flood control would throttle the bot for everyone). Nothing here awaits: checks happen in
arrival order. Replicas sharing a database keep the same limits there instead
(:mod:`bot.guardrails.shared_limits`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from bot.errors import UserFacingError

Clock = Callable[[], float]
_PRUNE_EVERY = 1024  # buckets created between sweeps of the ones that have refilled


class RateLimitedError(UserFacingError):
    """Too many messages from one user; ``notify`` is False for the quiet repeats of a burst."""

    def __init__(self, message: str, *, chat_text: str, retry_after: float, notify: bool) -> None:
        super().__init__(message, chat_text=chat_text, notify=notify)
        self.retry_after = retry_after


def rate_limited(key: str, per_minute: float, wait: int, *, first: bool) -> RateLimitedError:
    """The refusal of one message of ``key`` (said out loud only when ``first``), wherever the
    bucket lives (here, or shared: :mod:`bot.guardrails.shared_limits`)."""
    return RateLimitedError(
        f"rate limited key={key} retry_after={wait}s",
        chat_text=f"You're sending messages faster than I can answer (the limit is "
        f"{per_minute:g} a minute). I'll skip your messages here for about {wait} "
        "seconds; please send that one again then.",
        retry_after=wait,
        notify=first,
    )


class StillAnsweringError(UserFacingError):
    """The same user wrote again in the same conversation while their answer was being written
    and as many of their messages as may wait (``limits.max_queued``) were waiting already."""

    chat_text = "I'm still answering your earlier messages; send this one again once I've replied."


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float
    warned: bool = False


class MessageRateLimiter:
    """``per_minute`` messages per key on average, up to ``burst`` at once.

    ``per_minute=None`` switches the limiter off. Idle buckets that have refilled are dropped,
    so memory follows the number of recently active users, not every user ever seen.
    """

    def __init__(self, per_minute: float | None, burst: int, *, clock: Clock = time.monotonic):
        self.per_minute = per_minute
        self.burst = max(1, burst)
        self.clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._created = 0

    @property
    def enabled(self) -> bool:
        return self.per_minute is not None

    def take(self, key: str) -> None:
        """Spend one message of ``key``'s allowance or raise :class:`RateLimitedError`."""
        if self.per_minute is None:
            return
        now = self.clock()
        rate = self.per_minute / 60.0
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._new_bucket(key, now)
        else:
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            bucket.warned = False
            return
        wait = math.ceil((1.0 - bucket.tokens) / rate)
        first = not bucket.warned
        bucket.warned = True
        raise rate_limited(key, self.per_minute, wait, first=first)

    def __len__(self) -> int:
        return len(self._buckets)

    def _new_bucket(self, key: str, now: float) -> _Bucket:
        self._created += 1
        if self._created % _PRUNE_EVERY == 0:
            self._prune(now)
        bucket = self._buckets[key] = _Bucket(tokens=float(self.burst), updated=now)
        return bucket

    def _prune(self, now: float) -> None:
        assert self.per_minute is not None
        rate = self.per_minute / 60.0
        full = [
            key
            for key, bucket in self._buckets.items()
            if bucket.tokens + (now - bucket.updated) * rate >= self.burst
        ]
        for key in full:
            del self._buckets[key]


class InFlight:
    """Keys with a request being answered: up to ``max_queued`` more may wait behind it (they
    are answered next, in order); one beyond that is refused.

    Only the first refusal while the key is busy is said out loud.
    """

    def __init__(self, enabled: bool, max_queued: int = 0) -> None:
        self.enabled = enabled
        self.max_queued = max(0, max_queued)
        self._busy: dict[str, tuple[int, bool]] = {}  # key -> (holders, told about a refusal)

    @contextmanager
    def hold(self, key: str) -> Iterator[Place]:
        """A place for one message of ``key``, given back on exit or by ``Place.release``
        (a message answered with another one's turn needs none: bursts)."""
        if not self.enabled:
            yield Place(None)
            return
        holders, told = self._busy.get(key, (0, False))
        if holders > self.max_queued:
            self._busy[key] = (holders, True)
            raise StillAnsweringError(f"still answering key={key}", notify=not told)
        self._busy[key] = (holders + 1, told)
        place = Place(lambda: self._leave(key))
        try:
            yield place
        finally:
            place.give_back()

    def _leave(self, key: str) -> None:
        holders, told = self._busy[key]
        if holders <= 1:
            del self._busy[key]
        else:
            self._busy[key] = (holders - 1, told)

    def __contains__(self, key: object) -> bool:
        return key in self._busy


class Place:
    """One message's place among a user's requests in flight: given back once, whichever
    comes first (its request ends, or a burst took it into an earlier message's turn)."""

    __slots__ = ("_leave",)

    def __init__(self, leave: Callable[[], object] | None) -> None:
        self._leave = leave

    def give_back(self) -> None:
        leave, self._leave = self._leave, None
        if leave is not None:
            leave()

    async def release(self) -> None:
        self.give_back()


class Once:
    """``first(key)`` is True once per ``every`` seconds per key: say a refusal, then stay quiet.

    Keys told longer ago than ``every`` are swept as new ones arrive, so memory follows the
    keys of the last ``every`` seconds.
    """

    def __init__(self, every: float, *, clock: Clock = time.monotonic) -> None:
        self.every = every
        self.clock = clock
        self._told: dict[str, float] = {}
        self._sweep_at = _PRUNE_EVERY

    def first(self, key: str) -> bool:
        now = self.clock()
        told = self._told.get(key)
        if told is not None and now - told < self.every:
            return False
        if len(self._told) >= self._sweep_at:  # amortised: the next sweep waits for 2x
            self._told = {k: t for k, t in self._told.items() if now - t < self.every}
            self._sweep_at = max(_PRUNE_EVERY, 2 * len(self._told))
        self._told[key] = now
        return True

    def __len__(self) -> int:
        return len(self._told)
