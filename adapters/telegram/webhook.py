"""Webhook mode: Telegram POSTs each update to our aiohttp server.

Telegram signs nothing; it echoes the ``secret_token`` given to ``setWebhook`` in the
``X-Telegram-Bot-Api-Secret-Token`` header, so that header is compared in constant time and a
mismatch gets 401. Telegram redelivers an update it thinks failed (a slow answer, a restart), so
recently seen ``update_id``s are remembered and a repeat is acknowledged without running twice.
The update is handled in the background and 200 returned at once: Telegram waits for nobody.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from aiohttp import web

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
_REMEMBERED_UPDATES = 10_000

UpdateHandler = Callable[[dict[str, object]], Awaitable[None]]


class WebhookServer:
    def __init__(
        self, handle: UpdateHandler, *, secret: str, path: str, host: str, port: int
    ) -> None:
        self.handle = handle
        self.secret = secret
        self.path = path
        self.host = host
        self.port = port
        self._seen: OrderedDict[int, None] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_post(self.path, self._receive)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self._runner.addresses:
            self.port = int(self._runner.addresses[0][1])
        log.info("telegram webhook listening on %s:%d%s", self.host, self.port, self.path)

    async def stop(self) -> None:
        """Stop accepting updates; updates already accepted finish."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _receive(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), self.secret.encode()):
            log.warning("webhook: wrong or missing secret token from %s", request.remote)
            return web.json_response({"ok": False, "description": "Unauthorized"}, status=401)
        try:
            update = json.loads(await request.read())
            update_id = int(update["update_id"])
        except (ValueError, KeyError, TypeError):
            return web.json_response({"ok": False, "description": "Bad Request"}, status=400)
        if update_id in self._seen:
            log.info("webhook: duplicate update %d ignored", update_id)
            return web.json_response({"ok": True})
        self._seen[update_id] = None
        while len(self._seen) > _REMEMBERED_UPDATES:
            self._seen.popitem(last=False)
        task = asyncio.ensure_future(self.handle(update))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return web.json_response({"ok": True})
