"""The dashboard's pages over plain HTTP: what each shows, and that its forms change state only
with the session's CSRF token, audited with the token's name, never logging the token."""

from __future__ import annotations

import logging
import re

import aiohttp
import pytest

from bot.plugins.context import PluginStore
from bot.scheduling.scheduler import REMINDERS_KIND
from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from bot.values import AuditAction, MemoryScope, NewMemory
from tests.conftest import AppFactory, group
from tests.http_harness import ADMIN_TOKEN, logged_in, serve_http


async def csrf_of(http: aiohttp.ClientSession, path: str = "/") -> str:
    async with http.get(path) as r:
        found = re.search(r'name="csrf" value="([^"]+)"', await r.text())
    assert found
    return found.group(1)


async def test_clear_needs_csrf_and_is_audited_with_the_token_name(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_llm.script(reply("Sure."))
    async with serve_http(make_app) as served:
        await served.app.service.chat(group(chat="-7"), "Remember the milk")
        async with await logged_in(served) as http:
            async with http.post("/chats/telegram:-7/clear", allow_redirects=False) as r:
                assert r.status == 403 and (await r.json())["error"]["code"] == "csrf_failed"
            assert await served.app.store.conversations() == [("telegram:-7", 1)]
            assert await served.app.store.audit("telegram:-7") == []

            csrf = await csrf_of(http, "/chats/telegram:-7")
            async with http.post(
                "/chats/telegram:-7/clear", data={"csrf": csrf}, allow_redirects=False
            ) as r:
                assert r.status == 303
                assert r.headers["Location"] == "/chats/telegram:-7?done=cleared-1"
            assert await served.app.store.conversations() == []
            [entry] = await served.app.store.audit("telegram:-7")
            assert (entry.action, entry.actor_name) == (AuditAction.CLEAR, "http:ops")
            async with http.get("/chats/telegram:-7") as r:
                page = await r.text()
            assert r.status == 200 and "No stored history" in page
            assert '<span class="badge token">token</span> <code>ops</code>' in page
    assert ADMIN_TOKEN not in caplog.text


async def test_reset_keeps_the_turns_and_is_audited(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("Hello."))
    async with serve_http(make_app) as served:
        await served.app.service.chat(group(chat="-8"), "Hi")
        async with await logged_in(served) as http:
            csrf = await csrf_of(http, "/chats/telegram:-8")
            async with http.post("/chats/telegram:-8/reset", data={"csrf": csrf}) as r:
                assert r.status == 200 and "Conversation reset" in await r.text()
        assert await served.app.store.conversations() == [("telegram:-8", 1)]
        [entry] = await served.app.store.audit("telegram:-8")
        assert (entry.action, entry.actor_name) == (AuditAction.RESET, "http:ops")


async def test_chats_search_history_pages_and_persona(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(*(reply(f"answer {n}") for n in range(33)))
    async with serve_http(make_app, chat={"system_prompt": "You are Parlour, terse."}) as served:
        for n in range(32):
            await served.app.service.chat(group(chat="-9"), f"question {n}")
        await served.app.service.chat(group(chat="-10", name="Zoë"), "other chat")
        async with await logged_in(served) as http:
            async with http.get("/", params={"q": "-10"}) as r:
                page = await r.text()
            assert "telegram:-10" in page and "telegram:-9<" not in page
            async with http.get("/chats/telegram:-9") as r:
                page = await r.text()
            assert page.count('class="turn"') == 30
            assert "question 31" in page and "question 1<" not in page
            assert "You are Parlour, terse." in page and ">default<" in page
            older = re.search(r'href="(/chats/telegram:-9\?before=\d+)"', page)
            assert older
            async with http.get(older.group(1)) as r:
                page = await r.text()
            assert page.count('class="turn"') == 2 and "question 0" in page
            async with http.get("/chats/telegram:-404") as r:
                assert r.status == 404


async def test_memories_list_and_delete(make_app: AppFactory) -> None:
    async with serve_http(make_app) as served:
        store = served.app.store
        memory = await store.add_memory(
            NewMemory("telegram:-5", "telegram:-5", "1", "Alice", MemoryScope.MEMBER, "likes tea")
        )
        async with await logged_in(served) as http:
            async with http.get("/chats/telegram:-5/memories") as r:
                assert "likes tea" in await r.text()
            csrf = await csrf_of(http, "/chats/telegram:-5/memories")
            path = f"/chats/telegram:-5/memories/{memory.memory_id}/delete"
            async with http.post(path, data={"csrf": csrf}) as r:
                assert r.status == 200 and "Memory deleted" in await r.text()
            assert await store.list_memories("telegram:-5") == []
            async with http.post(path, data={"csrf": csrf}) as r:
                assert r.status == 404


async def test_reminders_list_and_cancel_and_tools_show_plugins(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app, plugins=["plugins.reminders"]) as served:
        app = served.app
        fake_llm.script(
            tool_calls(("set_reminder", {"text": "water the plants", "in_minutes": 90})),
            reply("set"),
        )
        await app.service.chat(group(chat="-3"), "remind me to water the plants")
        kv = PluginStore(app.store, "reminders")
        assert len(await kv.items("reminder:")) == 1
        async with await logged_in(served) as http:
            async with http.get("/reminders") as r:
                page = await r.text()
            assert "water the plants" in page and "telegram:-3" in page
            assert 'action="/reminders/reminders:1/cancel"' in page
            csrf = await csrf_of(http, "/reminders")
            async with http.post("/reminders/reminders%3A1/cancel", data={"csrf": csrf}) as r:
                page = await r.text()
            assert "Reminder cancelled" in page and "water the plants" not in page
            # through the scheduler: the job is gone and the plugin forgot its own record
            assert app.scheduler is not None and app.scheduler.pending(REMINDERS_KIND) == []
            assert await kv.items("reminder:") == []
            async with http.post("/reminders/reminders:1/cancel", data={"csrf": csrf}) as r:
                assert r.status == 404
            async with http.post("/reminders/housekeeping/cancel", data={"csrf": csrf}) as r:
                assert r.status == 404  # not a reminder: the app's own job stays
            async with http.get("/tools") as r:
                page = await r.text()
            assert "reminders" in page and "set_reminder" in page and "loaded" in page
            assert "No MCP servers are configured" in page


async def test_usage_page_draws_the_days_on_the_server(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("Counting tokens."))
    async with serve_http(make_app) as served:
        await served.app.service.chat(group(chat="-6", name="Dana"), "How much did I spend?")
        async with await logged_in(served) as http, http.get("/usage") as r:
            page = await r.text()
    assert '<svg class="chart"' in page and 'class="completion"' in page
    assert "telegram:-6" in page and "Dana" in page
