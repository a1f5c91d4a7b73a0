"""Run the real Telegram adapter against the test kit's fakes, in one of two tiers.

``running_bot`` is the contract tier: aiogram long-polls the fake Bot API (or serves a
webhook), so update delivery itself (offsets, conflicts, restarts, bad updates) is on the wire.
``fed_bot`` is the in-process tier: the same adapter, but the test hands each update straight
to its aiogram ``Dispatcher`` (``feed_update``, as webhook mode does) and awaits its handling.
Everything the bot *sends* still crosses the wire to the fake, so sends and edits are asserted
there as before; what it saves is the waiting, since a test knows when an update is done
instead of watching the fake for a quiet spell.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiogram.types import Update

from adapters.telegram.adapter import TelegramAdapter
from adapters.telegram.edits import ALLOWED_UPDATES
from bot.app import App
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory, Sleeps

JSONDict = dict[str, Any]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def webhook_on(port: int, **extra: Any) -> dict[str, Any]:
    """A ``telegram.webhook`` section: the bot listens on ``port`` and Telegram posts there."""
    return {
        "url": f"http://127.0.0.1:{port}/hook",
        "path": "/hook",
        "listen_host": "127.0.0.1",
        "listen_port": port,
        **extra,
    }


def telegram_section(tg: FakeTelegram, **overrides: Any) -> dict[str, Any]:
    return {
        "enabled": True,
        "token": tg.token,
        "api_server": tg.api_server,
        "polling_timeout": 5,
        **overrides,
    }


@asynccontextmanager
async def running_bot(
    make_app: AppFactory,
    tg: FakeTelegram,
    *,
    flood_sleeps: Sleeps | None = None,
    telegram: dict[str, Any] | None = None,
    **sections: Any,
) -> AsyncIterator[tuple[App, TelegramAdapter]]:
    """The app and a running adapter; stopped (and drained) on exit."""
    section = telegram_section(tg, **(telegram or {}))
    async with make_app(telegram=section, **sections) as app:
        sleep = asyncio.sleep if flood_sleeps is None else flood_sleeps
        adapter = TelegramAdapter(app.platform, flood_sleep=sleep)
        task = asyncio.ensure_future(adapter.run())
        method = "setWebhook" if section.get("mode") == "webhook" else "getUpdates"
        try:
            await tg.wait_until(
                lambda: task.done() or any(c.method == method for c in tg.calls), timeout=10
            )
            if task.done():
                task.result()  # raise what stopped it
            yield app, adapter
        finally:
            await adapter.stop()
            await asyncio.wait_for(task, 15)


# -- the in-process tier -----------------------------------------------------------------------


class _FedAdapter(TelegramAdapter):
    """The real adapter (start-up, handlers, replies, stop), minus polling: its updates come
    from ``FedBot.feed``."""

    async def _poll(self) -> None:
        self.ready.set()
        await self._stopped.wait()


@dataclass
class FedBot:
    """A started adapter whose updates the test feeds (``fed_bot``)."""

    app: App
    adapter: TelegramAdapter
    tg: FakeTelegram

    async def feed(self, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Hand what the fake holds for the bot to the dispatcher, as one ``getUpdates`` batch
        (a task per update, in order, like aiogram's polling), and return once every handler
        has: the answers are then on the fake in full. A handler's error fails the test."""
        bot = self.adapter.bot
        raw = self.tg.take_updates(ALLOWED_UPDATES)
        updates = [Update.model_validate(u, context={"bot": bot}) for u in raw]
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(self.adapter.dispatcher.feed_update(bot, u) for u in updates))

    async def replies(self, chat_id: int, count: int = 1) -> list[JSONDict]:
        """The bot's messages in the chat after handling what was sent; at least ``count``."""
        await self.feed()
        messages = self.tg.messages(chat_id)
        assert len(messages) >= count, f"expected {count} bot message(s)\n{self.tg.summary()}"
        return messages

    async def silence(self, chat_id: int) -> None:
        """What was sent is handled, and the bot wrote nothing in the chat."""
        before = len(self.tg.messages(chat_id))
        await self.feed()
        assert len(self.tg.messages(chat_id)) == before, "the bot answered when it should not"


@asynccontextmanager
async def fed_bot(
    make_app: AppFactory,
    tg: FakeTelegram,
    *,
    flood_sleeps: Sleeps | None = None,
    telegram: dict[str, Any] | None = None,
    **sections: Any,
) -> AsyncIterator[FedBot]:
    """Like ``running_bot``, but nothing polls: the test calls ``feed`` (or ``replies``)."""
    section = telegram_section(tg, **(telegram or {}))
    async with make_app(telegram=section, **sections) as app:
        sleep = asyncio.sleep if flood_sleeps is None else flood_sleeps
        adapter = _FedAdapter(app.platform, flood_sleep=sleep)
        task = asyncio.ensure_future(adapter.run())
        try:
            ready = asyncio.ensure_future(adapter.ready.wait())
            await asyncio.wait({task, ready}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
            ready.cancel()
            if task.done():
                task.result()  # raise what stopped it
            assert adapter.ready.is_set(), "the adapter did not start within 10 s"
            yield FedBot(app, adapter, tg)
        finally:
            await adapter.stop()
            await asyncio.wait_for(task, 15)
