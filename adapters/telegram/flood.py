"""Telegram flood control and transient failures: the one retry layer for Bot API calls.

aiogram raises ``TelegramRetryAfter`` on a 429 and does not retry; nor does it retry a 5xx or a
network error. This session middleware resends, bounded three ways:

* a 429 waits the ``retry_after`` Telegram asked for, at most ``retries`` times, and never a
  wait longer than ``max_wait``;
* a 5xx (``TelegramServerError``), a body that is not JSON (a proxy's 502 page) or a network
  error waits a jittered, doubling backoff (0.5 s up to 10 s), at most ``MAX_ATTEMPTS`` tries;
* no wait begins that would end past ``deadline`` seconds after the first try -- or past the
  end of the current :meth:`FloodRetry.window`, which the adapter opens around the final
  delivery of one reply, so a reply is settled (delivered, or known not to be) in bounded time.

A resent ``sendMessage`` after a timeout may post twice if the first one did arrive: rare, and
better than a lost reply. ``getUpdates`` and ``getMe`` are left to their own loops (aiogram's
polling backs off on any error; the adapter retries ``getMe`` until stopped).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from aiogram.client.session.middlewares.base import (
    BaseRequestMiddleware,
    NextRequestMiddlewareType,
)
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.methods import GetMe, GetUpdates
from aiogram.methods.base import Response, TelegramMethod, TelegramType

if TYPE_CHECKING:
    from aiogram import Bot

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[Any]]
Clock = Callable[[], float]

TRANSIENT = (TelegramServerError, TelegramNetworkError, ClientDecodeError)
MAX_ATTEMPTS = 8  # tries of one call failing with a 5xx or a network error
BACKOFF_BASE = 0.5
BACKOFF_MAX = 10.0

_OWN_LOOPS = (GetUpdates, GetMe)  # retried by their callers, not here
_window_end: ContextVar[float | None] = ContextVar("telegram_delivery_window", default=None)


class FloodRetry(BaseRequestMiddleware):
    def __init__(
        self,
        retries: int = 3,
        max_wait: float = 60.0,
        sleep: Sleep = asyncio.sleep,
        *,
        deadline: float = 60.0,
        clock: Clock = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.retries = retries
        self.max_wait = max_wait
        self.sleep = sleep
        self.deadline = deadline
        self.clock = clock
        self.jitter = jitter

    @contextlib.contextmanager
    def window(self) -> Iterator[None]:
        """Calls made inside share one deadline (an enclosing window's, if earlier)."""
        end = self.clock() + self.deadline
        outer = _window_end.get()
        token = _window_end.set(end if outer is None else min(outer, end))
        try:
            yield
        finally:
            _window_end.reset(token)

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Response[TelegramType]:
        if type(method) in _OWN_LOOPS:
            return await make_request(bot, method)
        name = type(method).__name__
        end = self.clock() + self.deadline
        window = _window_end.get()
        if window is not None:
            end = min(end, window)
        floods = failures = 0
        while True:
            error: Exception
            try:
                return await make_request(bot, method)
            except TelegramRetryAfter as exc:
                error = exc
                floods += 1
                wait = float(exc.retry_after)
                if floods > self.retries or wait > self.max_wait:
                    log.warning(
                        "flood control: giving up method=%s retry_after=%ss attempts=%d",
                        name,
                        exc.retry_after,
                        floods,
                    )
                    raise
                what = f"flood control retry_after={exc.retry_after}s"
            except TRANSIENT as exc:
                error = exc
                failures += 1
                if failures >= MAX_ATTEMPTS:
                    log.warning("telegram: giving up method=%s after %d tries", name, failures)
                    raise
                wait = min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (failures - 1))
                wait *= 0.5 + 0.5 * self.jitter()  # callers failing together come back apart
                what = f"{type(exc).__name__}: {exc}"
            if self.clock() + wait > end:
                log.warning(
                    "telegram: giving up method=%s, the delivery deadline is near (%s)", name, what
                )
                raise error
            log.info("telegram: resending method=%s in %.1fs (%s)", name, wait, what)
            await self.sleep(wait)
