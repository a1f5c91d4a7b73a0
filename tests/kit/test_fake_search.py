"""The fake search service: SearxNG's and Brave's API shapes, their errors, and the pages it
serves, read with a plain aiohttp client as a real one would."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from bot.testing.fake_search import BRAVE_TOKEN, FakeSearch, SearchResult

RESULTS = [
    SearchResult("One", "https://one.example/", "first"),
    SearchResult("Two", "https://two.example/", "second"),
    SearchResult("Three", "https://three.example/", "third"),
]


async def get(url: str, **kwargs: object) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, allow_redirects=False, **kwargs) as response,  # type: ignore[arg-type]
    ):
        return response.status, dict(response.headers), await response.read()


async def get_json(url: str, **kwargs: object) -> tuple[int, dict[str, str], object]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, allow_redirects=False, **kwargs) as response,  # type: ignore[arg-type]
    ):
        return response.status, dict(response.headers), await response.json(content_type=None)


async def test_searxng_json_api(fake_search: FakeSearch) -> None:
    fake_search.results = RESULTS
    status, _, body = await get_json(f"{fake_search.base_url}/search?q=tea&format=json")
    assert status == 200 and isinstance(body, dict)
    assert body["query"] == "tea"
    assert [(r["title"], r["url"], r["content"]) for r in body["results"]] == [
        ("One", "https://one.example/", "first"),
        ("Two", "https://two.example/", "second"),
        ("Three", "https://three.example/", "third"),
    ]
    assert {"answers", "infoboxes", "suggestions", "unresponsive_engines"} <= set(body)


async def test_searxng_refuses_json_unless_enabled(fake_search: FakeSearch) -> None:
    status, _, _ = await get(f"{fake_search.base_url}/search?q=tea")  # the HTML page: not faked
    assert status == 403
    fake_search.searxng_json = False
    status, _, _ = await get(f"{fake_search.base_url}/search?q=tea&format=json")
    assert status == 403


async def test_brave_api_checks_the_token_and_honours_count(fake_search: FakeSearch) -> None:
    fake_search.results = RESULTS
    url = f"{fake_search.base_url}/res/v1/web/search?q=tea&count=2"
    status, _, body = await get_json(url, headers={"X-Subscription-Token": BRAVE_TOKEN})
    assert status == 200 and isinstance(body, dict)
    assert body["query"]["original"] == "tea"
    assert [(r["title"], r["url"], r["description"]) for r in body["web"]["results"]] == [
        ("One", "https://one.example/", "first"),
        ("Two", "https://two.example/", "second"),
    ]
    for headers in ({"X-Subscription-Token": "wrong"}, {}):
        status, _, body = await get_json(url, headers=headers)
        assert status == 401 and isinstance(body, dict)
        assert body["error"]["code"] == "SUBSCRIPTION_TOKEN_INVALID"


async def test_rate_limit_answers_429_with_retry_after_then_recovers(
    fake_search: FakeSearch,
) -> None:
    fake_search.rate_limit(retry_after=3, times=2)
    searxng = f"{fake_search.base_url}/search?q=a&format=json"
    brave = f"{fake_search.base_url}/res/v1/web/search?q=a"
    token = {"X-Subscription-Token": BRAVE_TOKEN}
    first = await get(searxng)
    second = await get(brave, headers=token)
    assert [first[0], second[0]] == [429, 429]
    assert first[1]["Retry-After"] == second[1]["Retry-After"] == "3"
    assert (await get(searxng))[0] == 200
    assert (await get(brave, headers=token))[0] == 200


async def test_requests_are_recorded_with_headers_and_host(fake_search: FakeSearch) -> None:
    await get(f"{fake_search.base_url}/search?q=green+tea&format=json", headers={"X-A": "1"})
    await get(fake_search.url("/page", "localhost"))
    search, page = fake_search.requests
    assert (search.api, search.path, search.query) == (
        "searxng",
        "/search",
        {"q": "green tea", "format": "json"},
    )
    assert search.headers["x-a"] == "1"
    assert (page.api, page.host) == ("page", f"localhost:{fake_search.port}")
    assert fake_search.searches == [search]


async def test_pages_redirects_and_missing_paths(fake_search: FakeSearch) -> None:
    fake_search.page("/a", "<p>hi</p>")
    fake_search.page("/b", b"%PDF-1.7", content_type="application/pdf", status=203)
    fake_search.page("/z", "<p>" + "z" * 10_000 + "</p>", gzip=True)
    fake_search.redirect("/r", "http://169.254.169.254/", status=307)
    status, headers, body = await get(fake_search.url("/a"))
    assert (status, headers["Content-Type"], body) == (
        200,
        "text/html; charset=utf-8",
        b"<p>hi</p>",
    )
    status, headers, body = await get(fake_search.url("/b"))
    assert (status, headers["Content-Type"], body) == (203, "application/pdf", b"%PDF-1.7")
    status, headers, body = await get(fake_search.url("/z"))  # aiohttp inflates it
    assert headers["Content-Encoding"] == "gzip" and len(body) == 10_007
    assert fake_search.sent["/z"] < 1000
    status, headers, _ = await get(fake_search.url("/r"))
    assert (status, headers["Location"]) == (307, "http://169.254.169.254/")
    assert (await get(fake_search.url("/nothing")))[0] == 404


async def test_a_delayed_page_waits(fake_search: FakeSearch) -> None:
    fake_search.page("/slow", "<p>late</p>", delay=0.3)
    started = time.monotonic()
    assert (await get(fake_search.url("/slow")))[2] == b"<p>late</p>"
    assert time.monotonic() - started >= 0.3


async def test_an_endless_page_stops_when_the_client_hangs_up(fake_search: FakeSearch) -> None:
    fake_search.endless("/forever")
    async with aiohttp.ClientSession() as session:
        response = await session.get(fake_search.url("/forever"))
        taken = 0
        async for chunk in response.content.iter_chunked(65536):
            taken += len(chunk)
            if taken > 1_000_000:
                break
        response.close()
    await asyncio.sleep(0.2)
    sent = fake_search.sent["/forever"]
    await asyncio.sleep(0.2)
    assert fake_search.sent["/forever"] == sent  # no longer writing
    assert 1_000_000 < sent < 100_000_000


async def test_base_url_needs_a_started_fake() -> None:
    fake = FakeSearch()
    with pytest.raises(RuntimeError, match="not started"):
        _ = fake.base_url
    async with fake:
        assert fake.base_url.startswith("http://127.0.0.1:")
        with pytest.raises(RuntimeError, match="already running"):
            await fake.start()
