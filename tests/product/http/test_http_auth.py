"""Who may call the HTTP server: tokens in constant time, wrong tokens limited, the dashboard's
cookie (HttpOnly, SameSite=Strict) and its CSRF token; no token ever in the logs."""

from __future__ import annotations

import logging
import re

import aiohttp
import pytest

from tests.conftest import AppFactory
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, serve_http


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_health_is_public_and_everything_else_needs_a_token(make_app: AppFactory) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        async with http.get("/healthz") as r:
            assert r.status == 200
        async with http.get("/readyz") as r:
            assert r.status == 200 and (await r.json()) == {"ok": True}
        for path in ("/api/chats", "/metrics"):
            async with http.get(path) as r:
                assert r.status == 401
                assert (await r.json())["error"]["code"] == "invalid_api_key"
                assert r.headers["WWW-Authenticate"].startswith("Bearer")
            async with http.get(path, headers=bearer("not-the-token-at-all")) as r:
                assert r.status == 401
        async with http.get("/v1/models") as r:
            assert r.status == 401
            body = await r.json()
            assert body["error"]["type"] == "invalid_request_error"  # OpenAI's error shape
        async with http.get("/api/chats", headers=bearer(CHAT_TOKEN)) as r:
            assert r.status == 403  # a chat token is for /v1 only
        async with http.get("/", allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == "/login?next=/"


async def test_wrong_tokens_are_limited_per_address(make_app: AppFactory) -> None:
    async with (
        serve_http(make_app, http={"failed_logins_per_minute": 3}) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        for _ in range(3):
            async with http.get("/api/chats", headers=bearer("guess-guess-guess-1")) as r:
                assert r.status == 401
        async with http.get("/api/chats", headers=bearer("guess-guess-guess-2")) as r:
            assert r.status == 429
            assert 1 <= int(r.headers["Retry-After"]) <= 60
        async with http.get("/api/chats", headers=bearer(ADMIN_TOKEN)) as r:
            assert r.status == 429  # even the right token waits: guessing must not pay
        async with http.post("/login", data={"token": ADMIN_TOKEN}) as r:
            assert r.status == 429


async def test_login_sets_a_strict_http_only_cookie_and_state_changes_need_csrf(
    make_app: AppFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve_http(make_app) as served:
        jar = aiohttp.CookieJar(unsafe=True)  # 127.0.0.1 is an IP: the jar must keep it
        async with aiohttp.ClientSession(served.url, cookie_jar=jar) as http:
            async with http.post("/login", data={"token": "wrong-token-wrong"}) as r:
                assert r.status == 401 and "not an admin token" in await r.text()
            async with http.post("/login", data={"token": CHAT_TOKEN}) as r:
                assert r.status == 401  # a chat token opens no dashboard
            async with http.post(
                "/login", data={"token": ADMIN_TOKEN, "next": "/usage"}, allow_redirects=False
            ) as r:
                assert r.status == 303 and r.headers["Location"] == "/usage"
                cookie = r.headers["Set-Cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
            assert ADMIN_TOKEN not in cookie
            async with http.get("/login") as r:  # any page of the session carries the token
                assert r.status == 200
            async with http.post("/logout", allow_redirects=False) as r:
                assert r.status == 403 and (await r.json())["error"]["code"] == "csrf_failed"
            async with http.post("/logout", data={"csrf": "forged"}, allow_redirects=False) as r:
                assert r.status == 403
            csrf = await _csrf(http)
            async with http.post("/logout", data={"csrf": csrf}, allow_redirects=False) as r:
                assert r.status == 303
    assert ADMIN_TOKEN not in caplog.text and CHAT_TOKEN not in caplog.text


async def test_open_redirects_are_refused(make_app: AppFactory) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        for evil in ("https://evil.example/", "//evil.example/"):
            async with http.post(
                "/login", data={"token": ADMIN_TOKEN, "next": evil}, allow_redirects=False
            ) as r:
                assert r.headers["Location"] == "/"


async def _csrf(http: aiohttp.ClientSession) -> str:
    """A page's CSRF token (in its meta tag), as the dashboard's forms carry it."""
    async with http.get("/static/parlour.css") as r:  # public: no token in it
        assert r.status == 200
    async with http.get("/") as r:
        text = await r.text()
    found = re.search(r'name="csrf-token" content="([^"]+)"', text)
    assert found, text[:500]
    return found.group(1)
