"""Logging out ends the session everywhere: the copied cookie is refused by the replica that
logged it out and by another replica on the same database; older cookies without a session id
are refused; revocations outlive no cookie."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
from pathlib import Path

import aiohttp

from adapters.http.auth import COOKIE
from adapters.http.revocation import NAMESPACE
from tests.conftest import AppFactory
from tests.http_harness import ADMIN_TOKEN, serve_http


async def log_in(url: str) -> str:
    """The session cookie the login form gives for the admin token."""
    async with (
        aiohttp.ClientSession(url) as http,
        http.post("/login", data={"token": ADMIN_TOKEN}, allow_redirects=False) as r,
    ):
        assert r.status == 303
        return r.cookies[COOKIE].value


def with_cookie(cookie: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE}={cookie}"}


async def works(url: str, cookie: str) -> bool:
    """Whether ``cookie`` opens a page and the API (and, if not, that both refuse it alike)."""
    async with aiohttp.ClientSession(url, headers=with_cookie(cookie)) as http:
        async with http.get("/", allow_redirects=False) as page:
            location = page.headers.get("Location")
        async with http.get("/api/chats") as api:
            body = await api.json()
    if page.status == 200 and api.status == 200:
        return True
    assert page.status == 303 and location == "/login?next=/"
    assert api.status == 401 and body["error"]["code"] == "invalid_api_key"
    return False


async def log_out(url: str, cookie: str) -> None:
    async with aiohttp.ClientSession(url, headers=with_cookie(cookie)) as http:
        async with http.get("/") as r:
            found = re.search(r'name="csrf-token" content="([^"]+)"', await r.text())
        assert found
        async with http.post("/logout", data={"csrf": found[1]}, allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == "/login"


async def test_a_logged_out_cookie_is_refused_by_every_replica(
    make_app: AppFactory, tmp_path: Path
) -> None:
    second = {"jobs_path": str(tmp_path / "b.jobs.sqlite")}  # its own scheduler, as replicas do
    async with (
        serve_http(make_app) as a,
        serve_http(make_app, storage=second) as b,  # one database (file or schema), two apps
    ):
        assert a.app.store is not b.app.store
        cookie = await log_in(a.url)
        other = await log_in(b.url)  # another session of the same token
        assert await works(a.url, cookie) and await works(b.url, cookie)

        await log_out(a.url, cookie)

        assert not await works(a.url, cookie)
        assert not await works(b.url, cookie)  # the other replica asks the shared store
        assert await works(a.url, other) and await works(b.url, other)  # only that session
        records = await b.app.store.kv_items(NAMESPACE)
        assert len(records) == 1 and records[0][1] > time.time()  # kept until it expires


async def test_a_logout_without_the_csrf_token_revokes_nothing(make_app: AppFactory) -> None:
    async with serve_http(make_app) as served:
        cookie = await log_in(served.url)
        async with (
            aiohttp.ClientSession(served.url, headers=with_cookie(cookie)) as http,
            http.post("/logout", data={"csrf": "forged"}, allow_redirects=False) as r,
        ):
            assert r.status == 403
        assert await works(served.url, cookie)
        assert await served.app.store.kv_items(NAMESPACE) == []


async def test_a_cookie_made_before_session_ids_is_refused(make_app: AppFactory) -> None:
    """The old body was ``name|expires``: it could never be revoked, so it no longer opens."""
    async with serve_http(make_app) as served:
        body = f"ops|{int(time.time()) + 3600}".encode()
        key = hashlib.sha256(b"parlour-session:" + ADMIN_TOKEN.encode()).digest()
        mac = hmac.new(key, body, "sha256").digest()
        old = f"{_b64(body)}.{_b64(mac)}"
        assert not await works(served.url, old)


async def test_expired_revocations_are_swept_at_the_next_logout(make_app: AppFactory) -> None:
    async with serve_http(make_app) as served:
        store = served.app.store
        await store.kv_set(NAMESPACE, "revoked:" + "x" * 22, int(time.time()) - 1)
        cookie = await log_in(served.url)
        await log_out(served.url, cookie)
        assert [until > time.time() for _, until in await store.kv_items(NAMESPACE)] == [True]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
