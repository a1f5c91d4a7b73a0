"""Hostile input at the HTTP server (issue 25): a JSON body nested past Python's recursion
limit, a login ``next=`` a browser would read as another origin, a CR/LF in a page's path.
Each is a clear 4xx or a same-site redirect, never a 500, a dropped connection or a traceback."""

from __future__ import annotations

import asyncio
import logging
import re
from html import unescape
from urllib.parse import urljoin, urlsplit

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.http.dashboard.login import _next
from adapters.http.server import build_web_app
from tests.conftest import AppFactory
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, serve_http

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
GOOD = '{"model": "parlour", "messages": [{"role": "user", "content": "hi"}], "metadata": '


def nested(depth: int, shape: str) -> str:
    if shape == "list":
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


def noisy(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Records a refused request must not leave: errors, or anything with a traceback."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.mark.parametrize("depth", [50_000, 100_000])
@pytest.mark.parametrize("shape", ["list", "object", "inside-a-request"])
async def test_a_deeply_nested_json_body_is_a_400_in_openai_shape_without_a_traceback(
    make_app: AppFactory, caplog: pytest.LogCaptureFixture, depth: int, shape: str
) -> None:
    body = GOOD + nested(depth, "object") + "}" if shape == "inside-a-request" else None
    data = body or nested(depth, shape)
    headers = {"Authorization": f"Bearer {CHAT_TOKEN}", "Content-Type": "application/json"}
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        async with http.post("/v1/chat/completions", data=data, headers=headers) as r:
            assert r.status == 400
            error = (await r.json())["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["type"] == "invalid_request_error" and "JSON" in error["message"]
        async with http.get("/v1/models", headers=headers) as r:
            assert r.status == 200  # the server goes on
    assert noisy(caplog) == []


async def test_no_route_answers_a_deeply_nested_json_body_with_a_500(
    make_app: AppFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Every state-changing route, admin API and dashboard alike: whatever it reads of the
    body, a nesting past the recursion limit is a 4xx in its own error shape (or ignored)."""
    data = nested(100_000, "list")
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        router = build_web_app(served.adapter.context).router
        writes = [r for r in router.routes() if r.method not in ("GET", "HEAD")]
        assert len(writes) >= 9  # the chat endpoint, the admin API's and the dashboard's forms
        for route in writes:
            path = re.sub(r"\{[^}]+\}", "telegram:42", route.resource.canonical)  # type: ignore[union-attr]
            async with http.request(
                route.method, path, data=data, headers=ADMIN, allow_redirects=False
            ) as r:
                assert r.status < 500, (route.method, path, r.status)
                if r.status >= 400 and path.startswith(("/api/", "/v1/")):  # pages answer text
                    assert "error" in await r.json(), (route.method, path)
    assert noisy(caplog) == []


BAD_NEXT = [
    "/\\127.0.0.1:1/x",
    "/\\evil.example",
    "\\\\evil.example",
    "/\t/evil.example",
    "/\r\n/evil.example",
    "/\n/evil.example",
    " //evil.example",
    "//evil.example",
    "///evil.example",
    "https://evil.example/",
    "https:evil.example",
    "javascript:alert(1)",
    "evil.example",
    "/\x00/evil.example",
    "/\u3000/evil.example",
]


async def test_a_login_next_that_a_browser_reads_as_another_origin_falls_back_to_the_root(
    make_app: AppFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        for evil in BAD_NEXT:
            async with http.post(
                "/login", data={"token": ADMIN_TOKEN, "next": evil}, allow_redirects=False
            ) as r:
                assert (r.status, r.headers["Location"]) == (303, "/"), repr(evil)
            async with http.get("/login", params={"next": evil}) as r:
                assert r.status == 200
                found = re.search(r'name="next" value="([^"]*)"', await r.text())
            assert found and unescape(found.group(1)) == "/", repr(evil)
        for fine in ("/usage", "/chats/telegram:-100?before=5&limit=2", "/caf%C3%A9"):
            async with http.post(
                "/login", data={"token": ADMIN_TOKEN, "next": fine}, allow_redirects=False
            ) as r:
                assert (r.status, r.headers["Location"]) == (303, fine)
    assert noisy(caplog) == []


def browser_reads(location: str) -> str:
    """What a browser makes of a Location: surrounding C0 and spaces gone, tab/CR/LF dropped,
    a backslash read as a slash (the WHATWG URL parser, for http URLs)."""
    text = location.strip("".join(map(chr, range(0x21))))
    return re.sub(r"[\t\r\n]", "", text).replace("\\", "/")


PREFIXES = st.sampled_from(["", "/", "//", "/\\", "\\", "/\t", " /", "http:", "/%2F"])


@given(st.sampled_from(BAD_NEXT) | st.builds(str.__add__, PREFIXES, st.text()))
def test_next_never_leaves_the_site(value: str) -> None:
    target = _next(value)
    assert target.isascii() and target.isprintable()  # safe in a Location header
    joined = urlsplit(urljoin("http://h:1/", browser_reads(target)))
    assert (joined.scheme, joined.netloc) == ("http", "h:1"), target


async def raw_get(port: int, target: str) -> bytes:
    """One GET with ``target`` sent exactly as given (no client tidies it up)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


async def test_a_crlf_in_a_page_path_is_a_plain_redirect_to_the_login(
    make_app: AppFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with serve_http(make_app) as served:
        assert served.adapter.port is not None
        answer = await raw_get(served.adapter.port, "/%0d%0aSet-Cookie:%20pwned=1")
        head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        assert head[0].startswith("HTTP/1.1 303"), answer[:300]
        headers = dict(line.split(": ", 1) for line in head[1:])
        assert not any(name.lower() == "set-cookie" for name in headers), head
        location = headers["Location"]
        assert location.startswith("/login?next=") and location.isprintable()
        async with aiohttp.ClientSession(served.url) as http:
            # the login page offers the path back exactly, and a login goes there, not elsewhere
            async with http.get(location, allow_redirects=False) as r:
                found = re.search(r'name="next" value="([^"]*)"', await r.text())
            assert found and unescape(found.group(1)) == "/%0d%0aSet-Cookie:%20pwned=1"
            deep = await raw_get(served.adapter.port, "/chats/a%3Fb?before=5&limit=2")
            location = re.findall(rb"Location: (\S+)", deep)[0].decode()
            async with http.get(location) as r:
                found = re.search(r'name="next" value="([^"]*)"', await r.text())
            assert found and unescape(found.group(1)) == "/chats/a%3Fb?before=5&limit=2"
    assert noisy(caplog) == []
