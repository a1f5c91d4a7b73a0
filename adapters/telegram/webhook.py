"""Webhook mode: Telegram POSTs each update to our aiohttp server, and we answer only once the
update is durable.

Telegram signs nothing; it echoes the ``secret_token`` given to ``setWebhook`` in the
``X-Telegram-Bot-Api-Secret-Token`` header, so that header is compared in constant time and a
mismatch gets 401. A body Telegram never sends (not UTF-8 JSON, nested past the recursion limit, not
an object, no integer ``update_id`` the inbox's 64-bit column keeps) gets 400 before anything is
stored. The update is then handed to ``accept`` (the adapter stores it in the inbox,
:mod:`bot.scheduling.inbox`) and 200 is answered only after that returned: an acknowledged update is
in the database, whichever replica later runs it. When it cannot be stored we answer 500, so
Telegram delivers it again. A redelivery (Telegram retries an update whose answer it missed, to any
replica behind the load balancer) is recognised by the database and acknowledged without running
twice. Nothing here runs an update or remembers one.

``GET /healthz`` on the same listener is for the load balancer: 200 with the inbox's backlog
while the database answers, 503 when it does not (this replica could not store an update).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"

HEALTH_PATH = "/healthz"

# The inbox keeps an update_id in a signed 64-bit column (SQLite INTEGER, PostgreSQL bigint).
UPDATE_IDS = range(-(2**63), 2**63)

# (update_id, the update as posted, its JSON text) -> True if stored, False if a redelivery.
UpdateAcceptor = Callable[[int, dict[str, object], str], Awaitable[bool]]
# What the health check reports (it raises when the database cannot be reached).
HealthProbe = Callable[[], Awaitable[dict[str, object]]]


class WebhookServer:
    def __init__(
        self,
        accept: UpdateAcceptor,
        *,
        secret: str,
        path: str,
        host: str,
        port: int,
        health: HealthProbe | None = None,
    ) -> None:
        self.accept = accept
        self.health = health
        self.secret = secret
        self.path = path
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_post(self.path, self._receive)
        if self.health is not None and self.path != HEALTH_PATH:
            app.router.add_get(HEALTH_PATH, self._health)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self._runner.addresses:
            self.port = int(self._runner.addresses[0][1])
        log.info("telegram webhook listening on %s:%d%s", self.host, self.port, self.path)

    async def stop(self) -> None:
        """Stop accepting updates (the ones accepted are in the inbox already)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _receive(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), self.secret.encode()):
            log.warning("webhook: wrong or missing secret token from %s", request.remote)
            return web.json_response({"ok": False, "description": "Unauthorized"}, status=401)
        parsed = _parse(await request.read())
        if parsed is None:
            return web.json_response({"ok": False, "description": "Bad Request"}, status=400)
        update_id, update, text = parsed
        try:
            stored = await self.accept(update_id, update, text)
        except Exception:
            log.exception(
                "webhook: update %d not stored; Telegram will deliver it again", update_id
            )
            return web.json_response({"ok": False, "description": "Not stored"}, status=500)
        if not stored:
            log.info("webhook: update %d is a redelivery, acknowledged", update_id)
        return web.json_response({"ok": True})

    async def _health(self, request: web.Request) -> web.Response:
        assert self.health is not None
        try:
            report = await self.health()
        except Exception as exc:
            log.warning("webhook health: the database does not answer: %s", type(exc).__name__)
            return web.json_response({"ok": False, "error": type(exc).__name__}, status=503)
        return web.json_response({"ok": True, **report})


def _parse(body: bytes) -> tuple[int, dict[str, object], str] | None:
    """The update's id, the update and its text; None for what Telegram never sends (not
    UTF-8 JSON, nested past the interpreter's limit, not an object, no integer ``update_id``
    the inbox can keep): refused with a 400 before anything reaches the database."""
    try:
        text = body.decode()
        update = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested past the interpreter's limit
        return None
    if not isinstance(update, dict):
        return None
    update_id = update.get("update_id")
    if type(update_id) is not int or update_id not in UPDATE_IDS:  # bool, float, huge: no
        return None
    return update_id, update, text
