"""Numbers and keys no database can hold, sent to the admin API and the dashboard: a 400 or a
404 in the usual shape on SQLite and on PostgreSQL alike, never a driver's error as a 500.

Every test runs on both backends (``storage_section``), whatever ``PARLOUR_TEST_STORAGE`` says:
these routes are not among the suites the Makefile re-runs on PostgreSQL.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.testing.fake_llm import FakeLLM
from bot.values import MemoryScope, NewMemory
from tests.conftest import AppFactory, group
from tests.http_harness import ADMIN_TOKEN, Served, serve_http
from tests.postgres_support import BACKEND_NAMES, storage_section
from tests.product.http.test_dashboard_pages import csrf_of, logged_in

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
BOOKS = "telegram:-100"
HUGE = 10**23  # OverflowError in SQLite, "out of int64 range" in PostgreSQL
PAST_INT64 = 2**63
INT64_MAX = 2**63 - 1
NUL_KEY = "%00"  # a chat key holding NUL: PostgreSQL text cannot
KEYS_NO_CHAT_HAS = (NUL_KEY, "telegram%3A%00", "telegram%3A-1%07", "%1B%5B2J")


@pytest.fixture(params=BACKEND_NAMES)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return storage_section(request.param, tmp_path)


async def a_chat_with_a_memory(served: Served) -> int:
    await served.app.service.chat(group("1", "Ann", chat="-100", chat_title="Books"), "hi")
    memory = await served.app.store.add_memory(
        NewMemory(BOOKS, BOOKS, "1", "Ann", MemoryScope.CHAT, "Ann reads Tolstoy")
    )
    return memory.memory_id


async def call(
    http: aiohttp.ClientSession, method: str, path: str, **kw: Any
) -> tuple[int, dict[str, Any]]:
    async with http.request(method, path, headers=ADMIN, **kw) as r:
        assert r.content_type == "application/json", await r.text()
        body: dict[str, Any] = await r.json()
        return r.status, body


async def test_numbers_no_database_can_hold_are_a_400_in_the_api_error_shape(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    storage: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    async with (
        serve_http(make_app, storage=storage) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        kept = await a_chat_with_a_memory(served)
        history = f"/api/chats/{BOOKS}/history"
        for path in (
            f"/api/chats?offset={HUGE}",
            f"/api/chats?offset={PAST_INT64}",
            "/api/chats?offset=-1",
            f"/api/chats?limit={HUGE}",
            f"/api/chats/{BOOKS}/memories?limit={PAST_INT64}",
            f"{history}?before={HUGE}",
            f"{history}?before={PAST_INT64}",
            f"{history}?limit={HUGE}",
            f"{history}?before=-{HUGE}",
        ):
            status, body = await call(http, "GET", path)
            assert (status, body["error"]["code"]) == (400, "invalid_parameter"), path
            assert set(body["error"]) == {"message", "code"}
        for memory_id in (HUGE, PAST_INT64, -1, 0):
            status, body = await call(http, "DELETE", f"/api/chats/{BOOKS}/memories/{memory_id}")
            assert (status, body["error"]["code"]) == (400, "invalid_parameter"), memory_id
        # the largest number the database holds is taken: an empty page, no such memory
        status, body = await call(http, "GET", f"/api/chats?offset={INT64_MAX}")
        assert (status, body["chats"]) == (200, [])
        status, body = await call(http, "GET", f"{history}?before={INT64_MAX}")
        assert status == 200 and [i["text"] for i in body["items"]] == ["hi"]
        status, body = await call(http, "DELETE", f"/api/chats/{BOOKS}/memories/{INT64_MAX}")
        assert (status, body["error"]["code"]) == (404, "memory_not_found")
        assert [m.memory_id for m in await served.app.store.list_memories(BOOKS)] == [kept]
    assert "Traceback" not in caplog.text and "Error handling request" not in caplog.text


async def test_a_chat_key_no_chat_can_have_is_a_404_not_a_driver_error(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    storage: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    async with (
        serve_http(make_app, storage=storage) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        await a_chat_with_a_memory(served)
        for key in KEYS_NO_CHAT_HAS:
            chat = f"/api/chats/{key}"
            for method, path in (
                ("GET", chat),
                ("GET", f"{chat}/history"),
                ("GET", f"{chat}/audit"),
                ("GET", f"{chat}/memories"),
                ("POST", f"{chat}/clear"),
                ("POST", f"{chat}/reset"),
                ("DELETE", f"{chat}/memories/1"),
            ):
                status, body = await call(http, method, path)
                assert (status, body["error"]["code"]) == (404, "chat_not_found"), path
            status, body = await call(http, "DELETE", f"/api/reminders/{key}")
            assert (status, body["error"]["code"]) == (404, "not_found")
        status, body = await call(http, "GET", f"/api/usage?chat={NUL_KEY}:1")
        assert (status, body["error"]["code"]) == (400, "invalid_parameter")
        status, body = await call(http, "GET", "/api/chats?q=a%00b")  # a search: no match
        assert (status, body["chats"]) == (200, [])
        assert await served.app.store.audit() == []  # nothing half-written
        assert len(await served.app.store.history_page(BOOKS)) == 1
    assert "Traceback" not in caplog.text and "Error handling request" not in caplog.text


async def test_the_dashboard_answers_400_or_404_for_what_no_database_can_hold(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    storage: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    async with serve_http(make_app, storage=storage) as served:
        await a_chat_with_a_memory(served)
        async with await logged_in(served) as http:
            csrf = await csrf_of(http, f"/chats/{BOOKS}")
            form = {"csrf": csrf}
            for before in (HUGE, PAST_INT64, -1, "ten"):
                async with http.get(f"/chats/{BOOKS}", params={"before": str(before)}) as r:
                    assert r.status == 400, before
            async with http.get(f"/chats/{BOOKS}", params={"before": str(INT64_MAX)}) as r:
                assert r.status == 200 and "Books" in await r.text()
            for memory_id in (HUGE, PAST_INT64, -1):
                path = f"/chats/{BOOKS}/memories/{memory_id}/delete"
                async with http.post(path, data=form) as r:
                    assert r.status == 404, memory_id
            for key in KEYS_NO_CHAT_HAS:
                async with http.get(f"/chats/{key}") as r:
                    assert r.status == 404, key
                async with http.get(f"/chats/{key}/memories") as r:
                    assert r.status == 404, key
                for tail in ("/clear", "/reset", "/memories/1/delete"):
                    async with http.post(f"/chats/{key}{tail}", data=form) as r:
                        assert r.status == 404, (key, tail)
                async with http.post(f"/reminders/{key}/cancel", data=form) as r:
                    assert r.status == 404, key
            async with http.get("/", params={"q": "a\x00b"}) as r:
                assert r.status == 200 and "No chat matches" in await r.text()
        assert await served.app.store.audit() == []
        assert len(await served.app.store.list_memories(BOOKS)) == 1
    assert "Traceback" not in caplog.text and "Error handling request" not in caplog.text
