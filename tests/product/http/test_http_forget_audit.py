"""An operator deleting a memory, through the admin API or the dashboard, is in the chat's audit
trail: who (the token's name), which memory (its id, never its text), on SQLite and PostgreSQL.

Every test runs on both backends (``storage_section``), whatever ``PARLOUR_TEST_STORAGE`` says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from bot.testing.fake_llm import FakeLLM
from bot.values import AuditAction, MemoryScope, NewMemory
from tests.conftest import AppFactory
from tests.http_harness import ADMIN_TOKEN, OTHER_ADMIN_TOKEN, Served, logged_in, serve_http
from tests.postgres_support import BACKEND_NAMES, storage_section
from tests.product.http.test_dashboard_pages import csrf_of

BOOKS = "telegram:-100"
SECRET_FACT = "Ann's locker code is 4417"


@pytest.fixture(params=BACKEND_NAMES)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return storage_section(request.param, tmp_path)


async def remembered(served: Served, text: str = SECRET_FACT) -> int:
    memory = await served.app.store.add_memory(
        NewMemory(BOOKS, BOOKS, "1", "Ann", MemoryScope.MEMBER, text)
    )
    return memory.memory_id


async def audit_entries(http: aiohttp.ClientSession) -> list[dict[str, Any]]:
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with http.get(f"/api/chats/{quote(BOOKS, safe='')}/audit", headers=admin) as r:
        assert r.status == 200, await r.text()
        entries: list[dict[str, Any]] = (await r.json())["entries"]
        return entries


async def test_deleting_a_memory_through_the_api_is_audited_with_the_token_and_id(
    make_app: AppFactory, fake_llm: FakeLLM, storage: dict[str, str]
) -> None:
    night = {"Authorization": f"Bearer {OTHER_ADMIN_TOKEN}"}
    async with (
        serve_http(make_app, storage=storage) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        memory_id = await remembered(served)
        path = f"/api/chats/{quote(BOOKS, safe='')}/memories/{memory_id}"
        async with http.delete(path, headers=night) as r:
            assert r.status == 204
        async with http.delete(path, headers=night) as r:  # gone: a 404, and no second entry
            assert r.status == 404
        entries = await audit_entries(http)
        assert [(e["action"], e["actor_id"], e["actor_name"], e["detail"]) for e in entries] == [
            ("forget", "http:night", "http:night", f"deleted memory #{memory_id}")
        ]
        assert SECRET_FACT not in str(entries) and "4417" not in str(entries)
        [stored] = await served.app.store.audit(BOOKS)
        assert (stored.action, stored.chat_key) == (AuditAction.FORGET, BOOKS)
        assert await served.app.store.list_memories(BOOKS) == []


async def test_deleting_a_memory_on_the_dashboard_is_audited_too(
    make_app: AppFactory, fake_llm: FakeLLM, storage: dict[str, str]
) -> None:
    async with serve_http(make_app, storage=storage) as served:
        memory_id = await remembered(served)
        async with await logged_in(served) as http:
            csrf = await csrf_of(http, f"/chats/{BOOKS}/memories")
            path = f"/chats/{BOOKS}/memories/{memory_id}/delete"
            async with http.post(path, data={"csrf": csrf}) as r:
                assert r.status == 200 and "Memory deleted" in await r.text()
            async with http.get(f"/chats/{BOOKS}") as r:  # the chat page shows the trail
                page = await r.text()
            assert r.status == 200 and f"deleted memory #{memory_id}" in page
            assert "forget" in page and SECRET_FACT not in page
            entries = await audit_entries(http)
        assert [(e["action"], e["actor_id"], e["detail"]) for e in entries] == [
            ("forget", "http:ops", f"deleted memory #{memory_id}")
        ]
