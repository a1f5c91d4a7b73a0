"""Whose conversation an HTTP chat request reaches and who is an admin there (issue 25, items
1, 2 and 7): driven by the official openai SDK; asserted on what the model was sent, what
was stored, and what the admin API and the dashboard show. The tests that store run on both
backends (``storage_section``), whatever ``PARLOUR_TEST_STORAGE`` says."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from bot.config import settings_from_mapping
from bot.context import ChatContext, ChatType
from bot.errors import ConfigError
from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.conftest import AppFactory, group
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, Served, logged_in, serve_http
from tests.postgres_support import BACKEND_NAMES, storage_section

PARTNER_TOKEN = "prt-9e8d7c6b5a4f3e2d1c0b"
OPS_CHAT_TOKEN = "opc-1a2b3c4d5e6f7a8b9c0d"
TOOLBOX = {"module": "tests.sample_plugins.toolbox", "settings": {"greeting": "Ahoy"}}
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture(params=BACKEND_NAMES)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return storage_section(request.param, tmp_path)


def tokens(**extra: Any) -> dict[str, Any]:
    chat = {"website": CHAT_TOKEN, "partner": PARTNER_TOKEN, "opsbot": OPS_CHAT_TOKEN}
    return {"http": {"chat_tokens": chat, **extra}}


@asynccontextmanager
async def sdks(
    make_app: AppFactory, **sections: Any
) -> AsyncIterator[tuple[Served, dict[str, openai.AsyncOpenAI]]]:
    """The bot, and one SDK client per chat token."""
    async with serve_http(make_app, **sections) as served:
        clients = {
            name: openai.AsyncOpenAI(base_url=served.url + "/v1", api_key=key, max_retries=0)
            for name, key in (
                ("website", CHAT_TOKEN),
                ("partner", PARTNER_TOKEN),
                ("opsbot", OPS_CHAT_TOKEN),
            )
        }
        try:
            yield served, clients
        finally:
            for sdk in clients.values():
                await sdk.close()


def said(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def sent_to_model(fake: FakeLLM, index: int = -1) -> str:
    body: dict[str, Any] = fake.chat_requests[index].json
    return "\n".join(str(m.get("content")) for m in body["messages"])


def offered(fake: FakeLLM, index: int = -1) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[index].json
    return sorted(t["function"]["name"] for t in body.get("tools", []))


def tool_results(fake: FakeLLM) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[-1].json
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


async def chats_listed(served: Served) -> dict[str, dict[str, Any]]:
    async with (
        aiohttp.ClientSession(served.url) as http,
        http.get("/api/chats", headers=ADMIN) as r,
    ):
        assert r.status == 200
        return {chat["chat_key"]: chat for chat in (await r.json())["chats"]}


# -- item 1: a token reaches only its own conversations ---------------------------------------


async def test_a_token_never_reaches_another_tokens_conversation(
    make_app: AppFactory, fake_llm: FakeLLM, storage: dict[str, str]
) -> None:
    async with sdks(make_app, storage=storage, **tokens()) as (served, sdk):
        await sdk["website"].chat.completions.create(
            model="parlour", messages=said("my door code is 4411"), user="cust-1"
        )
        await sdk["website"].chat.completions.create(
            model="parlour", messages=said("website's own secret is 9932")
        )  # no user: the token's default conversation
        # partner names website's customer in every way a client can: the field, the header,
        # and website's default conversation
        await sdk["partner"].chat.completions.create(
            model="parlour", messages=said("what is my door code?"), user="cust-1"
        )
        assert "4411" not in sent_to_model(fake_llm)
        await sdk["partner"].chat.completions.create(
            model="parlour",
            messages=said("and now?"),
            extra_headers={"X-Parlour-User": "cust-1"},
        )
        assert "4411" not in sent_to_model(fake_llm)
        await sdk["partner"].chat.completions.create(
            model="parlour", messages=said("any secret?"), user="website"
        )
        assert "9932" not in sent_to_model(fake_llm)
        # nothing partner said was stored in website's conversations
        store = served.app.store
        assert await store.conversations() == [
            ("http:partner:cust-1:u:partner:cust-1", 2),
            ("http:partner:website:u:partner:website", 1),
            ("http:website:cust-1:u:website:cust-1", 1),
            ("http:website:website:u:website:website", 1),
        ]
        # and website still finds its own
        await sdk["website"].chat.completions.create(
            model="parlour", messages=said("what is my door code?"), user="cust-1"
        )
        assert "4411" in sent_to_model(fake_llm)
        chats = await chats_listed(served)
        async with (
            aiohttp.ClientSession(served.url) as http,
            http.get("/api/usage?user=http:website:cust-1", headers=ADMIN) as r,
        ):
            usage = await r.json()
    assert [(u["user_id"], u["turns"]) for u in usage["users"]] == [("website:cust-1", 2)]
    assert {key: chat["token"] for key, chat in chats.items()} == {
        "http:partner:cust-1": "partner",
        "http:partner:website": "partner",
        "http:website:cust-1": "website",
        "http:website:website": "website",
    }
    assert chats["http:partner:cust-1"]["title"] == "cust-1"


async def test_tokens_share_conversations_only_when_the_config_says_so(
    make_app: AppFactory, fake_llm: FakeLLM, storage: dict[str, str]
) -> None:
    sections = tokens(namespaces={"partner": "website"})
    async with sdks(make_app, storage=storage, **sections) as (served, sdk):
        await sdk["website"].chat.completions.create(
            model="parlour", messages=said("my door code is 4411"), user="cust-1"
        )
        await sdk["partner"].chat.completions.create(
            model="parlour", messages=said("what is my door code?"), user="cust-1"
        )
        assert "4411" in sent_to_model(fake_llm)  # the stated, shared namespace
        await sdk["opsbot"].chat.completions.create(
            model="parlour", messages=said("what is my door code?"), user="cust-1"
        )
        assert "4411" not in sent_to_model(fake_llm)  # not shared with opsbot
        chats = await chats_listed(served)
    assert chats["http:website:cust-1"]["token"] == "website"
    assert chats["http:website:cust-1"]["turns"] == 2


def _legacy(user: str) -> ChatContext:
    """A conversation as the endpoint stored it before namespaces: ``http:<user>``."""
    return ChatContext("http", user, ChatType.PRIVATE, user, user, chat_title=user)


async def test_conversations_stored_before_namespaces_stay_with_the_legacy_namespace(
    make_app: AppFactory, fake_llm: FakeLLM, storage: dict[str, str]
) -> None:
    async with make_app(
        storage=storage, http={"enabled": False}
    ) as app:  # the release before: http:<user>
        await app.service.chat(_legacy("cust-1"), "my door code is 4411")
    # upgraded, nobody told: no token reaches the old conversation; the admin sees it, unowned
    async with sdks(make_app, storage=storage, **tokens()) as (served, sdk):
        await sdk["website"].chat.completions.create(
            model="parlour", messages=said("what is my door code?"), user="cust-1"
        )
        assert "4411" not in sent_to_model(fake_llm)
        chats = await chats_listed(served)
        assert chats["http:cust-1"]["token"] is None
        async with await logged_in(served) as http, http.get("/") as r:
            page = await r.text()
        assert "no token (stored before tokens were kept)" in page
        assert "token <code>website</code>" in page
    # the operator hands the old keys to website, as docs/http.md says
    async with sdks(make_app, storage=storage, **tokens(legacy_namespace="website")) as (
        served,
        sdk,
    ):
        await sdk["partner"].chat.completions.create(
            model="parlour", messages=said("what is my door code?"), user="cust-1"
        )
        assert "4411" not in sent_to_model(fake_llm)
        await sdk["website"].chat.completions.create(
            model="parlour", messages=said("what is my door code?"), user="cust-1"
        )
        assert "4411" in sent_to_model(fake_llm)
        chats = await chats_listed(served)
    assert chats["http:cust-1"]["token"] == "website"
    assert chats["http:cust-1"]["turns"] == 2


@pytest.mark.parametrize(
    ("http", "complaint"),
    [
        ({"namespaces": {"stranger": "website"}}, "namespaces names tokens that are not"),
        ({"bot_admin_tokens": ["nobody"]}, "bot_admin_tokens names tokens that are not"),
        ({"namespaces": {"partner": "a:b"}}, "namespaces use"),
        ({"chat_tokens": {"http": PARTNER_TOKEN}}, "'http' is reserved"),
    ],
)
def test_identity_settings_name_only_configured_tokens(
    http: dict[str, Any], complaint: str
) -> None:
    from adapters.http.settings import http_settings

    section = {"enabled": True, "chat_tokens": {"website": CHAT_TOKEN, "partner": PARTNER_TOKEN}}
    settings = settings_from_mapping({"http": {**section, **http}})
    with pytest.raises(ConfigError, match=re.escape(complaint)):
        http_settings(settings)


# -- item 2: an identity the client names is never an admin ----------------------------------


def test_an_http_entry_in_admins_is_refused_by_the_config() -> None:
    with pytest.raises(ConfigError) as refused:
        settings_from_mapping({"admins": ["telegram:42", "http:rtadmin"]})
    assert "admins: " in str(refused.value) and "cannot be verified" in str(refused.value)
    assert "http.bot_admin_tokens" in str(refused.value)


async def test_a_user_named_like_an_admin_gets_no_admin_tool_and_a_token_admin_does(
    make_app: AppFactory, fake_llm: FakeLLM, storage: dict[str, str]
) -> None:
    sections = {**tokens(bot_admin_tokens=["opsbot"]), "plugins": [TOOLBOX]}
    async with sdks(make_app, storage=storage, **sections) as (_served, sdk):
        # website's client claims the names an admin might have: still a member
        for claimed in ("rtadmin", "opsbot", "ops"):
            fake_llm.script(tool_calls(("wipe_everything", {})), reply("I can't."))
            await sdk["website"].chat.completions.create(
                model="parlour", messages=said("wipe it all"), user=claimed
            )
            assert "wipe_everything" not in offered(fake_llm, -2)  # not even offered
            assert tool_results(fake_llm) == [
                "Error: wipe_everything is only available to admins of this chat. Tell the user so."
            ]
        # the token the config makes a bot admin: every caller of it
        fake_llm.script(tool_calls(("wipe_everything", {})), reply("Done."))
        await sdk["opsbot"].chat.completions.create(
            model="parlour", messages=said("wipe it all"), user="anyone"
        )
        assert "wipe_everything" in offered(fake_llm, -2)
        assert tool_results(fake_llm) == ["wiped"]


async def test_a_claimed_name_is_limited_and_refused_like_anyone(
    make_app: AppFactory, fake_llm: FakeLLM, storage: dict[str, str]
) -> None:
    sections = {
        **tokens(bot_admin_tokens=["opsbot"]),
        "access": {"private_bot": True},
        "limits": {"daily_tokens_per_user": 1},
    }
    async with sdks(make_app, storage=storage, **sections) as (_served, sdk):
        with pytest.raises(openai.PermissionDeniedError):
            await sdk["website"].chat.completions.create(
                model="parlour", messages=said("hi"), user="opsbot"
            )
        for _ in range(2):  # a bot admin: neither the access list nor the daily limit
            answer = await sdk["opsbot"].chat.completions.create(
                model="parlour", messages=said("hi"), user="anyone"
            )
            assert answer.choices[0].message.content == "echo: hi"


# -- item 7: audit rows say who, and mark tokens ------------------------------------------------


async def test_a_person_named_like_a_token_is_shown_as_a_person_in_the_audit(
    make_app: AppFactory, fake_llm: FakeLLM, storage: dict[str, str]
) -> None:
    fake_llm.script(reply("Sure."), reply("Sure."))
    async with serve_http(make_app, storage=storage) as served:
        impostor = group(chat="-7", user="555", name="http:ops", is_admin=True)
        await served.app.service.chat(impostor, "hello")
        await served.app.service.clear(impostor)
        await served.app.service.chat(impostor, "hello again")
        async with aiohttp.ClientSession(served.url) as http:
            async with http.post("/api/chats/telegram:-7/clear", headers=ADMIN) as r:
                assert r.status == 200
            async with http.get("/api/chats/telegram:-7/audit", headers=ADMIN) as r:
                entries = (await r.json())["entries"]
        async with await logged_in(served) as http, http.get("/chats/telegram:-7") as r:
            page = await r.text()
    kinds = [(e["actor_kind"], e["actor_platform"], e["actor_id"]) for e in entries]
    assert sorted(kinds) == [("token", "http", "http:ops"), ("user", "telegram", "555")]
    who = re.findall(r'<td class="who">(.*?)</td>', page)
    assert '<span class="badge token">token</span> <code>ops</code>' in who
    assert 'http:ops <span class="muted small">telegram <code>555</code></span>' in who


def test_the_docs_example_of_namespaces_and_admins_is_a_valid_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import yaml

    from adapters.http.settings import http_settings
    from bot.config import interpolate

    page = (Path(__file__).parents[3] / "docs" / "http.md").read_text(encoding="utf-8")
    section = page.split("## Tokens, conversations and admins", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    for name in ("PARLOUR_WEBSITE_TOKEN", "PARLOUR_WEBSITE_V2_TOKEN", "PARLOUR_SUPPORT_TOKEN"):
        monkeypatch.setenv(name, f"{name.lower()}-0123456789abcdef")
    raw = interpolate(yaml.safe_load(example))
    raw["http"]["enabled"] = True
    found = http_settings(settings_from_mapping(raw))
    assert found.namespace("website-v2") == "website"
    assert found.bot_admin_tokens == ("support",)
    assert found.legacy_namespace == "website"
