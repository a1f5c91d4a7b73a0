"""aiogram's response models, built once per process (issue 31).

aiogram checks every Bot API answer with ``Response[method.__returning__]``, a pydantic generic
model made on first use. pydantic caches those weakly: once no answer holds one, it is collected
and the next call builds it again (its core schema generated and walked, a few ms each): about
30 times in a burst of 200 chats. This session middleware holds each one the bot has used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiogram.client.session.middlewares.base import (
    BaseRequestMiddleware,
    NextRequestMiddlewareType,
)
from aiogram.methods.base import Response, TelegramMethod, TelegramType

if TYPE_CHECKING:
    from aiogram import Bot

__all__ = ["KeepResponseModels"]

_KEPT: dict[type[Any], type[Any]] = {}  # method class -> its Response model, for the process


class KeepResponseModels(BaseRequestMiddleware):
    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Response[TelegramType]:
        kind = type(method)
        if kind not in _KEPT:
            _KEPT[kind] = Response[method.__returning__]  # type: ignore[name-defined]
        return await make_request(bot, method)
