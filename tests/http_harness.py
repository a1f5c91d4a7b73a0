"""The HTTP adapter for tests: the bot and its HTTP server on a free port, and tokens."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from adapters.http.server import HTTPAdapter
from bot.app import App
from tests.conftest import AppFactory

ADMIN_TOKEN = "adm-7f3c9e1b5a2d4c6e8f0a"
OTHER_ADMIN_TOKEN = "adm-0b1c2d3e4f5a6b7c8d9e"
CHAT_TOKEN = "cht-4d2b8a6c0e9f1a3b5c7d"


def http_section(**options: Any) -> dict[str, Any]:
    section: dict[str, Any] = {
        "enabled": True,
        "listen_port": 0,
        "admin_tokens": {"ops": ADMIN_TOKEN, "night": OTHER_ADMIN_TOKEN},
        "chat_tokens": {"website": CHAT_TOKEN},
    }
    section.update(options)
    return section


@dataclass
class Served:
    app: App
    adapter: HTTPAdapter
    url: str  # http://127.0.0.1:PORT


@contextlib.asynccontextmanager
async def serve_http(make_app: AppFactory, **sections: Any) -> AsyncIterator[Served]:
    """The bot with ``http:`` enabled (``sections["http"]`` overrides the defaults)."""
    http = http_section(**sections.pop("http", {}))
    async with make_app(http=http, **sections) as app:
        adapter = HTTPAdapter(app.platform)
        task = app.adapter_runs.start(adapter)
        try:
            await asyncio.wait_for(adapter.ready.wait(), 10)
            yield Served(app, adapter, f"http://127.0.0.1:{adapter.port}")
        finally:
            await adapter.stop()
            await task


async def logged_in(served: Served) -> aiohttp.ClientSession:
    """A browser-like session logged in to the dashboard with the admin token (close it)."""
    http = aiohttp.ClientSession(served.url, cookie_jar=aiohttp.CookieJar(unsafe=True))
    async with http.post("/login", data={"token": ADMIN_TOKEN}) as r:
        assert r.status == 200
    return http
