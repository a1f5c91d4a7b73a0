"""Run the real Telegram adapter (aiogram polling or webhook) against the test kit's fakes."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from adapters.telegram.adapter import TelegramAdapter
from bot.app import App
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory, Sleeps


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
