"""``/login`` and ``/logout``: an admin token in exchange for the dashboard's session cookie.

The form posts the token once; from then on the browser holds only the signed session
(:mod:`adapters.http.auth`), never the token. A wrong token counts against the address like a
wrong Bearer token, and the page says only that it was wrong.
"""

from __future__ import annotations

import logging
from urllib.parse import quote, urlsplit

from aiohttp import web

from adapters.http.auth import COOKIE, TooManyFailures
from adapters.http.context import CONTEXT, PRINCIPAL, HTTPContext, client_address, see_other
from adapters.http.dashboard.render import STATIC_DIR, render

__all__ = ["add_routes"]

log = logging.getLogger(__name__)


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    web_app.router.add_get("/login", login_page)
    web_app.router.add_post("/login", login)
    web_app.router.add_post("/logout", logout)
    web_app.router.add_static("/static/", STATIC_DIR, append_version=False)


# Kept as is: a path's own punctuation and its %-escapes. The rest (non-ASCII, quotes,
# brackets) is %-encoded: the same place to a browser, and the Location header stays ASCII.
_KEEP = "/?#&=;:@!$'()*+,~%-._"


def _next(value: object) -> str:
    r"""Where to go after logging in: a path on this site only (never an open redirect).

    A browser reads a URL more loosely than ``urlsplit`` (WHATWG): a backslash is a slash,
    tabs and newlines vanish, leading spaces and controls are dropped, so ``/\evil`` and
    ``/\t/evil`` are ``//evil``, another origin. So a backslash, any whitespace or control
    character, no single leading ``/``, a scheme or a host: ``/``."""
    text = str(value or "/")
    if (
        not text.startswith("/")
        or text.startswith("//")
        or "\\" in text
        or any(c.isspace() or not c.isprintable() for c in text)
    ):
        return "/"
    parts = urlsplit(text)
    if parts.scheme or parts.netloc:
        return "/"
    return quote(text, safe=_KEEP)


async def login_page(request: web.Request) -> web.Response:
    return render(request, "login.html", next=_next(request.query.get("next")), error="")


async def login(request: web.Request) -> web.StreamResponse:
    context = request.app[CONTEXT]
    form = await request.post()
    target = _next(form.get("next"))
    try:
        principal = context.auth.check_token(
            str(form.get("token", "")).strip(), client_address(request)
        )
    except TooManyFailures as exc:
        response = render(
            request,
            "login.html",
            status=429,
            next=target,
            error="Too many wrong tokens: wait a minute.",
        )
        response.headers["Retry-After"] = f"{max(1, round(exc.retry_after))}"
        return response
    if principal is None or not principal.is_admin:
        log.warning("dashboard login refused from %s", client_address(request))
        return render(
            request,
            "login.html",
            status=401,
            next=target,
            error="That token is not an admin token.",
        )
    log.info("dashboard login caller=%s", principal.audit_name)
    response = see_other(target)
    context.auth.set_cookie(response, context.auth.new_session(principal))
    return response


async def logout(request: web.Request) -> web.StreamResponse:
    """Behind the guard: only a session (with its CSRF token) can end itself, for good."""
    principal = request.get(PRINCIPAL)
    if principal is not None:
        # revoked in the shared store before the answer leaves: every replica refuses it now
        await request.app[CONTEXT].auth.end_session(principal)
        log.info("dashboard logout caller=%s", principal.audit_name)
    response = see_other("/login")
    response.del_cookie(COOKIE, path="/")
    return response
