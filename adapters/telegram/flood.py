"""Telegram flood control: the one retry layer for Bot API calls.

aiogram raises ``TelegramRetryAfter`` on a 429 and does not retry. This session middleware
sleeps the ``retry_after`` Telegram asked for and resends, a bounded number of times, so a
burst of edits in a busy group slows down instead of losing a reply. ``getUpdates`` is left to
aiogram's polling loop, which already backs off on any error.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiogram.client.session.middlewares.base import (
    BaseRequestMiddleware,
    NextRequestMiddlewareType,
)
from aiogram.exceptions import TelegramRetryAfter
from aiogram.methods import GetUpdates
from aiogram.methods.base import Response, TelegramMethod, TelegramType

if TYPE_CHECKING:
    from aiogram import Bot

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[Any]]


class FloodRetry(BaseRequestMiddleware):
    def __init__(self, retries: int = 3, max_wait: float = 60.0, sleep: Sleep = asyncio.sleep):
        self.retries = retries
        self.max_wait = max_wait
        self.sleep = sleep

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Response[TelegramType]:
        attempt = 0
        while True:
            try:
                return await make_request(bot, method)
            except TelegramRetryAfter as exc:
                if isinstance(method, GetUpdates):
                    raise
                attempt += 1
                if attempt > self.retries or exc.retry_after > self.max_wait:
                    log.warning(
                        "flood control: giving up method=%s retry_after=%ss attempts=%d",
                        type(method).__name__,
                        exc.retry_after,
                        attempt,
                    )
                    raise
                log.info(
                    "flood control: waiting %ss before resending method=%s attempt=%d",
                    exc.retry_after,
                    type(method).__name__,
                    attempt,
                )
                await self.sleep(exc.retry_after)
