"""Rate limits of the fake Discord server: per-bucket counters and injected 429s.

discord.py only treats a 429 as a Discord rate limit, and retries it after ``retry_after``,
when the response has a ``Via`` header and a JSON body (a 429 without ``Via`` is taken for a
Cloudflare ban and raised as ``HTTPException``), so every answer here carries
``Via: 1.1 google`` like Discord's, plus the ``X-RateLimit-*`` headers discord.py uses to
pre-emptively wait when a bucket is exhausted.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
import time
from collections import deque
from dataclasses import dataclass, field

from bot.testing.discord.wire import DiscordError

__all__ = ["RATE_LIMITED", "Buckets", "Injection", "Injections"]

RATE_LIMITED = "You are being rate limited."
VIA = "1.1 google"


def bucket_hash(route: str) -> str:
    """A stable opaque bucket id per route template, like Discord's ``X-RateLimit-Bucket``."""
    return hashlib.sha1(route.encode()).hexdigest()[:32]


@dataclass(slots=True)
class _Window:
    started: float
    used: int = 0


class Buckets:
    """Fixed-window counters per (route template, major parameters).

    ``limit`` requests per ``window`` seconds; a client that ignores the headers and goes
    over gets a real (non-injected) 429. Defaults are generous so tests stay fast.
    """

    def __init__(self, limit: int = 50, window: float = 1.0) -> None:
        self.limit = limit
        self.window = window
        self._windows: dict[tuple[str, str], _Window] = {}

    def take(self, route: str, major: str) -> dict[str, str]:
        """Count one request; returns its headers, raises the 429 when over the limit."""
        now = time.monotonic()
        key = (route, major)
        current = self._windows.get(key)
        if current is None or now - current.started >= self.window:
            current = self._windows[key] = _Window(now)
        current.used += 1
        reset_after = max(self.window - (now - current.started), 0.001)
        remaining = self.limit - current.used
        headers = limit_headers(route, self.limit, max(remaining, 0), reset_after)
        if remaining < 0:
            raise too_many(reset_after, headers, global_=False)
        return headers


def limit_headers(route: str, limit: int, remaining: int, reset_after: float) -> dict[str, str]:
    return {
        "Via": VIA,
        "X-RateLimit-Bucket": bucket_hash(route),
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
        "X-RateLimit-Reset-After": f"{reset_after:.3f}",
    }


def too_many(retry_after: float, headers: dict[str, str], *, global_: bool) -> DiscordError:
    """A 429 exactly as Discord sends it (body, ``Retry-After``, scope, ``Via``)."""
    extra = {"retry_after": retry_after, "global": global_}
    out = dict(headers)
    out["Retry-After"] = str(max(1, math.ceil(retry_after)))
    out["Via"] = VIA
    if global_:
        for name in [h for h in out if h.startswith("X-RateLimit-") and h != "X-RateLimit-Bucket"]:
            del out[name]
        out["X-RateLimit-Global"] = "true"
        out["X-RateLimit-Scope"] = "global"
    else:
        out["X-RateLimit-Remaining"] = "0"
        out["X-RateLimit-Reset-After"] = f"{retry_after:.3f}"
        out["X-RateLimit-Reset"] = f"{time.time() + retry_after:.3f}"
        out["X-RateLimit-Scope"] = "user"
    return DiscordError(429, RATE_LIMITED, None, extra=extra, headers=out)


@dataclass(slots=True)
class Injection:
    """A scripted failure: the next ``times`` matching requests get it instead of an answer."""

    pattern: str
    error_factory: str  # "rate_limit" or "fail", for summaries
    status: int
    message: str
    code: int = 0
    retry_after: float = 0.0
    global_: bool = False
    times: int = 1
    hits: list[float] = field(default_factory=list)

    def matches(self, method: str, path: str, route: str | None, name: str | None) -> bool:
        """``pattern`` is a route name (``create_message``), or ``[METHOD ]path`` where path
        is a concrete path, a template (``/channels/{channel_id}/messages``) or a glob."""
        pattern = self.pattern.strip()
        if name is not None and pattern == name:
            return True
        want_method, _, want_path = pattern.rpartition(" ")
        if want_method and want_method.upper() != method:
            return False
        template = route.partition(" ")[2] if route else None
        if "{" in want_path:
            return template == want_path
        return fnmatch.fnmatchcase(path, want_path)

    def error(self, headers: dict[str, str]) -> DiscordError:
        if self.status == 429:
            return too_many(self.retry_after, headers, global_=self.global_)
        return DiscordError(self.status, self.message, self.code, headers=headers)


class Injections:
    """The pending scripted failures, consumed in the order they were added."""

    def __init__(self) -> None:
        self._pending: deque[Injection] = deque()

    def add(self, injection: Injection) -> Injection:
        self._pending.append(injection)
        return injection

    def take(self, method: str, path: str, route: str | None, name: str | None) -> Injection | None:
        for injection in self._pending:
            if injection.matches(method, path, route, name):
                injection.times -= 1
                injection.hits.append(time.monotonic())
                if injection.times <= 0:
                    self._pending.remove(injection)
                return injection
        return None

    def clear(self) -> None:
        self._pending.clear()
