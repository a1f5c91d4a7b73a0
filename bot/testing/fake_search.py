"""A fake web search service and web server on 127.0.0.1, for tests of web tools (``plugins.web``).

It answers the two search APIs the plugin speaks, as their documentation shapes them:

* SearxNG's JSON API: ``GET /search?q=...&format=json`` -> ``{"query", "results": [{"title",
  "url", "content", ...}], ...}``; with ``searxng_json = False`` it answers 403, as an instance
  whose ``settings.yml`` does not enable the ``json`` format does;
* the Brave Search API: ``GET /res/v1/web/search?q=...&count=...`` with the key in
  ``X-Subscription-Token`` -> ``{"web": {"results": [{"title", "url", "description"}]}}``; a
  missing or wrong key gets 401 and Brave's error body.

``rate_limit(retry_after, times)`` answers the next searches 429 with ``Retry-After``. Every
request is recorded (``requests``: path, query, headers, Host) so a test asserts on what crossed
the wire. Besides, it serves what a page fetcher reads: ``page(path, body, ...)`` (any content
type, a status, a delay, gzip), ``redirect(path, location)`` and ``endless(path)`` (a body that
never ends: ``sent[path]`` tells how much the client took before it hung up)::

    async with FakeSearch() as fake:
        fake.results = [SearchResult("Tea", "https://tea.example/", "All about tea")]
        fake.page("/tea", "<html><title>Tea</title><p>Green tea.</p></html>")
        ...  # the plugin with base_url=fake.base_url; fetch_page(fake.url("/tea"))
"""

from __future__ import annotations

import asyncio
import gzip
from dataclasses import dataclass, field

from aiohttp import web

from bot.testing.service import FakeService, serve

__all__ = ["BRAVE_TOKEN", "FakeSearch", "SearchResult", "SeenRequest"]

BRAVE_TOKEN = "brave-test-token-0123456789"
SEARXNG_PATH = "/search"
BRAVE_PATH = "/res/v1/web/search"
_SHUTDOWN_TIMEOUT = 1.0
_CHUNK = b"<p>" + b"x" * (64 * 1024 - 7) + b"</p>\n"
_ENDLESS_CAP = 1 << 30  # an endless page still stops after 1 GiB, so a broken client cannot hang


@dataclass(frozen=True, slots=True)
class SearchResult:
    title: str
    url: str
    snippet: str  # SearxNG's "content", Brave's "description"


@dataclass(frozen=True, slots=True)
class SeenRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names in lower case
    host: str  # the Host header: the name the client asked for

    @property
    def api(self) -> str:
        """``searxng``, ``brave`` or ``page``."""
        return {SEARXNG_PATH: "searxng", BRAVE_PATH: "brave"}.get(self.path, "page")


@dataclass
class _Page:
    body: bytes
    content_type: str | None  # None: aiohttp's default (application/octet-stream)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    gzip: bool = False
    endless: bool = False


class FakeSearch(FakeService):
    """The fake; ``results`` is what both search APIs answer (each API's own shape)."""

    def __init__(self, *, brave_token: str = BRAVE_TOKEN) -> None:
        self.brave_token = brave_token
        self.results: list[SearchResult] = []
        self.searxng_json = True  # False: 403, as SearxNG without `json` in search.formats
        self.requests: list[SeenRequest] = []
        self.sent: dict[str, int] = {}  # bytes of body written per page path
        self._pages: dict[str, _Page] = {}
        self._limited: list[int] = []  # Retry-After of each 429 still to answer
        self._runner: web.AppRunner | None = None
        self._port = 0

    # ----------------------------------------------------------------- lifecycle

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        if self._runner is not None:
            raise RuntimeError("FakeSearch is already running")
        app = web.Application()
        app.router.add_get(SEARXNG_PATH, self._searxng)
        app.router.add_get(BRAVE_PATH, self._brave)
        app.router.add_get("/{tail:.*}", self._page)
        self._runner, self._port, _ = await serve(
            app, host, port, shutdown_timeout=_SHUTDOWN_TIMEOUT
        )

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``: the plugin's ``base_url`` for either provider."""
        if self._runner is None:
            raise RuntimeError("FakeSearch is not started; call start() or use 'async with'")
        return f"http://127.0.0.1:{self._port}"

    @property
    def port(self) -> int:
        return self._port

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        """A page's URL through ``host`` (``localhost`` reaches the same server by name)."""
        return f"http://{host}:{self._port}{path}"

    # ----------------------------------------------------------------- what tests set

    def rate_limit(self, retry_after: int = 1, times: int = 1) -> None:
        """Answer the next ``times`` searches (either API) 429 with ``Retry-After``."""
        self._limited += [retry_after] * times

    def page(
        self,
        path: str,
        body: str | bytes,
        content_type: str = "text/html; charset=utf-8",
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
        gzip: bool = False,
    ) -> None:
        """Serve ``body`` at ``path``, after ``delay`` seconds, gzipped if ``gzip``."""
        data = body.encode() if isinstance(body, str) else body
        self._pages[path] = _Page(data, content_type, status, dict(headers or {}), delay, gzip)

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        """Answer ``path`` with a redirect to ``location`` (any URL, sent as given)."""
        self._pages[path] = _Page(b"", None, status, {"Location": location})

    def endless(self, path: str, content_type: str = "text/html") -> None:
        """Serve a body at ``path`` that never ends (until the client hangs up)."""
        self._pages[path] = _Page(b"", content_type, endless=True)

    @property
    def searches(self) -> list[SeenRequest]:
        """The requests to either search API, oldest first."""
        return [r for r in self.requests if r.api != "page"]

    # ----------------------------------------------------------------- handlers

    def _record(self, request: web.Request) -> None:
        self.requests.append(
            SeenRequest(
                request.method,
                request.path,
                dict(request.query),
                {name.lower(): value for name, value in request.headers.items()},
                request.headers.get("Host", ""),
            )
        )

    def _limit(self) -> web.Response | None:
        if not self._limited:
            return None
        wait = self._limited.pop(0)
        body = {"type": "ErrorResponse", "error": {"status": 429, "code": "RATE_LIMITED"}}
        return web.json_response(body, status=429, headers={"Retry-After": str(wait)})

    async def _searxng(self, request: web.Request) -> web.Response:
        self._record(request)
        if request.query.get("format") != "json" or not self.searxng_json:
            return web.Response(status=403, text="403 Forbidden", content_type="text/html")
        limited = self._limit()
        if limited is not None:
            return limited
        query = request.query.get("q", "")
        results = [
            {
                "title": r.title,
                "url": r.url,
                "content": r.snippet,
                "engine": "fake",
                "engines": ["fake"],
                "score": 1.0 / n,
                "category": "general",
            }
            for n, r in enumerate(self.results, 1)
        ]
        body = {
            "query": query,
            "number_of_results": len(results),
            "results": results,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        }
        return web.json_response(body)

    async def _brave(self, request: web.Request) -> web.Response:
        self._record(request)
        if request.headers.get("X-Subscription-Token") != self.brave_token:
            error = {
                "id": "fake",
                "status": 401,
                "code": "SUBSCRIPTION_TOKEN_INVALID",
                "detail": "The provided subscription token is invalid.",
            }
            return web.json_response({"type": "ErrorResponse", "error": error}, status=401)
        limited = self._limit()
        if limited is not None:
            return limited
        query = request.query.get("q", "")
        count = int(request.query.get("count", "20") or 20)
        results = [
            {"type": "search_result", "title": r.title, "url": r.url, "description": r.snippet}
            for r in self.results[: max(1, min(count, 20))]
        ]
        body = {
            "type": "search",
            "query": {"original": query},
            "web": {"type": "search", "results": results},
        }
        return web.json_response(body)

    async def _page(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        page = self._pages.get(request.path)
        if page is None:
            return web.Response(status=404, text="<h1>Not Found</h1>", content_type="text/html")
        if page.delay:
            await asyncio.sleep(page.delay)
        headers = dict(page.headers)
        if page.content_type is not None:
            headers["Content-Type"] = page.content_type
        if page.endless:
            return await self._stream(request, headers)
        body = gzip.compress(page.body) if page.gzip else page.body
        if page.gzip:
            headers["Content-Encoding"] = "gzip"
        self.sent[request.path] = len(body)
        return web.Response(status=page.status, body=body, headers=headers)

    async def _stream(self, request: web.Request, headers: dict[str, str]) -> web.StreamResponse:
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        self.sent[request.path] = 0
        try:
            while self.sent[request.path] < _ENDLESS_CAP:
                await response.write(_CHUNK)
                self.sent[request.path] += len(_CHUNK)
        except (ConnectionError, RuntimeError):
            pass  # the client hung up: what a size limit should make it do
        return response
