"""The admin API changes a chat as /scope and /persona do (``PATCH /api/chats/{key}/settings``):
the running bot uses the change at the next message, the audit names the token, a chat token
cannot, and a value the chat refuses changes nothing. History items carry their tool calls."""

from __future__ import annotations

from typing import Any

import aiohttp

from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.conftest import AppFactory, group, private
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, serve_http
from tests.product.http.test_http_admin_chats import BOOK_CLUB, chat_path, get_json, two_chats

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


async def patch(
    http: aiohttp.ClientSession,
    chat_key: str,
    body: Any,
    status: int = 200,
    headers: dict[str, str] = ADMIN,
) -> Any:
    async with http.patch(chat_path(chat_key, "/settings"), json=body, headers=headers) as r:
        assert r.status == status, await r.text()
        return await r.json()


def system_prompt(fake_llm: FakeLLM) -> str:
    return str(fake_llm.chat_requests[-1].json["messages"][0]["content"])


async def test_an_admin_token_sets_persona_and_scope_and_the_bot_uses_them_at_once(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        await two_chats(served)
        body = {"persona": "You are the club's librarian.\r\nBe brief.", "scope": "user"}
        changed = await patch(http, BOOK_CLUB, body)
        assert changed["changed"] == ["scope", "persona"]
        assert changed["persona"] == "You are the club's librarian.\nBe brief."
        assert (changed["persona_source"], changed["scope"]) == ("chat", "user")
        await served.app.service.chat(group("1", "Ann", chat="-100"), "a book for tonight?")
        assert system_prompt(fake_llm).startswith("You are the club's librarian.\nBe brief.")
        assert served.app.service.conversation_key(group("1", chat="-100")) == f"{BOOK_CLUB}:u:1"

        again = await patch(http, BOOK_CLUB, body)  # what is in effect already: no change
        assert again["changed"] == []
        back = await patch(http, BOOK_CLUB, {"persona": None})
        assert (back["changed"], back["persona"], back["persona_source"]) == (
            ["persona"],
            None,
            "default",
        )
        entries = (await get_json(http, chat_path(BOOK_CLUB, "/audit")))["entries"]
        assert [(e["action"], e["actor_kind"], e["actor_id"], e["detail"]) for e in entries] == [
            ("persona", "token", "http:ops", "reset to the default"),
            (
                "persona",
                "token",
                "http:ops",
                'set (39 chars): "You are the club\'s librarian. Be brief."',
            ),
            ("scope", "token", "http:ops", "chat -> user"),
        ]


async def test_a_preset_scope_change_is_audited_from_the_scope_in_effect(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    preset = {"chats": [{"match": BOOK_CLUB, "scope": "user"}]}
    async with serve_http(make_app, **preset) as served, aiohttp.ClientSession(served.url) as http:
        await two_chats(served)
        assert (await get_json(http, chat_path(BOOK_CLUB)))["scope"] == "user"
        assert (await patch(http, BOOK_CLUB, {"scope": "chat"}))["changed"] == ["scope"]
        [entry] = (await get_json(http, chat_path(BOOK_CLUB, "/audit")))["entries"]
        assert entry["detail"] == "user -> chat"


async def test_refused_changes_write_nothing(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with (
        serve_http(make_app, chat={"max_persona_chars": 20}) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        await two_chats(served)
        await served.app.service.chat(private("5", "Di"), "hello")
        chat_token = {"Authorization": f"Bearer {CHAT_TOKEN}"}
        await patch(http, BOOK_CLUB, {"persona": "pirate"}, 403, headers=chat_token)
        await patch(http, BOOK_CLUB, {"persona": "pirate"}, 401, headers={})
        too_long = await patch(http, BOOK_CLUB, {"persona": "x" * 21, "scope": "user"}, 400)
        assert "the limit is 20" in too_long["error"]["message"]
        private_scope = await patch(http, "telegram:5", {"scope": "chat"}, 400)
        assert "private chat" in private_scope["error"]["message"]
        for bad in ({}, [], {"scope": "everyone"}, {"persona": 7}, {"colour": "red"}, "x"):
            error = await patch(http, BOOK_CLUB, bad, 400)
            assert error["error"]["code"] == "invalid_parameter", bad
        async with http.patch(chat_path(BOOK_CLUB, "/settings"), data="{", headers=ADMIN) as r:
            assert r.status == 400
        assert (await patch(http, "telegram:404", {"scope": "user"}, 404))["error"]["code"] == (
            "chat_not_found"
        )
        assert await served.app.store.audit() == []
        assert await served.app.store.load_preferences() == {}


async def test_history_items_carry_the_tool_calls(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    fake_llm.script(tool_calls(("calculate", {"expression": "2**10"})), reply("**1024**"))
    async with (
        serve_http(make_app, plugins=["plugins.calculator"]) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        await served.app.service.chat(group(chat="-7"), "two to the tenth?")
        [item] = (await get_json(http, chat_path("telegram:-7", "/history")))["items"]
        assert item["answer"] == "**1024**"
        assert item["tool_calls"] == [
            {"name": "calculate", "arguments": '{"expression":"2**10"}', "result": "2**10 = 1024"}
        ]
