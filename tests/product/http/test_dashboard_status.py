"""The dashboard's status page over plain HTTP: the adapters' state, the MCP servers, the last
warnings and errors (masked: a secret in a log line never reaches the page), and ``doctor``'s
rows run on request against the running bot."""

from __future__ import annotations

import asyncio
import html
import logging
import re

import aiohttp

from bot.errors import ConfigError
from bot.testing.fake_llm import FakeLLM
from tests.conftest import TEST_KEY, AppFactory
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, logged_in, serve_http
from tests.mcp_harness import stdio_server

READY = 30.0  # seconds an MCP server may take to start on a loaded machine


class RefusedAdapter:
    """A platform whose token is refused at start, as Telegram refuses a revoked one."""

    name = "telegram"

    async def run(self) -> None:
        raise ConfigError(f"telegram refused the token {TEST_KEY}")

    async def stop(self) -> None:
        return None


def rows_of(page: str, table: str) -> list[str]:
    """The text of each row of ``<table class="table">``'s body."""
    found = re.search(rf'<table class="{table}">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert found, table
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", found.group(1), re.S)
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", row)).split()) for row in rows]


async def page_of(http: aiohttp.ClientSession) -> str:
    async with http.get("/status") as r:
        assert r.status == 200
        return await r.text()


async def test_adapters_servers_and_the_last_warnings_with_secrets_masked(
    make_app: AppFactory,
) -> None:
    broken = {"command": ["/nonexistent/parlour-mcp-server"], "connect_timeout": 2}
    mcp = {"servers": {"demo": stdio_server(), "broken": broken}}
    async with serve_http(make_app, mcp=mcp) as served:
        app = served.app
        assert app.mcp is not None and await app.mcp.wait_ready(READY, ["demo"])
        failing = app.adapter_runs.start(RefusedAdapter())
        await asyncio.gather(failing, return_exceptions=True)
        logger = logging.getLogger("adapters.http.example")
        logger.warning("a client sent the admin token %s in a query string", ADMIN_TOKEN)
        try:
            raise RuntimeError(f"upstream echoed {CHAT_TOKEN}")
        except RuntimeError:
            logger.exception("the webhook failed")
        logger.info("an ordinary request")  # below WARNING: not kept

        async with await logged_in(served) as http:
            page = await page_of(http)
    for secret in (ADMIN_TOKEN, CHAT_TOKEN, TEST_KEY):
        assert secret not in page
        assert all(secret not in repr(line) for line in app.recent_log.lines())  # stored masked

    adapters = rows_of(page, "adapters")
    assert adapters[0].startswith("http running") and adapters[0].endswith("—")
    assert adapters[1].startswith("telegram failed")
    assert adapters[1].endswith("ConfigError: telegram refused the token ***")

    servers = rows_of(page, "mcp")
    demo = next(row for row in servers if row.startswith("demo"))
    assert "ready" in demo and "echo" in demo
    assert any(row.startswith("broken stdio") for row in servers)

    lines = rows_of(page, "log")
    assert not any("an ordinary request" in line for line in lines)
    failed = next(line for line in lines if "the webhook failed" in line)
    assert "ERROR" in failed and "RuntimeError: upstream echoed ***" in failed
    warned = next(line for line in lines if "admin token" in line)
    assert "WARNING adapters.http.example a client sent the admin token *** in a" in warned


async def test_doctor_rows_run_when_asked_against_the_running_bot(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, await logged_in(served) as http:
        page = await page_of(http)
        assert "Not run yet" in page and '<table class="doctor">' not in page
        assert fake_llm.requests == []  # a page view contacts nothing

        async with http.post("/status/doctor", allow_redirects=False) as r:
            assert r.status == 403  # the CSRF field is needed
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf
        async with http.post(
            "/status/doctor", data={"csrf": csrf.group(1)}, allow_redirects=False
        ) as r:
            assert r.status == 303 and r.headers["Location"] == "/status#doctor"
        page = await page_of(http)
    rows = rows_of(page, "doctor")
    names = [row.split(" ")[0] for row in rows]
    assert names == ["config", "database", "llm", "llm", "http"]
    assert rows[0].startswith("config ok the bot started with it; platforms: http")
    assert rows[1].startswith("database ok") and "takes writes" in rows[1]
    assert rows[3].startswith("llm completion ok gpt-4o-mini answered one token")
    assert rows[4].startswith("http ok serving this page on 127.0.0.1:")  # not "cannot bind"
    assert "2 admin and 1 chat tokens" in rows[4]
    # the LLM endpoint was asked once for its models and once for a token, nothing more
    assert [request.path for request in fake_llm.requests] == ["/v1/models", "/v1/chat/completions"]
    assert "Last run" in page and ADMIN_TOKEN not in page
