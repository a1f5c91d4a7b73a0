"""The admin API's chat routes: chats listed with their titles (a cleared one too), search,
history pages with speakers, clear and reset audited in the token's name, memories, and who
may call."""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from bot.context import ChatContext, ChatType
from bot.testing.fake_llm import FakeLLM
from bot.values import MemoryScope, NewMemory
from tests.conftest import AppFactory, group, private
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, OTHER_ADMIN_TOKEN, Served, serve_http

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
BOOK_CLUB = "telegram:-100"
CHESS = "telegram:-200"


def chat_path(chat_key: str, tail: str = "") -> str:
    return f"/api/chats/{quote(chat_key, safe='')}{tail}"


async def two_chats(served: Served) -> None:
    service = served.app.service
    await service.chat(group("1", "Ann", chat="-100", chat_title="Book Club"), "first book?")
    await service.chat(group("2", "Bo", chat="-100", chat_title="Book Club"), "second book?")
    await service.chat(group("3", "Cy", chat="-200", chat_title="Chess Nerds"), "e4 or d4?")


async def get_json(http: aiohttp.ClientSession, path: str, status: int = 200) -> Any:
    async with http.get(path, headers=ADMIN) as r:
        assert r.status == status, await r.text()
        return await r.json()


async def post_json(
    http: aiohttp.ClientSession, path: str, status: int = 200, headers: dict[str, str] = ADMIN
) -> Any:
    async with http.post(path, headers=headers) as r:
        assert r.status == status, await r.text()
        return await r.json()


async def test_chats_are_listed_with_titles_newest_first_and_searchable(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        await two_chats(served)
        body = await get_json(http, "/api/chats")
        assert (body["limit"], body["offset"]) == (50, 0)
        chess, books = body["chats"]
        assert chess["chat_key"] == CHESS and chess["title"] == "Chess Nerds"
        assert books == books | {
            "chat_key": BOOK_CLUB,
            "platform": "telegram",
            "chat_id": "-100",
            "chat_type": "group",
            "title": "Book Club",
            "turns": 2,
            "scope": "chat",
            "persona": None,
            "persona_source": "default",
        }
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", books["last_activity"])
        found = await get_json(http, "/api/chats?q=book%20CLUB")
        assert [c["chat_key"] for c in found["chats"]] == [BOOK_CLUB]
        assert (await get_json(http, "/api/chats?q=-200"))["chats"][0]["title"] == "Chess Nerds"
        paged = await get_json(http, "/api/chats?limit=1&offset=1")
        assert [c["chat_key"] for c in paged["chats"]] == [BOOK_CLUB]
        one = await get_json(http, chat_path(BOOK_CLUB))
        assert one == books
        assert (await get_json(http, "/api/chats/telegram:-100"))["title"] == "Book Club"


async def test_persona_and_scope_follow_the_chat_settings(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        await two_chats(served)
        admin = group("1", "Ann", chat="-100", is_admin=True)
        await served.app.service.set_system_prompt(admin, "Talk like a librarian.")
        await served.app.service.set_scope(admin, served.app.service.scope_for(admin).USER)
        books = await get_json(http, chat_path(BOOK_CLUB))
        assert books["persona"] == "Talk like a librarian."
        assert (books["persona_source"], books["scope"]) == ("chat", "user")


async def test_history_pages_show_who_said_what_newest_first(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        await two_chats(served)
        for n in range(3):
            await served.app.service.chat(group("1", "Ann", chat="-100"), f"more {n}")
        first = await get_json(http, chat_path(BOOK_CLUB, "/history?limit=2"))
        assert [(i["user_name"], i["text"], i["answer"]) for i in first["items"]] == [
            ("Ann", "more 2", "echo: [Ann] more 2"),  # a group's model sees the speaker
            ("Ann", "more 1", "echo: [Ann] more 1"),
        ]
        assert first["items"][0]["status"] == "answered"
        assert first["items"][0]["conversation_key"] == BOOK_CLUB
        assert first["next_before"] == first["items"][-1]["turn_id"]
        second = await get_json(
            http, chat_path(BOOK_CLUB, f"/history?limit=2&before={first['next_before']}")
        )
        assert [(i["user_name"], i["text"]) for i in second["items"]] == [
            ("Ann", "more 0"),
            ("Bo", "second book?"),
        ]
        last = await get_json(
            http, chat_path(BOOK_CLUB, f"/history?limit=2&before={second['next_before']}")
        )
        assert [i["text"] for i in last["items"]] == ["first book?"]
        assert last["next_before"] is None
        for bad in ("limit=0", "limit=ten", "before=-1"):
            error = await get_json(http, chat_path(BOOK_CLUB, f"/history?{bad}"), 400)
            assert error["error"]["code"] == "invalid_parameter"


async def test_clear_deletes_the_chat_and_the_audit_names_the_token(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        await two_chats(served)
        cleared = await post_json(http, chat_path(BOOK_CLUB, "/clear"))
        assert cleared == {"cleared": True, "turns": 2, "messages": 4}
        assert await served.app.store.history_page(BOOK_CLUB) == []
        listed = (await get_json(http, "/api/chats"))["chats"]  # still listed, newest activity
        assert [(c["chat_key"], c["title"], c["turns"]) for c in listed] == [
            (BOOK_CLUB, "Book Club", 0),
            (CHESS, "Chess Nerds", 1),
        ]
        assert (await get_json(http, chat_path(BOOK_CLUB)))["chat_type"] == "group"
        entries = (await get_json(http, chat_path(BOOK_CLUB, "/audit")))["entries"]
        assert [(e["action"], e["actor_id"], e["actor_name"]) for e in entries] == [
            ("clear", "http:ops", "http:ops")
        ]
        assert entries[0]["detail"] == "deleted 2 turns, 4 messages"
        [stored] = await served.app.store.audit(BOOK_CLUB)
        assert stored.actor_id == "http:ops"
        chess = await post_json(http, chat_path(CHESS, "/clear"))
        assert chess == {"cleared": True, "turns": 1, "messages": 2}
        entries = (await get_json(http, chat_path(CHESS, "/audit")))["entries"]
        assert entries[0]["detail"] == "deleted 1 turn, 2 messages"  # not "1 turns"
    assert ADMIN_TOKEN not in caplog.text


async def test_reset_starts_every_conversation_afresh_and_is_audited(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    sections = {"chat": {"default_scope": "user"}}
    async with (
        serve_http(make_app, **sections) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        await two_chats(served)
        night = {"Authorization": f"Bearer {OTHER_ADMIN_TOKEN}"}
        body = await post_json(http, chat_path(BOOK_CLUB, "/reset"), headers=night)
        assert body == {"reset": True, "conversations": [f"{BOOK_CLUB}:u:1", f"{BOOK_CLUB}:u:2"]}
        for conversation in body["conversations"]:
            assert await served.app.store.load_window(conversation, 10) == []
        assert len((await get_json(http, chat_path(BOOK_CLUB, "/history")))["items"]) == 2
        entries = (await get_json(http, chat_path(BOOK_CLUB, "/audit")))["entries"]
        assert [(e["action"], e["actor_id"], e["conversation_key"]) for e in entries] == [
            ("reset", "http:night", f"{BOOK_CLUB}:u:2"),  # newest first
            ("reset", "http:night", f"{BOOK_CLUB}:u:1"),
        ]
        await served.app.service.chat(group("1", "Ann", chat="-100"), "after the reset")
        sent = fake_llm.chat_requests[-1].json["messages"]
        assert "first book?" not in str(sent)


async def test_memories_are_listed_and_deleted(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        await two_chats(served)
        store = served.app.store
        kept = await store.add_memory(
            NewMemory(BOOK_CLUB, BOOK_CLUB, "1", "Ann", MemoryScope.CHAT, "Ann reads Tolstoy")
        )
        other = await store.add_memory(
            NewMemory(CHESS, CHESS, "3", "Cy", MemoryScope.CHAT, "Cy opens with e4")
        )
        listed = (await get_json(http, chat_path(BOOK_CLUB, "/memories")))["memories"]
        assert [(m["id"], m["text"], m["user_name"], m["scope"]) for m in listed] == [
            (kept.memory_id, "Ann reads Tolstoy", "Ann", "chat")
        ]
        wrong_chat = chat_path(BOOK_CLUB, f"/memories/{other.memory_id}")
        async with http.delete(wrong_chat, headers=ADMIN) as r:
            assert r.status == 404 and (await r.json())["error"]["code"] == "memory_not_found"
        async with http.delete(chat_path(BOOK_CLUB, "/memories/abc"), headers=ADMIN) as r:
            assert r.status == 400
        async with http.delete(
            chat_path(BOOK_CLUB, f"/memories/{kept.memory_id}"), headers=ADMIN
        ) as r:
            assert r.status == 204
        assert await store.list_memories(BOOK_CLUB) == []
        assert [m.text for m in await store.list_memories(CHESS)] == ["Cy opens with e4"]


async def test_memories_are_404_when_memory_is_off(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with (
        serve_http(make_app, memory={"enabled": False}) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        await served.app.service.chat(private("5", "Di", chat_title="Di"), "hello")
        error = await get_json(http, chat_path("telegram:5", "/memories"), 404)
        assert error["error"]["code"] == "memory_off"
        chat = await get_json(http, chat_path("telegram:5"))
        assert (chat["chat_type"], chat["title"]) == ("private", "Di")


async def test_unknown_chats_are_404_and_a_chat_token_is_refused(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        for tail in ("", "/history"):
            error = await get_json(http, chat_path("telegram:404", tail), 404)
            assert error == {
                "error": {"message": error["error"]["message"], "code": "chat_not_found"}
            }
        await post_json(http, chat_path("telegram:404", "/reset"), 404)
        assert await served.app.store.audit("telegram:404") == []  # nothing half-written
        chat_token = {"Authorization": f"Bearer {CHAT_TOKEN}"}
        async with http.get("/api/chats", headers=chat_token) as r:
            assert r.status == 403
        await two_chats(served)
        await post_json(http, chat_path(BOOK_CLUB, "/clear"), 403, headers=chat_token)
        async with http.get("/api/chats") as r:
            assert r.status == 401
        assert len(await served.app.store.history_page(BOOK_CLUB)) == 2


async def test_a_dashboard_session_needs_the_csrf_token_to_clear(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served:
        await two_chats(served)
        jar = aiohttp.CookieJar(unsafe=True)  # 127.0.0.1 is an IP: the jar must keep it
        async with aiohttp.ClientSession(served.url, cookie_jar=jar) as http:
            async with http.post("/login", data={"token": ADMIN_TOKEN}) as r:
                assert r.status == 200
            async with http.get("/api/chats") as r:  # the session reads the API
                assert r.status == 200
            async with http.post(chat_path(BOOK_CLUB, "/clear")) as r:
                assert r.status == 403 and (await r.json())["error"]["code"] == "csrf_failed"
            assert len(await served.app.store.history_page(BOOK_CLUB)) == 2
            assert await served.app.store.audit(BOOK_CLUB) == []
            async with http.get("/") as r:
                csrf = re.search(r'name="csrf-token" content="([^"]+)"', await r.text())
            assert csrf is not None
            async with http.post(
                chat_path(BOOK_CLUB, "/clear"), headers={"X-CSRF-Token": csrf.group(1)}
            ) as r:
                assert r.status == 200, await r.text()
            [entry] = await served.app.store.audit(BOOK_CLUB)
            assert (entry.actor_id, entry.actor_name) == ("http:ops", "http:ops")


async def test_a_chat_key_with_slashes_and_spaces_works_url_encoded(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    visitor = ChatContext("http", "site/anna 1", ChatType.PRIVATE, "site/anna 1", "Anna")
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        await served.app.service.chat(visitor, "hello from the web")
        page = await get_json(http, chat_path("http:site/anna 1", "/history"))
        assert [(i["user_name"], i["text"]) for i in page["items"]] == [
            ("Anna", "hello from the web")
        ]
        assert (await get_json(http, chat_path("http:site/anna 1")))["chat_id"] == "site/anna 1"
