"""The HTTP adapter: one aiohttp server for the chat endpoint, the admin API and the dashboard.

Every route but ``/healthz``, ``/readyz``, ``/login`` and ``/static/`` needs a token, decided
here once, by path, before any handler runs:

==================  =============================  ===========================================
path                who                            without a valid token
==================  =============================  ===========================================
``/v1/...``         a chat or an admin token       401 in OpenAI's error shape
``/api/...``,       an admin token, or the         401 JSON
``/metrics``        dashboard's session cookie
anything else       the dashboard's session        a redirect to ``/login``
==================  =============================  ===========================================

A request made with the session cookie that changes state (not GET/HEAD/OPTIONS) also needs
the CSRF token (:mod:`adapters.http.auth`); a form that posts a document carries it as its
first field, the only one read here (:mod:`adapters.http.uploads`).

Route modules (:mod:`adapters.http.routes`) add their routes with
``add_routes(web_app, context)`` and read the caller from ``request[PRINCIPAL]``
(:mod:`adapters.http.context`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING
from urllib.parse import quote

from aiohttp import web

from adapters.http.auth import COOKIE, CSRF_HEADER, Auth, Principal, TooManyFailures
from adapters.http.context import (
    CONTEXT,
    PRINCIPAL,
    HTTPContext,
    client_address,
    json_error,
    see_other,
)
from adapters.http.revocation import Revocations
from adapters.http.routes import ROUTES, RouteAdder
from adapters.http.settings import http_settings
from adapters.http.uploads import form_csrf, is_streamed

if TYPE_CHECKING:
    from bot.platform.seam import Platform

__all__ = ["HTTPAdapter", "build_web_app", "guard"]

log = logging.getLogger(__name__)

PUBLIC = ("/healthz", "/readyz", "/login", "/static/")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def area(path: str) -> str:
    if path.startswith("/v1/") or path == "/v1":
        return "chat"
    if path.startswith("/api/") or path == "/metrics":
        return "api"
    if any(path == p or (p.endswith("/") and path.startswith(p)) for p in PUBLIC):
        return "public"
    return "page"


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    context = request.app[CONTEXT]
    where = area(request.path)
    if where == "public":
        return await handler(request)
    chat = where == "chat"
    try:
        principal = await _caller(context.auth, request, cookie_ok=not chat)
    except TooManyFailures as exc:
        response = json_error(429, str(exc), "rate_limit_exceeded", chat=chat)
        response.headers["Retry-After"] = f"{max(1, round(exc.retry_after))}"
        return response
    if principal is None:
        if where == "page":
            return see_other(_to_login(request))
        response = json_error(401, "a valid token is required", "invalid_api_key", chat=chat)
        response.headers["WWW-Authenticate"] = 'Bearer realm="parlour"'
        return response
    if not chat and not principal.is_admin:
        return json_error(403, "this token may only use the chat endpoint", "forbidden")
    if request.method not in SAFE_METHODS and principal.via_cookie:
        presented = request.headers.get(CSRF_HEADER)
        if presented is None and is_streamed(request):  # a document: only its first field
            presented = await form_csrf(request)
        elif presented is None and request.content_type in _FORMS:
            presented = str((await request.post()).get("csrf", "")) or None
        if not context.auth.csrf_ok(principal, presented):
            log.warning("csrf refused path=%s caller=%s", request.path, principal.audit_name)
            return json_error(403, "missing or wrong CSRF token", "csrf_failed")
    request[PRINCIPAL] = principal
    return await handler(request)


_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def _to_login(request: web.Request) -> str:
    """The login page, to come back here after: the path as it was sent (still %-encoded,
    so ``%0d%0a`` stays text, never a header break) and encoded once more as one value."""
    return "/login?next=" + quote(request.rel_url.raw_path_qs, safe="/")


async def _caller(auth: Auth, request: web.Request, *, cookie_ok: bool) -> Principal | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return auth.check_token(token.strip(), client_address(request))
    cookie = request.cookies.get(COOKIE)
    if cookie_ok and cookie:
        return await auth.session(cookie)
    auth.refuse_if_limited(client_address(request))
    return None


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    if area(request.path) in ("page", "public"):
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self';"
            " frame-ancestors 'none'; form-action 'self'",
        )
    return response


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def readyz(request: web.Request) -> web.Response:
    """Ready when the database answers (a load balancer sends chats elsewhere otherwise)."""
    store = request.app[CONTEXT].platform.store
    try:
        await asyncio.wait_for(store.schema_version(), 5)
    except Exception as exc:  # any failure of the database: not ready
        return web.json_response({"ok": False, "error": type(exc).__name__}, status=503)
    return web.json_response({"ok": True})


def build_web_app(context: HTTPContext, adders: list[RouteAdder] | None = None) -> web.Application:
    web_app = web.Application(
        middlewares=[security_headers, guard], client_max_size=context.settings.max_body_bytes
    )
    web_app[CONTEXT] = context
    web_app.router.add_get("/healthz", healthz)
    web_app.router.add_get("/readyz", readyz)
    for add in adders if adders is not None else ROUTES:
        add(web_app, context)
    return web_app


class HTTPAdapter:
    name = "http"

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.settings = http_settings(platform.settings)
        revocations = Revocations(lambda: platform.store, hours=self.settings.session_hours)
        self.context = HTTPContext(platform, self.settings, Auth(self.settings, revocations))
        self._stopped = asyncio.Event()
        self.port: int | None = None  # the bound port (listen_port 0: the one the OS chose)
        self.ready = asyncio.Event()

    async def run(self) -> None:
        # an http chat is answered, never posted to: no reminder may be promised there
        self.platform.outbound.declare_pull_only(self.name)
        runner = web.AppRunner(build_web_app(self.context), access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.settings.listen_host, self.settings.listen_port)
            await site.start()
            bound = [address for address in runner.addresses if isinstance(address, tuple)]
            self.port = int(bound[0][1]) if bound else self.settings.listen_port
            log.info("http listening on %s:%s", self.settings.listen_host, self.port)
            self.ready.set()
            await self._stopped.wait()
        finally:
            await runner.cleanup()

    async def stop(self) -> None:
        self._stopped.set()
