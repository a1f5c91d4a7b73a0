"""Long polling survives an update aiogram cannot parse.

aiogram validates ``getUpdates``' whole result at once, so one update its types reject (a Bot
API newer than the installed aiogram, a malformed update) fails the call; its polling loop then
asks again from the same offset forever, and every chat goes silent. This session middleware
catches that failure of ``getUpdates``, validates the updates of the JSON it already holds one
by one, logs the bad ones (update_id and the fields at fault: never their content, never the
token) and returns the others. aiogram moves the offset past each update it is given; when the
batch ends with a bad one, one more ``getUpdates`` (offset past it, no wait) confirms it to
Telegram, and whatever that returns is passed on too.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from aiogram.client.session.middlewares.base import (
    BaseRequestMiddleware,
    NextRequestMiddlewareType,
)
from aiogram.exceptions import AiogramError, ClientDecodeError
from aiogram.methods import GetUpdates
from aiogram.methods.base import Response, TelegramMethod, TelegramType
from aiogram.types import Update
from pydantic import ValidationError

if TYPE_CHECKING:
    from aiogram import Bot

log = logging.getLogger(__name__)

_MAX_REASONS = 3


class SkipUnparsableUpdates(BaseRequestMiddleware):
    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Response[TelegramType]:
        if not isinstance(method, GetUpdates):
            return await make_request(bot, method)
        fetch = cast("NextRequestMiddlewareType[list[Update]]", make_request)
        # aiogram's chain hands results along, not Response objects, despite its annotations.
        return cast("Response[TelegramType]", await self._updates(fetch, bot, method))

    async def _updates(
        self, fetch: NextRequestMiddlewareType[list[Update]], bot: Bot, method: GetUpdates
    ) -> list[Update]:
        try:
            return cast("list[Update]", await fetch(bot, method))
        except ClientDecodeError as exc:
            raw = _raw_updates(exc.data)
            if raw is None:
                raise  # not a list of updates at all (bad JSON, an error page): aiogram retries
            good, last_bad = _parse_each(raw, bot)
        if last_bad is None or (good and good[-1].update_id > last_bad):
            return good  # aiogram's offset will pass the bad ones
        confirm = GetUpdates(
            offset=last_bad + 1,
            limit=method.limit,
            timeout=0,
            allowed_updates=method.allowed_updates,
        )
        try:
            return good + await self._updates(fetch, bot, confirm)
        except AiogramError as exc:  # the good ones are not lost; the bad one comes back later
            log.warning("telegram: could not confirm skipped update %s: %s", last_bad, exc)
            return good


def _raw_updates(data: Any) -> list[dict[str, Any]] | None:
    """The updates of a getUpdates answer that parsed as JSON, if every one has an id."""
    if not isinstance(data, dict) or data.get("ok") is not True:
        return None
    result = data.get("result")
    if not isinstance(result, list) or not result:
        return None
    if not all(isinstance(u, dict) and isinstance(u.get("update_id"), int) for u in result):
        return None  # without ids the offset cannot move past them
    return result


def _parse_each(raw: list[dict[str, Any]], bot: Bot) -> tuple[list[Update], int | None]:
    """The updates that parse, and the highest update_id of those that do not."""
    good: list[Update] = []
    last_bad: int | None = None
    for item in raw:
        update_id = int(item["update_id"])
        try:
            good.append(Update.model_validate(item, context={"bot": bot}))
        except ValidationError as exc:
            log.warning(
                "telegram: skipping update %s that aiogram cannot parse (%s)",
                update_id,
                _reasons(exc),
            )
            last_bad = update_id if last_bad is None else max(last_bad, update_id)
    return good, last_bad


def _reasons(exc: ValidationError) -> str:
    """Where validation failed, without the input values (they are someone's message)."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    shown = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors[:_MAX_REASONS]]
    more = len(errors) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
